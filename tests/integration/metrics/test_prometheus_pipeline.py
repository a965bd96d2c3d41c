"""Prometheus metrics scraped over HTTP from a running capture (``lakecdc capture --metrics-port``, its
own process) and a running ingest job, on the local stack: PostgreSQL -> broker -> Iceberg + Delta.

The workload's counts are known in advance; the scraped counters must equal them, the labels must
name the connector, source table and format, and lags must be non-negative and consistent with
the clock around the workload.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from metrics_scrape import Samples, scrape, value, wait_for
from pg_slots import drop_slot
from psycopg import sql
from two_table_pipeline import DELETES, INSERTS, SEED_ROWS, TABLES, UPDATES, capture_properties, create_tables, workload

from lakecdc.config.ingest import IngestConfig
from lakecdc.devstack.ports import free_port
from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def stack(pg: Any, broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp_path = tmp_path_factory.mktemp("metrics")
    name = f"mx{uuid.uuid4().hex[:6]}"
    dsn = pg.create_database(name)
    capture_file = capture_properties(name, pg, broker, tmp_path)
    with psycopg.connect(dsn, autocommit=True) as conn:
        create_tables(conn)
        yield {"name": name, "conn": conn, "capture": capture_file, "tmp": tmp_path, "broker": broker}
    drop_slot(pg.dsn_for("postgres"), f"{name}_slot")
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _start_capture(stack: Any, port: int) -> subprocess.Popen[bytes]:
    log = open(stack["tmp"] / "capture.log", "ab")  # noqa: SIM115 - the process owns it until it exits
    return subprocess.Popen(
        [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(stack["capture"]),
         "--sink", f"kafka:{stack['broker'].bootstrap_servers}", "--metrics-port", str(port)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)})


def _events(samples: Samples, name: str, table: str, op: str) -> float:
    return value(samples, "lakecdc_capture_events_total", connector=name, table=table, op=op) or 0


def test_capture_and_ingest_metrics_reflect_the_workload(stack: Any, spark: Any) -> None:
    name, conn = stack["name"], stack["conn"]
    tables = {table: f"{name}.public.{table}" for table in TABLES}
    port = free_port()
    capture = _start_capture(stack, port)
    try:
        # 1. the snapshot: rows read per table against PostgreSQL's estimate, then streaming
        snap = wait_for(port, lambda s: all(_events(s, name, t, "r") == SEED_ROWS for t in tables.values())
                        and value(s, "lakecdc_capture_snapshot_running", connector=name) == 0, "the snapshot")
        for label in tables.values():
            assert value(snap, "lakecdc_capture_snapshot_rows_total", connector=name, table=label) == SEED_ROWS
            assert value(snap, "lakecdc_capture_snapshot_rows_estimate", connector=name, table=label) == SEED_ROWS
            assert value(snap, "lakecdc_capture_lag_seconds", connector=name, table=label) is None  # reads only
        # 2. the workload, streamed
        before_ms = time.time() * 1000
        for table in TABLES:
            workload(conn, table)
        after_ms = time.time() * 1000
        expected = {"c": INSERTS, "u": UPDATES, "d": DELETES}
        streamed = wait_for(port, lambda s: all(_events(s, name, t, op) == n for t in tables.values()
                                                for op, n in expected.items())
                            and all(value(s, "lakecdc_capture_lag_seconds", connector=name, table=t) is not None
                                    for t in tables.values()), "the streamed workload")
        for label in tables.values():
            lag = value(streamed, "lakecdc_capture_lag_seconds", connector=name, table=label)
            source_s = value(streamed, "lakecdc_capture_source_timestamp_seconds", connector=name, table=label)
            assert lag is not None and source_s is not None and lag >= 0
            assert before_ms - 1000 <= source_s * 1000 <= after_ms  # ms precision of source.ts_ms
            assert source_s + lag <= time.time() + 1  # measured at a flush that has happened
        commits = value(streamed, "lakecdc_capture_commits_total", connector=name)
        assert commits is not None and commits >= 2  # the snapshot's and at least one streaming commit
        assert value(streamed, "lakecdc_capture_commit_duration_seconds_count", connector=name) == commits
        time.sleep(1.5)  # past a commit interval: every change is committed and nothing new follows
        settled = scrape(port)
        (offset,) = json.loads((stack["tmp"] / "offsets.json").read_text()).values()
        assert value(settled, "lakecdc_capture_source_position", connector=name, field="lsn") == offset["lsn"]
        capture_source_s = {t: value(streamed, "lakecdc_capture_source_timestamp_seconds", connector=name, table=t)
                            for t in tables.values()}
    finally:
        capture.send_signal(signal.SIGTERM)
        assert capture.wait(60) == 0, (stack["tmp"] / "capture.log").read_text()[-3000:]

    # 3. ingest, running continuously with its exporter, until every change is applied
    _ingest_and_scrape(stack, spark, tables, capture_source_s)


def _ingest_and_scrape(stack: Any, spark: Any, tables: dict[str, str], capture_source_s: dict[str, float]) -> None:
    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults
    from lakecdc.devstack.spark import spark_session

    name = stack["name"]
    # one malformed record: ingest sends it to the dead-letter table, and counts it
    producer = Producer({**kafka_client_defaults("producer"), "bootstrap.servers": stack["broker"].bootstrap_servers})
    producer.produce(tables["items"], key=b'{"id": 1}', value=b"{not json")
    assert producer.flush(30) == 0
    warehouse = stack["tmp"] / "warehouse"
    port = free_port()
    config = IngestConfig.from_properties({
        "name": f"{name}-ingest", "kafka.bootstrap.servers": stack["broker"].bootstrap_servers,
        "topic.prefix": name, "warehouse": str(warehouse), "table.format": "iceberg",
        "table.name.format.bronze": f"{name}_bronze.{{table}}", "table.name.format.silver": f"{name}_silver.{{table}}",
        f"table.mapping.{name}.public.parts.format": "delta", "progress.path": str(stack["tmp"] / "ingest-state"),
        "metrics.port": str(port)})
    session = spark_session(warehouse, app_name="lakecdc-metrics-test")
    reports: list[Any] = []
    stop = threading.Event()
    job = f"{name}-ingest"
    per_table = SEED_ROWS + INSERTS + UPDATES + DELETES
    # run_ingest serves the configuration's metrics.port itself (as the Databricks job calls it)
    worker = threading.Thread(target=lambda: reports.append(
        run_ingest(config, "continuous", spark=session, stop=stop, on_batch=reports.append)), daemon=True)
    worker.start()
    try:
        samples = wait_for(port, lambda s: all(
            value(s, "lakecdc_ingest_events_total", connector=job, table=t, format=TABLES[t.rsplit(".", 1)[1]])
            == per_table for t in tables.values())
            and value(s, "lakecdc_ingest_dead_letters_total", connector=job) == 1, "ingest", timeout=600)
    finally:
        stop.set()
        worker.join(300)
    assert not worker.is_alive()
    summary, batches = reports[-1], reports[:-1]
    assert summary.events == 2 * per_table and summary.dead_letters == 1 and not summary.failed_tables
    assert value(samples, "lakecdc_ingest_batches_total", connector=job) == len(batches)
    assert value(samples, "lakecdc_ingest_batch_duration_seconds_count", connector=job) == len(batches)
    duration_sum = value(samples, "lakecdc_ingest_batch_duration_seconds_sum", connector=job)
    assert duration_sum == pytest.approx(sum(b.seconds for b in batches))
    assert value(samples, "lakecdc_ingest_held_events", connector=job) == 0
    assert value(samples, "lakecdc_ingest_replayed_events_total", connector=job) == 0
    lag = value(samples, "lakecdc_ingest_lag_seconds", connector=job)
    assert lag is not None and lag >= 0
    # the newest change applied is the newest change captured
    assert value(samples, "lakecdc_ingest_source_timestamp_seconds", connector=job) == max(capture_source_s.values())
    for table, captured_s in capture_source_s.items():  # and so per table, with its position
        assert value(samples, "lakecdc_ingest_table_source_timestamp_seconds", connector=job, table=table) == captured_s
        table_lag = value(samples, "lakecdc_ingest_table_lag_seconds", connector=job, table=table)
        assert table_lag is not None and table_lag >= 0
        newest_commit_lsn = max(b.table_max_seq[table][0] for b in batches if table in b.table_max_seq)
        assert value(samples, "lakecdc_ingest_table_source_position", connector=job, table=table,
                     field="lsn") == newest_commit_lsn
    changes = sum(len(a) for b in batches for a in b.latency_ms)
    assert changes > 0
    assert value(samples, "lakecdc_ingest_source_to_silver_seconds_count", connector=job) == changes
    # the endpoint closes when the job returns
    with pytest.raises(OSError):
        scrape(port)
