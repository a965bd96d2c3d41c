"""The seed documentation's JSON examples parse into the model and re-emit as the same JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lakecdc.events.schema import ConnectSchema
from lakecdc.events.source import source_schema
from lakecdc.events.transaction import TRANSACTION_VALUE_SCHEMA, TransactionTracker
from lakecdc.events.values import connect_to_json, json_to_connect

SEEDS = Path(__file__).resolve().parents[2] / "data" / "events" / "seeds"


def _examples(kind: str) -> list[Path]:
    paths = sorted(SEEDS.glob("*.json"))
    if kind == "record":
        return [p for p in paths if "schema" in json.loads(p.read_text())]
    return [p for p in paths if "status" in json.loads(p.read_text())]


def test_seed_examples_are_present() -> None:
    assert len(_examples("record")) == 7 and len(_examples("transaction")) == 4


@pytest.mark.parametrize("path", _examples("record"), ids=lambda p: p.stem)
def test_seed_record_schema_and_payload_round_trip(path: Path) -> None:
    example = json.loads(path.read_text())
    schema = ConnectSchema.from_json(example["schema"])
    assert schema.to_json() == example["schema"]
    assert ConnectSchema.from_json(schema.to_json()) == schema
    if path.stem.startswith("19-"):
        # Seed inconsistency (inventory section 5): event_serial_no is int64 in the schema but
        # printed as the string "1" in the payload. The decoder names the offending path.
        with pytest.raises(ValueError, match=r"\$\.source\.event_serial_no: expected int64"):
            json_to_connect(schema, example["payload"])
        fixed: dict[str, Any] = json.loads(json.dumps(example["payload"]))
        fixed["source"]["event_serial_no"] = int(fixed["source"]["event_serial_no"])
        assert connect_to_json(schema, json_to_connect(schema, fixed)) == fixed
        return
    assert connect_to_json(schema, json_to_connect(schema, example["payload"])) == example["payload"]


def test_jsonconverter_key_order_matches_where_seed_kept_it() -> None:
    # All but one example print keys in JsonConverter order; 08 (MySQL key) was hand-reordered.
    for path in _examples("record"):
        example = json.loads(path.read_text())
        same_order = json.dumps(ConnectSchema.from_json(example["schema"]).to_json()) == json.dumps(example["schema"])
        assert same_order == (not path.stem.startswith("08-")), path.stem


# Differences between the seeds' Debezium 1.x source blocks and Debezium 3.x (ours).
KNOWN_CHANGES = {
    ("mysql", "snapshot"), ("sqlserver", "snapshot"), ("oracle", "snapshot"),  # boolean -> Enum
    ("oracle", "version"), ("oracle", "ts_ms"),  # optional -> required (common fields)
    ("oracle", "ssn"),  # int32 -> int64
}


@pytest.mark.parametrize(("prefix", "connector"), [("09-", "mysql"), ("14-", "oracle"), ("19-", "sqlserver")])
def test_seed_source_fields_exist_in_debezium3_source_schema(prefix: str, connector: str) -> None:
    path = next(p for p in _examples("record") if p.stem.startswith(prefix))
    seed_source = ConnectSchema.from_json(json.loads(path.read_text())["schema"]).field("source").schema
    ours = source_schema(connector)
    assert seed_source.name == ours.name
    for field in seed_source.fields:
        mine = ours.field(field.name).schema  # KeyError names a missing field
        if (connector, field.name) not in KNOWN_CHANGES:
            assert (mine.type, mine.optional) == (field.schema.type, field.schema.optional), field.name


@pytest.mark.parametrize("path", _examples("transaction"), ids=lambda p: p.stem)
def test_seed_transaction_events_reproduced_by_tracker(path: Path) -> None:
    example = json.loads(path.read_text())
    has_ts = "ts_ms" in example  # the MySQL and SQL Server seeds predate ts_ms
    tracker = TransactionTracker()
    if example["status"] == "BEGIN":
        produced = tracker.begin(example["id"], example.get("ts_ms", 0))
    else:
        tracker.begin(example["id"], 0)
        for collection in example["data_collections"]:
            for _ in range(collection["event_count"]):
                tracker.event(collection["data_collection"])
        produced = tracker.end(example["id"], example.get("ts_ms", 0))
    if not has_ts:
        produced.pop("ts_ms")
    assert produced == example
    if has_ts:
        value = json_to_connect(TRANSACTION_VALUE_SCHEMA, example)
        assert connect_to_json(TRANSACTION_VALUE_SCHEMA, value) == example
