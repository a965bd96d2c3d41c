"""``source.thread`` on a real MariaDB 10.11: null in every streamed event, as Debezium emits it.

Debezium's binlog connectors set ``thread`` only from the thread id of a ``BEGIN`` QUERY event and
clear it at the commit (XID or ``COMMIT`` query); DDL, TRUNCATE and the ``COMMIT`` of a
non-transactional engine are QUERY events too, but their thread id is not used. MariaDB 10.x
starts every transaction with a GTID event instead of ``BEGIN`` (for replicas announcing
capability 4, as Debezium's MariaDB connector and mysql-replication both do), and neither the GTID
event nor the ANNOTATE_ROWS event carries a thread id, so Debezium's MariaDB connector leaves
``thread`` null. This test shows both halves on the server's own binlog: the thread id is there
on the QUERY events, there is no ``BEGIN``, and every event we emit has ``thread`` null.
"""

from __future__ import annotations

import pymysql
import pytest
from mysql_capture_support import CaptureThread, data_events, fresh_database, ops, records, write_properties

pytestmark = pytest.mark.integration


def _binlog_events(mariadb, gtid_start: str) -> list[tuple[str, object]]:
    """(event class name, event) for each binlog event after the GTID position ``gtid_start``."""
    from pymysqlreplication import BinLogStreamReader

    settings = mariadb.connect_kwargs()
    settings.pop("database")
    stream = BinLogStreamReader(connection_settings=settings, server_id=mariadb.server_id + 77, blocking=False,
                                is_mariadb=True, auto_position=gtid_start, annotate_rows_event=True,
                                freeze_schema=True)
    try:
        return [(type(ev).__name__, ev) for ev in stream]
    finally:
        stream.close()


def test_mariadb_events_have_a_null_thread_although_query_events_carry_one(mariadb, tmp_path):
    db = "it_thread"
    fresh_database(mariadb, db)
    props = write_properties(tmp_path / "c.properties", mariadb, db, provide__transaction__metadata="true",
                             include__query="true", skipped__operations="none")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=3, mariadb=mariadb).start()
    runner.wait_streaming()
    conn = pymysql.connect(**mariadb.connect_kwargs(db), autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID(), @@gtid_binlog_pos")
            session_thread, gtid_start = cur.fetchone()
            for statement in (
                "CREATE TABLE orders (id INT PRIMARY KEY, qty INT) ENGINE=InnoDB",
                "CREATE TABLE audit_log (id INT PRIMARY KEY) ENGINE=MyISAM",  # commits with a QUERY event
                "INSERT INTO orders VALUES (1, 1)",
                "BEGIN", "UPDATE orders SET qty = 2 WHERE id = 1", "INSERT INTO orders VALUES (2, 5)", "COMMIT",
                "INSERT INTO audit_log VALUES (1)",
                "DELETE FROM orders WHERE id = 2",
                "TRUNCATE TABLE orders",
            ):
                cur.execute(statement)
    finally:
        conn.close()
    runner.wait()

    # the binlog: QUERY events carry the session's thread id; transactions start with a GTID event
    events = _binlog_events(mariadb, gtid_start)
    queries = [(ev.query, ev.slave_proxy_id) for name, ev in events if name == "QueryEvent"]
    assert [q for q, _ in queries] == [
        "CREATE TABLE orders (id INT PRIMARY KEY, qty INT) ENGINE=InnoDB",
        "CREATE TABLE audit_log (id INT PRIMARY KEY) ENGINE=MyISAM",
        "COMMIT",  # the MyISAM insert's transaction
        "TRUNCATE TABLE orders",
    ]
    assert {thread for _, thread in queries} == {session_thread}
    names = [name for name, _ in events]
    assert "BEGIN" not in [q for q, _ in queries]
    assert names.count("MariadbGtidEvent") == 7 and names.count("XidEvent") == 3

    # what we emit: thread is present in every source block, and null
    recs = records(out)
    assert ops(recs, "orders") == ["c", "u", "c", "d", "t"] and ops(recs, "audit_log") == ["c"]
    schema_changes = [r["value"]["payload"] for r in recs if r["topic"] == "dbz"]
    streamed_ddl = [c["ddl"] for c in schema_changes if c["source"]["snapshot"] == "false"]
    assert streamed_ddl == [q for q, _ in queries[:2]]
    sources = [e["source"] for e in data_events(recs)] + [c["source"] for c in schema_changes]
    assert all("thread" in s and s["thread"] is None for s in sources), sources
