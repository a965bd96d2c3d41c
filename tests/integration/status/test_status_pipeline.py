"""``lakecdc status`` against a real pipeline: PostgreSQL -> capture -> broker -> ingest -> Iceberg + Delta.

A small workload with known counts is captured and ingested; the status must report exactly the
offsets, rows, positions and slot lag that follow from it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_slots import drop_slot
from psycopg import sql
from two_table_pipeline import DELETES, INSERTS, SEED_ROWS, TABLES, UPDATES, capture_properties, create_tables, workload
from typer.testing import CliRunner

from lakecdc.capture.postgres.offset import flush_lsn
from lakecdc.capture.postgres.replication import format_lsn, parse_lsn
from lakecdc.capture.runner import run_capture
from lakecdc.capture.status import capture_status
from lakecdc.cli.main import app
from lakecdc.config.ingest import IngestConfig
from lakecdc.events.positions import position_from_source
from lakecdc.ingest.job import run_ingest
from lakecdc.ingest.status import ingest_status
from lakecdc.ingest.transactions import commit_lsn, tx_link

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _read_topic(bootstrap: str, topic: str) -> list[Any]:
    """Every record of ``topic`` (single partition), read to the end."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from lakecdc.devstack.broker import kafka_client_defaults

    consumer = Consumer({**kafka_client_defaults("consumer"), "bootstrap.servers": bootstrap,
                         "group.id": f"status-test-{uuid.uuid4().hex}", "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return records
                raise AssertionError(f"reading {topic}: {msg.error()}")
            records.append(msg)
    finally:
        consumer.close()
    raise AssertionError(f"timed out reading {topic}")


@pytest.fixture(scope="module")
def pipeline(pg: Any, broker: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Run once per module: the tests only read what it produced (the slot test appends rows last)."""
    tmp_path = tmp_path_factory.mktemp("status")
    name = f"st{uuid.uuid4().hex[:6]}"
    dsn = pg.create_database(name)
    capture_file = capture_properties(name, pg, broker, tmp_path)
    warehouse = tmp_path / "warehouse"
    ingest_props = {"name": f"{name}-ingest", "kafka.bootstrap.servers": broker.bootstrap_servers,
                    "topic.prefix": name, "warehouse": str(warehouse), "table.format": "iceberg",
                    "table.name.format.bronze": f"{name}_bronze.{{table}}",
                    "table.name.format.silver": f"{name}_silver.{{table}}",
                    f"table.mapping.{name}.public.parts.format": "delta",
                    "progress.path": str(tmp_path / "ingest-state")}
    ingest_file = tmp_path / "ingest.yaml"
    ingest_file.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in ingest_props.items()))
    with psycopg.connect(dsn, autocommit=True) as conn:
        create_tables(conn)
        run_capture(capture_file, f"kafka:{broker.bootstrap_servers}", stop_when_idle=2, show_progress=False)
        for table in TABLES:
            workload(conn, table)
        run_capture(capture_file, f"kafka:{broker.bootstrap_servers}", stop_when_idle=2, show_progress=False)
        from lakecdc.devstack.spark import spark_session

        session = spark_session(warehouse, app_name="lakecdc-status-test")
        summary = run_ingest(IngestConfig.from_file(ingest_file), "available-now", spark=session)
        assert not summary.failed_tables and summary.held_events == 0
        yield {"name": name, "dsn": dsn, "conn": conn, "capture": capture_file, "ingest": ingest_file,
               "broker": broker, "summary": summary,
               "password": pg.connection_properties(name).get("database.password")}
    drop_slot(pg.dsn_for("postgres"), f"{name}_slot")
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_ingest_status_reports_committed_offsets_rows_and_positions(pipeline: Any) -> None:
    name = pipeline["name"]
    before_ms = int(time.time() * 1000)
    status = ingest_status(pipeline["ingest"])
    after_ms = int(time.time() * 1000)
    assert status.batch_id >= 1 and status.held_events == 0
    by_topic = {t.topic: t for t in status.tables}
    markers = [json.loads(r.value())["payload"]
               for r in _read_topic(pipeline["broker"].bootstrap_servers, f"{name}.transaction") if r.value()]
    ends = {tx_link(m["id"]): commit_lsn(m["id"]) for m in markers if m["status"] == "END"}
    assert set(by_topic) == {f"{name}.public.{table}" for table in TABLES}
    for table, table_format in TABLES.items():
        topic = f"{name}.public.{table}"
        row = by_topic[topic]
        records = _read_topic(pipeline["broker"].bootstrap_servers, topic)
        events = [json.loads(r.value())["payload"] for r in records if r.value() is not None]
        assert len(events) == SEED_ROWS + INSERTS + UPDATES + DELETES  # the workload, known in advance
        assert row.format == table_format and row.error is None
        assert row.kafka_offsets == {topic: {"0": records[-1].offset()}}
        assert row.bronze_rows == len(events)
        silver_count = pipeline["conn"].execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
                                                ).fetchone()[0]
        assert row.silver_rows == silver_count == SEED_ROWS + INSERTS - DELETES
        newest = max(events, key=lambda e: position_from_source("postgres", e["source"]).seq())
        # ranked at its own transaction's commit LSN (the END marker's), not Debezium's sequence[0]
        expected = list(position_from_source("postgres", newest["source"]).seq())
        expected[0] = ends[tx_link(newest["transaction"]["id"])]
        assert row.max_seq == expected
        assert row.source_ts_ms == max(e["source"]["ts_ms"] for e in events)
        assert before_ms - row.source_ts_ms <= row.lag_ms <= after_ms - row.source_ts_ms
        assert 1 <= row.batch_id <= status.batch_id
        assert row.committed_at_ms is not None and row.committed_at_ms >= row.source_ts_ms


def test_capture_status_reports_offset_and_slot_lag_growing_with_unread_wal(pipeline: Any) -> None:
    first = capture_status(pipeline["capture"])
    assert first.error is None, first.error
    stored = json.loads((Path(pipeline["capture"]).parent / "offsets.json").read_text())
    (offset,) = stored.values()
    assert first.offset == offset and first.connector == "postgres" and first.name == pipeline["name"]
    assert first.position == f"LSN {format_lsn(int(offset['lsn']))}"
    slot = first.slot
    assert slot is not None and slot["exists"] and not slot["active"]  # capture stopped
    current = parse_lsn(slot["current_wal_lsn"])
    assert slot["lag_bytes"] == current - parse_lsn(slot["confirmed_flush_lsn"])
    assert slot["offset_lag_bytes"] == current - flush_lsn(offset)
    conn = pipeline["conn"]
    wal_before = parse_lsn(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    conn.execute("INSERT INTO items SELECT g, repeat('x', 200) FROM generate_series(1000, 1999) g")
    wal_after = parse_lsn(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    second = capture_status(pipeline["capture"])
    grown = second.slot["lag_bytes"] - slot["lag_bytes"]
    assert grown >= wal_after - wal_before > 200_000  # 1000 rows of 200+ bytes not yet captured
    assert second.offset == first.offset  # nothing captured in between


def test_cli_status_json_and_table_match_the_library_and_hide_the_password(pipeline: Any) -> None:
    runner = CliRunner()
    args = ["status", "--config", str(pipeline["capture"]), "--config", str(pipeline["ingest"])]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    capture, ingest = json.loads(result.stdout)
    assert capture["kind"] == "capture" and capture["offset"] == capture_status(pipeline["capture"]).offset
    library = ingest_status(pipeline["ingest"])
    assert [(t["topic"], t["kafka_offsets"], t["silver_rows"], t["bronze_rows"], t["max_seq"])
            for t in ingest["tables"]] == [(t.topic, t.kafka_offsets, t.silver_rows, t.bronze_rows, t.max_seq)
                                           for t in library.tables]
    shown = runner.invoke(app, args, env={"COLUMNS": "200"})  # a wide terminal: one line per table
    assert shown.exit_code == 0, shown.output
    assert f"{pipeline['name']}_silver.items" in shown.stdout and f"{pipeline['name']}_silver.parts" in shown.stdout
    assert "slot lag" in shown.stdout
    password = pipeline["password"]
    assert password and password not in result.stdout and password not in shown.stdout
