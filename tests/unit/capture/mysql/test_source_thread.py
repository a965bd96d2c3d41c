"""``source.thread`` follows Debezium: the thread id of a transaction's ``BEGIN`` query, else null.

MySQL writes ``BEGIN`` as a QUERY event carrying the session's thread id; DDL and TRUNCATE are
QUERY events with a thread id too, but Debezium's binlog connectors report none for them (the id
is set only at ``BEGIN`` and cleared at the commit). The QUERY events here have the fields of
mysql-replication's ``QueryEvent`` that the streaming source reads; MariaDB, which writes no
``BEGIN``, is covered on a real server by the integration test ``test_mysql_source_thread``.
"""

from __future__ import annotations

from types import SimpleNamespace

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.schema_history import MemoryHistoryStore, SchemaHistory
from lakecdc.capture.mysql.streaming import EmittedMark, MySqlStreamingSource
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.topics import TopicNamer

THREAD = 7


def _source() -> MySqlStreamingSource:
    config = MySqlConnectorConfig.from_properties(
        {"topic.prefix": "dbz", "database.user": "u", "skipped.operations": "none"}  # emit TRUNCATE
    )
    history = SchemaHistory(MemoryHistoryStore())
    source = MySqlStreamingSource(config, TypeModes(), TopicNamer("dbz", "mysql"), history, EmittedMark())
    source.file, source.file_index, source.server_id = "mysql-bin.000003", 3, 1
    return source


def _query_event(sql: str) -> SimpleNamespace:
    return SimpleNamespace(query=sql, schema=b"inventory", slave_proxy_id=THREAD, timestamp=1700000000,
                           packet=SimpleNamespace(server_id=1))


def test_begin_query_gives_the_transaction_its_thread_and_the_commit_clears_it():
    source = _source()
    out: list = []
    source._begin(100, "3e11fa47-71ca-11e1-9e33-c80aa9429562:5")
    source._query(_query_event("BEGIN"), 140, 200, out)
    assert source.tx.thread == THREAD  # row events of this transaction are built with it
    source._query(_query_event("COMMIT"), 300, 350, out)
    source._begin(350, "3e11fa47-71ca-11e1-9e33-c80aa9429562:6")
    assert source.tx.thread is None


def test_ddl_and_truncate_events_have_a_null_thread_although_their_query_event_has_one():
    source = _source()
    out: list = []
    source._query(_query_event("CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20))"), 100, 200, out)
    source._query(_query_event("TRUNCATE TABLE customers"), 300, 400, out)
    schema_change, truncate = [r.value for r in out]
    assert schema_change["ddl"].startswith("CREATE TABLE customers")
    assert truncate["op"] == "t" and truncate["source"]["table"] == "customers"
    for payload in (schema_change, truncate):
        assert "thread" in payload["source"] and payload["source"]["thread"] is None
        assert payload["source"]["pos"] in (100, 300)
