"""Capture metrics of a MariaDB connector, scraped while it runs: snapshot rows against InnoDB's
estimate, streamed events by op, the binlog position of the committed offset."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest
from metrics_scrape import value, wait_for

from lakecdc.capture.runner import run_capture
from lakecdc.devstack.ports import free_port

pytestmark = [pytest.mark.integration]

ROWS, INSERTS = 20, 4


def _execute(mariadb: Any, database: str, *statements: str) -> None:
    conn = pymysql.connect(**mariadb.connect_kwargs(database), autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def test_mariadb_capture_metrics(mariadb: Any, tmp_path: Path) -> None:
    database = f"mx{uuid.uuid4().hex[:6]}"
    mariadb.admin_sql(f"CREATE DATABASE `{database}`;\n")
    values = ", ".join(f"({i}, 'row {i}')" for i in range(1, ROWS + 1))
    _execute(mariadb, database, "CREATE TABLE items (id int PRIMARY KEY, name varchar(50))",
             f"INSERT INTO items VALUES {values}", "ANALYZE TABLE items")
    props = {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "name": database,
             "topic.prefix": database, "database.include.list": database,
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
             "offset.storage.file.filename": str(tmp_path / "offsets.json"), "offset.flush.interval.ms": "200",
             **mariadb.connection_properties()}
    config = tmp_path / "capture.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    port = free_port()
    errors: list[BaseException] = []

    def capture() -> None:
        try:
            run_capture(config, f"jsonl:{tmp_path / 'events.jsonl'}", stop_when_idle=20,
                        overrides={"metrics.port": str(port)}, show_progress=False)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
    worker = threading.Thread(target=capture, daemon=True)
    worker.start()
    label = f"{database}.items"
    try:
        snap = wait_for(port, lambda s: value(s, "lakecdc_capture_snapshot_rows_total", connector=database,
                                              table=label) == ROWS
                        and value(s, "lakecdc_capture_snapshot_running", connector=database) == 0, "the snapshot")
        estimate = value(snap, "lakecdc_capture_snapshot_rows_estimate", connector=database, table=label)
        assert estimate is not None and estimate > 0  # InnoDB's sampled table_rows
        before_ms = time.time() * 1000
        _execute(mariadb, database, *(f"INSERT INTO items VALUES ({i}, 'new')" for i in range(100, 100 + INSERTS)))
        streamed = wait_for(port, lambda s: value(s, "lakecdc_capture_events_total", connector=database, table=label,
                                                  op="c") == INSERTS
                            and value(s, "lakecdc_capture_lag_seconds", connector=database, table=label) is not None,
                            "the inserts")
        source_s = value(streamed, "lakecdc_capture_source_timestamp_seconds", connector=database, table=label)
        assert source_s is not None and before_ms - 1000 <= source_s * 1000 <= time.time() * 1000  # binlog: seconds
        assert value(streamed, "lakecdc_capture_lag_seconds", connector=database, table=label) >= 0
        time.sleep(1)  # past a commit interval
        settled = wait_for(port, lambda s: True, "a scrape")
        (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
        assert value(settled, "lakecdc_capture_source_position", connector=database, field="pos") == offset["pos"]
    finally:
        worker.join(120)
        mariadb.admin_sql(f"DROP DATABASE `{database}`;\n")
    assert not worker.is_alive() and not errors, errors
