"""snapshot.mode always / never / recovery, and heartbeats (real MariaDB)."""

from __future__ import annotations

import pytest
from mysql_capture_support import (
    CaptureThread,
    capture,
    data_events,
    fresh_database,
    ops,
    records,
    sql,
    write_properties,
)

from lakecdc.capture.mysql.errors import MySqlSetupError

pytestmark = pytest.mark.integration


def test_always_snapshots_at_every_start(mariadb, tmp_path):
    db = "it_always"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, snapshot__mode="always")
    out = tmp_path / "out.jsonl"
    capture(props, out, stop_when_idle=1)
    sql(mariadb, db, "INSERT INTO t VALUES (2)")
    capture(props, out, stop_when_idle=1)
    events = data_events(records(out), "t")
    # second start: a new snapshot holding both rows; the insert is not streamed as well
    assert [(e["op"], e["after"]["id"]) for e in events] == [("r", 1), ("r", 1), ("r", 2)]


def test_never_reads_the_binlog_from_its_oldest_file(mariadb, tmp_path):
    db = "it_never"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(3))", "INSERT INTO t VALUES (1, 'a')",
        "ALTER TABLE t ADD COLUMN w INT", "INSERT INTO t VALUES (2, 'b', 3)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, snapshot__mode="never")
    out = tmp_path / "out.jsonl"
    capture(props, out, stop_when_idle=1.5)
    recs = records(out)
    events = data_events(recs, "t")
    # no snapshot: the structures come from the DDL in the binlog, so the first insert has no w
    assert [(e["op"], e["after"]) for e in events] == [("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b", "w": 3})]
    # (the binlog also holds other tests' DDL: emitted too, as Debezium does, in their databases)
    changes = [r["value"]["payload"] for r in recs if r["topic"] == "dbz"
               and r["value"]["payload"]["source"]["db"] == db]
    # database statements (DROP/CREATE DATABASE by the test setup) have no table changes
    assert [c["ddl"].split()[0] for c in changes if not c["tableChanges"]] == ["DROP", "CREATE"]
    assert [c["tableChanges"][0]["type"] for c in changes if c["tableChanges"]] == ["CREATE", "ALTER"]


def test_lost_history_needs_recovery_mode(mariadb, tmp_path):
    db = "it_recovery"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    props = write_properties(tmp_path / "c.properties", mariadb, db)
    out = tmp_path / "out.jsonl"
    capture(props, out, stop_when_idle=1)
    props.with_suffix(".history.jsonl").unlink()  # the history is lost
    sql(mariadb, db, "INSERT INTO t VALUES (2)")
    with pytest.raises(MySqlSetupError, match="snapshot.mode=recovery"):
        capture(props, out, stop_when_idle=1)
    capture(props, out, stop_when_idle=1.5, snapshot__mode="recovery")
    assert ops(records(out), "t") == ["r", "c"]
    assert props.with_suffix(".history.jsonl").stat().st_size > 0
    # and afterwards a normal start replays the rebuilt history
    sql(mariadb, db, "INSERT INTO t VALUES (3)")
    capture(props, out, stop_when_idle=1.5)
    assert ops(records(out), "t") == ["r", "c", "c"]


def test_heartbeats_are_emitted_while_idle(mariadb, tmp_path):
    db = "it_heartbeat"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, heartbeat__interval__ms="300",
                             snapshot__mode="no_data")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=2, mariadb=mariadb).start()
    runner.wait()
    beats = [r for r in records(out) if r["topic"] == "__debezium-heartbeat.dbz"]
    assert len(beats) >= 3
    assert beats[0]["key"]["payload"] == {"serverName": "dbz"} and beats[0]["value"]["payload"]["ts_ms"] > 0
