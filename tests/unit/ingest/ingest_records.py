"""Helpers for ingest tests: Kafka-source-shaped Arrow tables from Debezium records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pyarrow as pa
from shared_paths import SHARED_ROOT

from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA

GOLDEN = SHARED_ROOT / "conformance/postgres/workload.jsonl"


def golden_records() -> list[dict[str, Any]]:
    """The real Debezium 3.6.3 output for pg_setup.sql + pg_workload.sql (46 records)."""
    return [orjson.loads(line) for line in GOLDEN.read_bytes().splitlines() if line.strip()]


def encode(doc: Any) -> bytes | None:
    """JsonConverter-style compact JSON (key order kept), None for a Kafka null."""
    return None if doc is None else orjson.dumps(doc)


def kafka_table(rows: Iterable[tuple[str, bytes | None, bytes | None]], partition: int = 0,
                first_offset: int = 0) -> pa.Table:
    """``(topic, key, value)`` triples -> the Kafka source's columns, offsets counted per topic."""
    keys, values, topics, offsets = [], [], [], []
    next_offset: dict[str, int] = {}
    for topic, key, value in rows:
        offset = next_offset.get(topic, first_offset)
        next_offset[topic] = offset + 1
        keys.append(key)
        values.append(value)
        topics.append(topic)
        offsets.append(offset)
    n = len(topics)
    return pa.Table.from_arrays([
        pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array(topics, pa.string()),
        pa.array([partition] * n, pa.int32()), pa.array(offsets, pa.int64()),
        pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        pa.array([None] * n, KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)


def golden_table() -> pa.Table:
    return kafka_table((r["topic"], encode(r["key"]), encode(r["value"])) for r in golden_records())
