"""``lakecdc status`` for a MariaDB capture: stored binlog position and the binlog written since."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest

from lakecdc.capture.runner import run_capture
from lakecdc.capture.status import capture_status

pytestmark = [pytest.mark.integration]


def _execute(mariadb: Any, database: str | None, *statements: str) -> list[Any]:
    conn = pymysql.connect(**mariadb.connect_kwargs(database), autocommit=True)
    try:
        with conn.cursor() as cur:
            rows: list[Any] = []
            for statement in statements:
                cur.execute(statement)
                rows = list(cur.fetchall())
            return rows
    finally:
        conn.close()


def _server_position(mariadb: Any) -> tuple[str, int]:
    (row,) = _execute(mariadb, None, "SHOW MASTER STATUS")
    return str(row[0]), int(row[1])


def test_binlog_lag_counts_from_the_stored_position_and_grows_by_exactly_what_is_written(
        mariadb: Any, tmp_path: Path) -> None:
    database = f"st{uuid.uuid4().hex[:6]}"
    mariadb.admin_sql(f"CREATE DATABASE `{database}`;\n")
    _execute(mariadb, database, "CREATE TABLE items (id int PRIMARY KEY, name varchar(50))",
             "INSERT INTO items VALUES (1, 'one'), (2, 'two')")
    props = {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "topic.prefix": database,
             "database.include.list": database,
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
             "offset.storage.file.filename": str(tmp_path / "offsets.json"), **mariadb.connection_properties()}
    config = tmp_path / "capture.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    _execute(mariadb, database, "INSERT INTO items VALUES (3, 'three')")
    run_capture(config, f"jsonl:{tmp_path / 'events.jsonl'}", stop_when_idle=2, show_progress=False)

    first = capture_status(config)
    assert first.error is None, first.error
    assert first.connector == "mariadb" and first.offset is not None
    assert first.position is not None and first.position.startswith(f"{first.offset['file']}:{first.offset['pos']}")
    file, pos = _server_position(mariadb)
    assert first.binlog is not None and (first.binlog["current_file"], first.binlog["current_pos"]) == (file, pos)
    assert first.offset["file"] == file  # no rotation during this short test
    assert first.binlog["lag_bytes"] == pos - int(first.offset["pos"]) >= 0

    _execute(mariadb, database, *(f"INSERT INTO items VALUES ({i}, '{'x' * 40}')" for i in range(10, 60)))
    file_after, pos_after = _server_position(mariadb)
    second = capture_status(config)
    assert second.offset == first.offset  # nothing captured in between
    assert file_after == file  # 50 small rows do not rotate the binlog
    assert second.binlog["lag_bytes"] - first.binlog["lag_bytes"] == pos_after - pos > 50 * 40
    mariadb.admin_sql(f"DROP DATABASE `{database}`;\n")
