"""The event model re-creates real Debezium 3.6.3 output (PostgreSQL workload) byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from events_workload import line_ids, workload_lines, workload_records

from lakecdc.events.envelope import TRANSACTION_BLOCK, envelope_payload, envelope_schema
from lakecdc.events.positions import PostgresPosition, position_from_source
from lakecdc.events.schema import ConnectSchema
from lakecdc.events.serde import RecordEncoder, decode
from lakecdc.events.source import POSTGRES_SOURCE, PostgresSourceBuilder
from lakecdc.events.topics import TableId, TopicNamer
from lakecdc.events.transaction import (
    TRANSACTION_KEY_SCHEMA,
    TRANSACTION_VALUE_SCHEMA,
    TransactionTracker,
)
from lakecdc.events.values import connect_to_json, json_to_connect

LINES = workload_lines()


def _rebuild(part: dict[str, Any] | None) -> dict[str, Any] | None:
    """Parse one converter output into the model and render it back to a JSON tree."""
    if part is None:
        return None
    schema = ConnectSchema.from_json(part["schema"])
    value = json_to_connect(schema, part["payload"])
    return {"schema": schema.to_json(), "payload": connect_to_json(schema, value)}


@pytest.mark.parametrize("line", [raw for _, _, raw in LINES], ids=line_ids())
def test_record_reserialized_equals_original_line(line: str) -> None:
    record = json.loads(line)
    rebuilt = dict(record, key=_rebuild(record["key"]), value=_rebuild(record["value"]))
    assert json.dumps(rebuilt) == line


def _has_floats(node: Any) -> bool:
    if isinstance(node, float):
        return True
    if isinstance(node, dict):
        return any(_has_floats(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_floats(v) for v in node)
    return False


@pytest.mark.parametrize("line", [raw for _, _, raw in LINES], ids=line_ids())
def test_wire_bytes_are_compact_jackson_json(line: str) -> None:
    record = json.loads(line)
    for part in ("key", "value"):
        original = record[part]
        if original is None:
            continue
        schema = ConnectSchema.from_json(original["schema"])
        encoded = RecordEncoder(schema).encode(json_to_connect(schema, original["payload"]))
        assert encoded is not None
        assert json.loads(encoded) == original
        schema_json, payload = decode(encoded)
        assert schema_json == original["schema"] and payload == original["payload"]
        if not _has_floats(original["payload"]):
            # Without doubles, Jackson's compact text is Python's compact text with UTF-8 kept.
            expected = json.dumps(original, separators=(",", ":"), ensure_ascii=False).encode()
            assert encoded == expected
        schemaless = RecordEncoder(schema, schemas_enable=False).encode(
            json_to_connect(schema, original["payload"])
        )
        assert schemaless is not None and json.loads(schemaless) == original["payload"]
        assert decode(schemaless, schemas_enable=False) == (None, original["payload"])


def test_doubles_and_floats_use_java_text_on_the_wire() -> None:
    record = next(r for r in workload_records() if r["topic"] == "dbz.public.audit_full"
                  and r["value"] and r["value"]["payload"]["op"] == "c")
    schema = ConnectSchema.from_json(record["value"]["schema"])
    encoded = RecordEncoder(schema).encode(json_to_connect(schema, record["value"]["payload"]))
    assert encoded is not None
    assert b'"f":-1.0E300,"r":-0.5,' in encoded
    assert b'"i8":-9223372036854775808' in encoded
    assert b'"b":""' in encoded


def _data_records() -> list[dict[str, Any]]:
    return [r for r in workload_records() if r["value"] and "op" in r["value"]["payload"]]


def test_envelope_and_source_schemas_match_debezium() -> None:
    namer = TopicNamer("dbz", "postgresql")
    for record in _data_records():
        value_schema = ConnectSchema.from_json(record["value"]["schema"])
        row = value_schema.field("before").schema
        source = record["value"]["payload"]["source"]
        table = TableId(source["db"], source["schema"], source["table"])
        assert row.name == namer.value_schema_name(table)
        built = envelope_schema(row, POSTGRES_SOURCE, namer.envelope_schema_name(table))
        assert built.to_json() == record["value"]["schema"]
        assert record["topic"] == namer.data_topic(table)
        if record["key"] is not None:
            assert record["key"]["schema"]["name"] == namer.key_schema_name(table)
    assert value_schema.field("transaction").schema == TRANSACTION_BLOCK


def test_source_builder_reproduces_debezium_source_blocks() -> None:
    builder = PostgresSourceBuilder("dbz", "dbzref", version="3.6.3.Final")
    for record in _data_records():
        source = record["value"]["payload"]["source"]
        pos = position_from_source("postgresql", source)
        assert isinstance(pos, PostgresPosition)
        built = builder.build(
            schema=source["schema"],
            table=source["table"],
            ts_us=source["ts_us"],
            lsn=pos.lsn,
            last_commit_lsn=pos.commit_lsn,
            tx_id=source["txId"],
            snapshot=source["snapshot"],
        )
        assert json.dumps(built) == json.dumps(source)
        assert pos.source_sequence() == source["sequence"]


def test_transaction_schemas_and_tracker_reproduce_begin_end_records() -> None:
    for name, _, _ in {(n, 0, "") for n, _, _ in LINES}:
        records = [json.loads(raw) for n, _, raw in LINES if n == name]
        tracker = TransactionTracker()
        checked = 0
        for record in records:
            value = record["value"]
            if record["topic"] == "dbz.transaction":
                assert record["key"]["schema"] == TRANSACTION_KEY_SCHEMA.to_json()
                assert value["schema"] == TRANSACTION_VALUE_SCHEMA.to_json()
                payload = value["payload"]
                assert record["key"]["payload"] == {"id": payload["id"]}
                if payload["status"] == "BEGIN":
                    assert tracker.begin(payload["id"], payload["ts_ms"]) == payload
                else:
                    assert tracker.end(payload["id"], payload["ts_ms"]) == payload
                checked += 1
            elif value is not None and value["payload"].get("transaction") is not None:
                payload = value["payload"]
                source = payload["source"]
                block = tracker.event(f"{source['schema']}.{source['table']}", payload["transaction"]["id"])
                assert block == payload["transaction"]
        assert checked >= 20 and not tracker.in_transaction


def test_positions_follow_debezium_emission_order() -> None:
    for name in {n for n, _, _ in LINES}:
        seqs = [
            position_from_source("postgresql", r["value"]["payload"]["source"]).seq()
            for r in (json.loads(raw) for n, _, raw in LINES if n == name)
            if r["value"] and "source" in r["value"]["payload"]
        ]
        assert seqs == sorted(seqs)
        snapshot = [s for s in seqs if s[2] == 0]
        streaming = [s for s in seqs if s[2] == 1]
        assert len(snapshot) == 4 and streaming and max(snapshot) < min(streaming)


def test_model_built_events_equal_debezium_events() -> None:
    """Build each data event the way capture does (builders, tracker ids, envelope) and compare bytes."""
    namer = TopicNamer("dbz", "postgresql")
    builder = PostgresSourceBuilder("dbz", "dbzref", version="3.6.3.Final")
    checked = 0
    for record in _data_records():
        original = record["value"]
        payload = original["payload"]
        source = payload["source"]
        table = TableId(source["db"], source["schema"], source["table"])
        row_schema = ConnectSchema.from_json(original["schema"]).field("before").schema
        value_schema = envelope_schema(row_schema, POSTGRES_SOURCE, namer.envelope_schema_name(table))
        position = position_from_source("postgresql", source)
        assert isinstance(position, PostgresPosition)
        built_source = builder.build(
            schema=table.schema or "", table=table.table, ts_us=source["ts_us"], lsn=position.lsn,
            last_commit_lsn=position.commit_lsn, tx_id=source["txId"], snapshot=source["snapshot"],
        )
        before = None if payload["before"] is None else json_to_connect(row_schema, payload["before"])
        after = None if payload["after"] is None else json_to_connect(row_schema, payload["after"])
        value = envelope_payload(payload["op"], before, after, built_source, payload["ts_ns"], payload["transaction"])
        encoded = RecordEncoder(value_schema).encode(value)
        assert encoded is not None
        assert json.loads(encoded) == original
        if not _has_floats(original["payload"]):
            assert encoded == json.dumps(original, separators=(",", ":"), ensure_ascii=False).encode()
        checked += 1
    assert checked == 39  # 20 + 19 data events in the two workload runs
