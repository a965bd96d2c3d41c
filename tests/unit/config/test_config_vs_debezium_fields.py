"""CommonConnectorConfig against Debezium 3.6.3's own field definitions.

``tests/data/debezium/connector_fields.json`` is dumped from the real connector classes by
``tests/conformance/debezium_fields.py`` (a conformance test keeps it current). Debezium silently
ignores properties it does not define; lakecdc rejects unknown names, so it must accept every
name Debezium defines, and where it models a property, use Debezium's default and choices.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from lakecdc.config import CommonConnectorConfig
from lakecdc.config.base import literal_choices

FIELDS_FILE = Path(__file__).resolve().parents[2] / "data" / "debezium" / "connector_fields.json"
CONNECTORS = ("postgres", "mysql", "sqlserver", "oracle")
# Defaults that legitimately differ per connector: the common model leaves them to subclasses.
# (schema.history.internal: Kafka for the connectors that keep a history; PostgreSQL has none.)
CONNECTOR_SPECIFIC_DEFAULTS = {"database.port", "snapshot.fetch.size", "snapshot.mode", "query.fetch.size",
                               "schema.history.internal"}


@pytest.fixture(scope="module")
def fields() -> dict[str, dict[str, Any]]:
    return json.loads(FIELDS_FILE.read_text())  # type: ignore[no-any-return]


def concrete(name: str) -> str:
    """A real property name for Debezium's pattern-named families (column.mask.with.(d+).chars)."""
    return name.replace("(d+)", "12").replace("([^.]+)", "SHA-256").replace("(.+)", "salt1")


def accepted(name: str) -> bool:
    props = {"topic.prefix": "p", name: _sample_value(name)}
    try:
        CommonConnectorConfig.from_properties(props)
    except Exception as exc:  # noqa: BLE001 - the message tells which kind of refusal
        return "unknown property" not in str(exc)
    return True


def _sample_value(name: str) -> str:
    if name.startswith("column.mask.hash") or name.startswith("column.mask.with") or name.startswith("column.truncate"):
        return "public.t.c"
    return "1"


def shared_names(fields: dict[str, dict[str, Any]]) -> list[str]:
    names = set.intersection(*(set(fields[c]) for c in CONNECTORS))
    return sorted(names)


def test_every_property_all_debezium_connectors_share_is_accepted(fields: dict[str, dict[str, Any]]) -> None:
    refused = [name for name in shared_names(fields) if not accepted(concrete(name))]
    assert refused == []


def test_topic_naming_properties_are_accepted(fields: dict[str, dict[str, Any]]) -> None:
    assert [n for n in fields["topic_naming"] if not accepted(n)] == []


def _debezium_default(fields: dict[str, dict[str, Any]], name: str) -> tuple[bool, Any]:
    for group in (*CONNECTORS, "topic_naming"):
        if name in fields[group]:
            return True, fields[group][name]["default"]
    return False, None


def _ours(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def test_modelled_defaults_equal_debeziums(fields: dict[str, dict[str, Any]]) -> None:
    mismatches = []
    for field_name, info in CommonConnectorConfig.model_fields.items():
        alias = info.alias or field_name
        known, default = _debezium_default(fields, alias)
        if not known or alias in CONNECTOR_SPECIFIC_DEFAULTS or info.is_required():
            continue
        ours = _ours(info.get_default(call_default_factory=True))
        if ours != default:
            mismatches.append((alias, ours, default))
    assert mismatches == []


def test_choices_equal_the_union_of_debeziums_allowed_values(fields: dict[str, dict[str, Any]]) -> None:
    mismatches = []
    for field_name, info in CommonConnectorConfig.model_fields.items():
        choices = literal_choices(info.annotation)
        alias = info.alias or field_name
        if not choices:
            continue
        debezium: set[str] = set()
        for connector in CONNECTORS:
            debezium.update(fields[connector].get(alias, {}).get("allowed", []))
        if debezium and set(choices) != debezium:
            mismatches.append((alias, sorted(choices), sorted(debezium)))
    assert mismatches == []


def test_fields_file_is_a_real_dump(fields: dict[str, dict[str, Any]]) -> None:
    assert set(fields) == {*CONNECTORS, "mariadb", "topic_naming", "schema_history", "channels"}
    # Debezium's MariaDB connector, a release of its own: MariaDB Connector/J's TLS modes
    assert fields["mariadb"]["database.ssl.mode"]["allowed"] == ["disable", "trust", "verify-ca", "verify-full"]
    assert "schema.history.internal.kafka.recovery.attempts" in fields["schema_history"]
    assert "signal.kafka.topic" in fields["channels"]
    assert fields["postgres"]["slot.name"]["default"] == "debezium"
    assert fields["postgres"]["database.password"]["type"] == "PASSWORD"
    assert all(re.fullmatch(r"[a-zA-Z0-9._\-()\[\]^+*$|\\]+", n) for c in CONNECTORS for n in fields[c])
    assert typing.get_origin(CommonConnectorConfig.model_fields["decimal_handling_mode"].annotation) is typing.Literal
