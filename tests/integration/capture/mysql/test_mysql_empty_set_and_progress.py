"""Empty SET values (Debezium emits "", mysql-replication reports None) and the snapshot progress bar,
against a real MariaDB."""

from __future__ import annotations

import io

import pymysql
import pytest
from mysql_capture_support import CaptureThread, data_events, fresh_database, records, sql, write_properties

from lakecdc.capture.mysql.snapshot import _Progress

pytestmark = pytest.mark.integration

TAGGED = "CREATE TABLE tagged (id INT PRIMARY KEY, tags SET('a','b','c'), note VARCHAR(10))"


def test_empty_set_is_an_empty_string_in_snapshot_and_stream_and_null_stays_null(mariadb, tmp_path):
    db = "it_empty_set"
    fresh_database(mariadb, db)
    sql(mariadb, db, TAGGED, "INSERT INTO tagged VALUES (1, '', 'snap'), (2, NULL, 'snap')")
    props = write_properties(tmp_path / "c.properties", mariadb, db)
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=3, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db,
        "INSERT INTO tagged VALUES (3, '', 'ins'), (4, NULL, NULL), (5, 'c,a', 'ins')",
        "UPDATE tagged SET tags = '' WHERE id = 5",
        "UPDATE tagged SET tags = 'b' WHERE id = 3",
        "DELETE FROM tagged WHERE id = 5")
    runner.wait()
    events = data_events(records(out), "tagged")
    images = [(e["op"], (e["before"] or {}).get("tags", "-"), (e["after"] or {}).get("tags", "-")) for e in events]
    assert images == [
        ("r", "-", ""), ("r", "-", None),
        ("c", "-", ""), ("c", "-", None), ("c", "-", "a,c"),
        ("u", "a,c", ""),
        ("u", "", "b"),
        ("d", "", "-"),
    ]


def test_snapshot_progress_bar_names_the_table_and_counts_its_rows(mariadb):
    from rich.console import Console

    db = "it_progress"
    fresh_database(mariadb, db)
    sql(mariadb, db, TAGGED, "INSERT INTO tagged (id) VALUES " + ",".join(f"({i})" for i in range(1, 138)),
        "ANALYZE TABLE tagged")
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    conn = pymysql.connect(**mariadb.connect_kwargs(db))
    try:
        progress = _Progress(True, conn, [(db, "tagged")], console=console)
        assert progress.bar is not None
        progress.table_started(db, "tagged")
        progress.advance(100)
        progress.advance(37)
        progress.table_done(db, "tagged")
        progress.close()
    finally:
        conn.close()
    text = buffer.getvalue()
    assert f"snapshot {db}.tagged" in text
    assert "137/137" in text


def test_snapshot_progress_bar_stays_silent_when_off(mariadb):
    db = "it_progress_off"
    fresh_database(mariadb, db)
    sql(mariadb, db, TAGGED)
    conn = pymysql.connect(**mariadb.connect_kwargs(db))
    try:
        progress = _Progress(False, conn, [(db, "tagged")])
        assert progress.bar is None
        progress.table_started(db, "tagged")
        progress.advance(5)
        progress.close()
    finally:
        conn.close()
