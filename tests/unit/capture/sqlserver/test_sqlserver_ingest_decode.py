"""The events the SQL Server connector writes are what lakecdc's ingest expects: decoded into typed
rows in source order, with transaction markers, no dead letters (JSONL sink -> ingest Decoder)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
from sqlserver_recordings import base_properties
from test_sqlserver_seed_golden import seed_server

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.connector import SqlServerConnector
from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA
from lakecdc.lake.segments import union_segments
from lakecdc.transport.jsonl import JsonlSink
from lakecdc.transport.offsets import FileOffsetStore


def kafka_table(lines: list[dict]) -> pa.Table:
    offsets: dict[str, int] = {}
    cols: dict[str, list] = {"key": [], "value": [], "topic": [], "offset": []}
    for line in lines:
        topic = line["topic"]
        cols["key"].append(None if line["key"] is None else json.dumps(line["key"]).encode())
        cols["value"].append(None if line["value"] is None else json.dumps(line["value"]).encode())
        cols["topic"].append(topic)
        cols["offset"].append(offsets.get(topic, 0))
        offsets[topic] = offsets.get(topic, 0) + 1
    n = len(lines)
    return pa.Table.from_arrays([
        pa.array(cols["key"], pa.binary()), pa.array(cols["value"], pa.binary()), pa.array(cols["topic"], pa.string()),
        pa.array([0] * n, pa.int32()), pa.array(cols["offset"], pa.int64()),
        pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        pa.array([None] * n, KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)


def test_ingest_decodes_sqlserver_events(tmp_path: Path) -> None:
    config = SqlServerConnectorConfig.from_properties(base_properties(provide__transaction__metadata="true"))
    connector = SqlServerConnector(config, show_progress=False, connection_factory=seed_server().connect)
    out = tmp_path / "events.jsonl"
    sink = JsonlSink(out)
    settings = CoordinatorSettings(commit_interval_s=0.0, poll_timeout_s=0.01, stop_when_idle_s=1.0)
    CaptureCoordinator(connector, sink, FileOffsetStore(tmp_path / "offsets.json"), settings).run()
    sink.close()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ingest = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "server1"})
    batch = Decoder(ingest).decode(kafka_table(lines), dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc))
    assert batch.dead_letters == []
    assert [m.status for m in batch.tx_markers] == ["BEGIN", "END"] * 3
    _, rows = union_segments([s for s in batch.segments if s.topic == "server1.testDB.dbo.customers"])
    decoded = sorted(rows.to_pylist(), key=lambda r: r["_offset"])
    assert [r["_op"] for r in decoded] == ["r", "r", "c", "u", "d"]
    assert [r["id"] for r in decoded] == [1001, 1002, 1005, 1005, 1005]
    assert decoded[3]["email"] == "noreply@example.org"
    seqs = [r["_seq"] for r in decoded]
    assert seqs == sorted(seqs)  # source order: snapshot rows, then by commit / change LSN
