"""Decoding on the executors gives exactly what decoding in one process gives, on the same records.

The records: real Debezium output (inserts, updates, deletes, a truncate, transaction markers,
tombstones), a malformed record, and a create carrying Debezium's ``__debezium.oldkey`` header (a
primary-key change), fetched by the Python reader on one side and by the Spark executors on the
other, in batches small enough that transactions are split across them.
"""

from __future__ import annotations

import copy
import threading
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest
from ingest_broker import publish, unique_prefix
from ingest_tables import publish_golden_with_a_malformed_record

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.executor_decode import SchemaRegistry, decode_on_executors, drop_committed
from lakecdc.ingest.reader import PythonKafkaReader
from lakecdc.ingest.spark_reader import SparkRangeReader
from lakecdc.lake.segments import union_segments

pytestmark = [pytest.mark.integration, pytest.mark.spark4]

AT = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def config(broker, prefix: str, tmp_path: Path) -> IngestConfig:
    return IngestConfig.from_properties({"kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
                                         "batch.max.wait.ms": "300", "batch.max.records": "9",
                                         "batch.backlog.max.records": "9",
                                         "progress.path": str(tmp_path)})


def summary(parts) -> dict:
    """Everything a decoded batch says, in a form that compares equal across paths."""
    segments, markers, dead, tombstones = [], [], [], 0
    for decoded in parts:
        segments += decoded.segments
        markers += decoded.tx_markers
        dead += [(d.topic, d.partition, d.offset, d.reason) for d in decoded.dead_letters]
        tombstones += decoded.tombstones
    tables = {}
    for topic in sorted({s.topic for s in segments}):
        columns, rows = union_segments([s for s in segments if s.topic == topic])
        ordered = sorted(rows.drop_columns(["_ingest_ts"]).to_pylist(), key=lambda r: (r["_partition"], r["_offset"]))
        tables[topic] = ([(c.name, str(c.data_type)) for c in columns], ordered)
    return {"tables": tables, "markers": sorted(markers, key=lambda m: (m.topic, m.offset)),
            "dead": sorted(dead), "tombstones": tombstones}


def test_executor_decoding_equals_one_process(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("xd")
    records = publish_golden_with_a_malformed_record(broker, prefix)
    moved = copy.deepcopy(next(r for r in records if r["value"] and r["value"]["payload"].get("op") == "c"))
    publish(broker.bootstrap_servers, [(moved["topic"], orjson.dumps(moved["key"]), orjson.dumps(moved["value"]))],
            headers=[("__debezium.oldkey", orjson.dumps(moved["key"]))])
    cfg = config(broker, prefix, tmp_path)
    committed = {(f"{prefix}.public.customers", 0): 1}  # a table already holds offsets 0 and 1

    python = PythonKafkaReader(cfg, lambda t, p: None, threading.Event(), True, spark)
    decoder = Decoder(cfg)
    try:
        local = [decoder.decode(drop_committed(b.records, committed), AT) for b in python.batches()]
    finally:
        python.close()

    ranges = SparkRangeReader(cfg, lambda t, p: None, threading.Event(), True, spark, "executors")
    registry = SchemaRegistry()
    remote, fetched, replayed, keyed = [], 0, 0, {}
    try:
        for batch in ranges.batches():
            got = decode_on_executors(batch.df, cfg, committed, AT, registry, keyed)
            keyed = got.keyed
            remote.append(got.decoded)
            fetched += got.records
            replayed += got.replayed
    finally:
        ranges.close()

    want, have = summary(local), summary(remote)
    assert have == want
    assert keyed == decoder.keyed_topics() and keyed  # what makes a later null key on a keyed table refused
    assert fetched == len(records) + 2 and replayed == 2
    assert len(want["dead"]) == 1 and want["tombstones"] > 0 and want["markers"]
    rows = [r for _, table in want["tables"].values() for r in table]
    assert any(r["_old_key_json"] for r in rows) and any(r["_op"] == "t" for r in rows)
