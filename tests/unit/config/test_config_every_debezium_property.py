"""Every property Debezium 3.6.3 defines for the four connectors, and Debezium's MariaDB connector for
``connector.class=io.debezium.connector.mariadb.MariaDbConnector``, is accepted, and either applied or
listed (with its reason) in ``lakecdc.config.no_effect``; Debezium's deprecated aliases act as their property.

The definitions come from Debezium's own classes (``tests/data/debezium/connector_fields.json``,
dumped by ``tests/conformance/debezium_fields.py`` from ``<Connector>ConnectorConfig.ALL_FIELDS``,
the schema history stores and the signal channels; a conformance test keeps the dump current).
"Applied" is checked from the source: a property lakecdc applies is read by the code that captures
from that connector (its Debezium name or its model attribute appears there), and a property listed
as without effect is read nowhere in it.
"""

from __future__ import annotations

import json
import logging
import re
from functools import cache
from pathlib import Path

import pytest

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.config import CommonConnectorConfig
from lakecdc.config import no_effect as registry
from lakecdc.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
FIELDS = json.loads((ROOT / "tests" / "data" / "debezium" / "connector_fields.json").read_text())
MODELS: dict[str, tuple[type[CommonConnectorConfig], dict[str, str]]] = {
    "postgres": (PostgresConnectorConfig, {}),
    "mysql": (MySqlConnectorConfig, {}),
    "sqlserver": (SqlServerConnectorConfig, {"database.names": "shop"}),
    "oracle": (OracleConnectorConfig, {"database.hostname": "db", "database.dbname": "ORCLCDB"}),
    # Debezium's MariaDB connector (its own class and definitions): lakecdc's MySQL model and code
    "mariadb": (MySqlConnectorConfig, {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector"}),
}
CONNECTORS = tuple(MODELS)
#: the connector whose code, no-effect list and exceptions below a model stands for
KIND = {"mariadb": "mysql"}
KINDS = tuple(c for c in CONNECTORS if c not in KIND)


def kind(connector: str) -> str:
    return KIND.get(connector, connector)


# Applied although the source never reads the name: the only value lakecdc accepts is what it does.
APPLIED_BY_CONSTRUCTION = {
    "postgres": {"plugin.name"},  # Literal["pgoutput"]: decoderbufs is refused, pgoutput is always used
    "oracle": {"database.connection.adapter"},  # Literal["logminer"]: xstream/olr are refused
}
# What a file at Debezium's defaults needs besides: pgoutput (lakecdc refuses decoderbufs, which needs a
# server-side plug-in, with an error naming pgoutput) and the topic Debezium's default Kafka schema
# history needs as much as lakecdc's.
_KAFKA_HISTORY = {"schema.history.internal.kafka.topic": "history",
                  "schema.history.internal.kafka.bootstrap.servers": "localhost:9092"}
COMPLETIONS = {"postgres": {"plugin.name": "pgoutput"}, "mysql": _KAFKA_HISTORY, "oracle": _KAFKA_HISTORY}
# Shared modules a connector never calls (their reads do not apply the property to it).
# (the Kafka sink makes a schema history topic single-partition; SQL Server keeps no history)
NOT_USED_BY = {"sqlserver": {"lakecdc/transport/history_store.py", "lakecdc/transport/registry.py"},
               "postgres": {"lakecdc/transport/history_store.py"}}
#: (connector, property) -> files that name the property for other connectors only: the schema
#: history client's settings are built in the shared Kafka client module, which SQL Server (no
#: schema history) uses for its other clients
NOT_USED_FOR = {("sqlserver", "schema.history.internal.kafka.bootstrap.servers"): {"lakecdc/transport/kafka_config.py"}}


def debezium_names(connector: str) -> set[str]:
    names = set(FIELDS[connector]) | set(FIELDS["channels"]) | set(FIELDS["topic_naming"])
    if connector != "postgres":  # Debezium's PostgreSQL connector keeps no schema history
        names |= set(FIELDS["schema_history"])
    return names


def concrete(name: str) -> str:
    """A real property name for Debezium's pattern-named families (column.mask.with.(d+).chars)."""
    return name.replace("(d+)", "12").replace("([^.]+)", "SHA-256").replace("(.+)", "salt1")


def sample(connector: str, name: str) -> str:
    info = {**FIELDS["channels"], **FIELDS["schema_history"], **FIELDS[connector]}.get(name, {})
    if name.startswith("column."):
        return "public.t.c"
    if info.get("default") not in (None, ""):
        return str(info["default"])
    return {"BOOLEAN": "false", "INT": "1", "LONG": "1", "SHORT": "1", "DOUBLE": "1"}.get(info.get("type", ""), "x")


def load(connector: str, properties: dict[str, str]) -> CommonConnectorConfig:
    model, base = MODELS[connector]
    return model.from_properties({"topic.prefix": "p", **base, **properties})


@pytest.mark.parametrize("connector", CONNECTORS)
def test_every_debezium_property_is_accepted(connector: str) -> None:
    refused = []
    for name in sorted(debezium_names(connector)):
        try:
            load(connector, {concrete(name): sample(connector, name)})
        except ConfigError as exc:
            if "unknown property" in str(exc):
                refused.append(name)
    assert refused == []


@pytest.mark.parametrize("connector", CONNECTORS)
def test_a_file_with_every_property_at_debeziums_default_loads(connector: str) -> None:
    """One properties file naming every property Debezium gives a default loads without error."""
    properties = {
        name: sample(connector, name) for name in debezium_names(connector)
        if "(" not in name and FIELDS[connector].get(name, {}).get("default") not in (None, "")
    }
    properties.pop("topic.prefix", None)
    properties.update(COMPLETIONS.get(kind(connector), {}))
    assert len(properties) > 40
    config = load(connector, properties)
    listed = registry.no_effect(kind(connector))
    current = {MODELS[connector][0]._current_name(n) for n in properties}
    assert set(config.not_applied_properties()) == {n for n in current if n in listed}


@pytest.mark.parametrize("connector", KINDS)
def test_no_effect_list_names_only_properties_debezium_defines(connector: str) -> None:
    assert sorted(set(registry.no_effect(kind(connector))) - debezium_names(connector)) == []


def test_every_reason_is_a_sentence_for_the_user() -> None:
    for connector in KINDS:
        for name, reason in registry.no_effect(connector).items():
            assert len(reason) > 20 and not reason.endswith("."), (name, reason)


@pytest.mark.parametrize("connector", CONNECTORS)
def test_debeziums_deprecated_aliases_act_as_their_property(connector: str) -> None:
    """A file that still uses a name Debezium keeps as a deprecated alias (``Field.withDeprecatedAliases``)
    loads as if it used the current name: the same settings, reported under the current name."""
    groups = [FIELDS[connector], *([FIELDS["schema_history"]] if connector != "postgres" else [])]
    aliased = [(name, alias) for group in groups for name, info in group.items() for alias in info["aliases"]]
    assert aliased or connector == "mariadb"  # its 3.5 release defines no alias
    for name, alias in aliased:
        value = {"BOOLEAN": "true", "INT": "2", "LONG": "2"}.get(FIELDS[connector][name]["type"], "host2")
        by_alias, by_name = load(connector, {alias: value}), load(connector, {name: value})
        assert by_alias.model_dump() == by_name.model_dump(), (alias, name)
        assert by_alias.not_applied_properties() == by_name.not_applied_properties(), (alias, name)


# -- applied or not: read from the source ------------------------------------------------------

@cache
def _sources() -> dict[str, list[str]]:
    found = {}
    for path in sorted((ROOT / "lakecdc").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        # definitions, not uses: the model field declarations and the no-effect list itself
        lines = [line for line in path.read_text().splitlines() if not ("Field(" in line and "alias=" in line)]
        found[rel] = lines
    return found


def _scope(connector: str, *, with_config_package: bool) -> dict[str, list[str]]:
    others = [f"lakecdc/capture/{c}/" for c in KINDS if c != kind(connector)]
    skip = {"lakecdc/config/no_effect.py", "lakecdc/config/passthrough.py", "lakecdc/config/aliases.py",
            *NOT_USED_BY.get(kind(connector), ())}
    return {rel: lines for rel, lines in _sources().items()
            if rel not in skip and not rel.startswith(tuple(others))
            and (with_config_package or not rel.startswith("lakecdc/config/"))}


def _readers(connector: str, name: str, scope: dict[str, list[str]]) -> list[str]:
    model = MODELS[connector][0]
    field = {(info.alias or attr): attr for attr, info in model.model_fields.items()}.get(name)
    patterns = [re.compile(r"[\"']" + re.escape(name) + r"[\"']")]
    if field:  # config.<field>, or getattr(config, "<field>")
        patterns += [re.compile(r"\." + field + r"\b"), re.compile(r"[\"']" + field + r"[\"']")]
    return [rel for rel, lines in scope.items() if any(p.search(line) for line in lines for p in patterns)]


@pytest.mark.parametrize("connector", CONNECTORS)
def test_properties_listed_without_effect_are_not_read(connector: str) -> None:
    """A property lakecdc starts applying must leave the no-effect list (or users get a false warning)."""
    scope = _scope(connector, with_config_package=False)
    read = {name: [f for f in _readers(connector, name, scope)
                   if f not in NOT_USED_FOR.get((kind(connector), name), ())]
            for name in registry.no_effect(kind(connector))}
    assert {name: where for name, where in read.items() if where} == {}


@pytest.mark.parametrize("connector", CONNECTORS)
def test_properties_not_listed_are_read(connector: str) -> None:
    """A property lakecdc does not list as without effect is applied: some code reads it."""
    scope = _scope(connector, with_config_package=True)
    listed = registry.no_effect(kind(connector))
    unread = [name for name in sorted(debezium_names(connector))
              if "(" not in name and MODELS[connector][0]._current_name(name) not in listed
              and name not in APPLIED_BY_CONSTRUCTION.get(kind(connector), ())
              and not _readers(connector, name, scope)]
    assert unread == []


# -- the warning at start ----------------------------------------------------------------------

def test_one_warning_per_property_without_effect_naming_it_and_why(caplog: pytest.LogCaptureFixture) -> None:
    config = load("postgres", {"snapshot.delay.ms": "5000", "slot.stream.params": "a=b", "slot.name": "s",
                               "transforms": "unwrap",
                               "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
                               "transforms.unwrap.drop.tombstones": "false"})
    with caplog.at_level(logging.WARNING):
        config.log_not_applied(logging.getLogger("lakecdc.test"))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    # the transform is applied; the Debezium 2 property Debezium 3.6.3 no longer reads is reported
    assert sorted(line.split("'")[1] for line in lines) == [
        "slot.stream.params", "snapshot.delay.ms", "transforms.unwrap.drop.tombstones"]
    assert any("slot.stream.params" in line and registry.POSTGRES["slot.stream.params"] in line for line in lines)
    assert not any("slot.name" in line for line in lines)


def test_a_legacy_name_is_reported_under_its_current_name() -> None:
    config = load("mysql", {"database.history.kafka.recovery.attempts": "3"})
    assert config.ignored_properties() == ["schema.history.internal.kafka.recovery.attempts"]


@pytest.mark.parametrize(("connector", "typo", "meant"), [
    ("postgres", "slot.failovr", "slot.failover"),
    ("postgres", "publish.via.partition.rot", "publish.via.partition.root"),
    ("mysql", "gtid.source.filter.dml.event", "gtid.source.filter.dml.events"),
    ("oracle", "log.mining.buffer.typ", "log.mining.buffer.type"),
    ("sqlserver", "data.query.mod", "data.query.mode"),
])
def test_an_unknown_property_still_names_the_closest_valid_one(connector: str, typo: str, meant: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown property '{re.escape(typo)}' — did you mean '{re.escape(meant)}'"):
        load(connector, {typo: "true"})


def test_readme_lists_the_properties_without_effect() -> None:
    readme = (ROOT / "README.md").read_text()
    begin, end = "<!-- no-effect-properties:begin -->\n", "<!-- no-effect-properties:end -->"
    assert begin in readme and end in readme, "README's configuration section lacks the generated table"
    table = readme.split(begin, 1)[1].split(end, 1)[0]
    assert table == registry.render_markdown(), "regenerate: python -m lakecdc.config.no_effect"


def test_common_model_accepts_the_shared_list_only() -> None:
    common = CommonConnectorConfig.from_properties({"topic.prefix": "p", "snapshot.delay.ms": "1"})
    assert common.ignored_properties() == ["snapshot.delay.ms"]
    with pytest.raises(ConfigError, match="unknown property 'slot.stream.params'"):
        CommonConnectorConfig.from_properties({"topic.prefix": "p", "slot.stream.params": "x"})
