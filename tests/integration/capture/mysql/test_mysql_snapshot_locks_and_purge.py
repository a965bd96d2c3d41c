"""Snapshot locking variants and a binlog purged while capture was stopped (real MariaDB)."""

from __future__ import annotations

import json
import logging
import time

import pytest
from mysql_capture_support import (
    CaptureThread,
    capture,
    data_events,
    fresh_database,
    ops,
    query,
    records,
    sql,
    write_properties,
)

from lakecdc.capture.mysql.errors import BinlogPurgedError

pytestmark = pytest.mark.integration


def test_table_level_locks_when_a_global_read_lock_is_not_allowed(mariadb, tmp_path, caplog):
    db = "it_tablelock"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1,1),(2,2)")
    # a user without RELOAD (no FLUSH TABLES WITH READ LOCK) but with LOCK TABLES
    mariadb.admin_sql(
        "DROP USER IF EXISTS 'nolock'@'127.0.0.1';\n"
        "CREATE USER 'nolock'@'127.0.0.1' IDENTIFIED BY 'nolock-pw';\n"
        f"GRANT SELECT, LOCK TABLES, SHOW VIEW ON `{db}`.* TO 'nolock'@'127.0.0.1';\n"
        "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'nolock'@'127.0.0.1';\n"
    )
    props = write_properties(tmp_path / "c.properties", mariadb, db, database__user="nolock",
                             database__password="nolock-pw")
    out = tmp_path / "out.jsonl"
    with caplog.at_level(logging.INFO, logger="lakecdc.capture.mysql.snapshot"):
        runner = CaptureThread(props, out, stop_when_idle=2, mariadb=mariadb).start()
        runner.wait_streaming()
        sql(mariadb, db, "INSERT INTO t VALUES (3,3)")
        runner.wait()
    messages = [r.getMessage() for r in caplog.records]
    assert any("global read lock is not allowed" in m for m in messages)
    assert any("table-level read locks taken on 1 tables" in m for m in messages)
    assert any("(tables lock)" in m for m in messages)
    assert ops(records(out), "t") == ["r", "r", "c"]
    # locks are released: the table is writable again
    sql(mariadb, db, "INSERT INTO t VALUES (4,4)")
    assert query(mariadb, db, "SELECT COUNT(*) FROM t")[0][0] == 4


def test_locking_mode_none_and_extended(mariadb, tmp_path, caplog):
    db = "it_lockmodes"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    for mode, expected in (("none", "(no lock)"), ("extended", "(global lock)")):
        props = write_properties(tmp_path / f"{mode}.properties", mariadb, db, snapshot__locking__mode=mode,
                                 snapshot__mode="initial_only")
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="lakecdc.capture.mysql.snapshot"):
            stats = capture(props, tmp_path / f"{mode}.jsonl", stop_when_idle=1)
        assert stats.snapshot_rows == 1
        assert any(expected in r.getMessage() for r in caplog.records), mode


def purge_through(mariadb, db: str, file: str, timeout: float = 30) -> None:
    """Rotate and purge until ``file`` is gone; MariaDB keeps a file until its binlog checkpoint
    (InnoDB crash recovery) has moved past it, so one PURGE may not remove it yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mariadb.admin_sql("FLUSH BINARY LOGS;\n")
        current = query(mariadb, db, "SHOW MASTER STATUS")[0][0]
        mariadb.admin_sql(f"PURGE BINARY LOGS TO '{current}';\n")
        if file not in [r[0] for r in query(mariadb, db, "SHOW BINARY LOGS")]:
            return
        time.sleep(0.5)
    raise TimeoutError(f"the server kept binlog file {file}")


def test_purged_binlog_is_an_error_for_initial_and_a_new_snapshot_for_when_needed(mariadb, tmp_path):
    db = "it_purge"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    props = write_properties(tmp_path / "c.properties", mariadb, db)
    out = tmp_path / "out.jsonl"
    capture(props, out, stop_when_idle=1)
    assert ops(records(out), "t") == ["r"]
    # capture is stopped; the server rotates and purges the file the offset points into
    sql(mariadb, db, "INSERT INTO t VALUES (2)")
    stored_file = json.loads(props.with_suffix(".offsets.json").read_text()).popitem()[1]["file"]
    purge_through(mariadb, db, stored_file)
    with pytest.raises(BinlogPurgedError, match="purged") as info:
        capture(props, out, stop_when_idle=1)
    assert "snapshot.mode=when_needed" in str(info.value)
    # when_needed takes a new snapshot and streams on from there
    runner = CaptureThread(props, out, stop_when_idle=2, snapshot__mode="when_needed", mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "INSERT INTO t VALUES (3)")
    runner.wait()
    events = data_events(records(out), "t")
    assert [(e["op"], e["after"]["id"]) for e in events] == [("r", 1), ("r", 1), ("r", 2), ("c", 3)]
