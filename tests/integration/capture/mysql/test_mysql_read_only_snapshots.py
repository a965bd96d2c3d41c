"""Read-only incremental snapshots (``read.only=true``) on a real MariaDB: windows bounded by GTIDs,
signals from the Kafka channel, a database account that can only read (SELECT and replication),
changes racing the chunks, and ``kill -9`` mid-snapshot. The watermark algorithm's other checks
are in ``test_mysql_signals.py``, whose helpers these tests share."""

from __future__ import annotations

import json
import logging
import secrets
import threading
from pathlib import Path
from typing import Any

import pymysql
import pytest
from incremental_checks import (
    assert_untouched_rows_have_one_read,
    data_payloads,
    kill_9_mid_snapshot,
    reads,
    replay,
    start_churn,
)
from mysql_capture_support import CaptureThread, capture_subprocess, query, records, sql
from test_mysql_signals import props, resume_after_kill, setup_db, stored_offset, table_state, wait_for

pytestmark = pytest.mark.integration

READ_ONLY_USER = "lakecdc_ro"


@pytest.fixture(scope="module")
def read_only_account(mariadb: Any) -> dict[str, str]:
    """An account with SELECT and the replication grants only: it cannot write a watermark."""
    password = secrets.token_urlsafe(12)
    statements = []
    for host in ("'127.0.0.1'", "'localhost'"):
        statements += [f"DROP USER IF EXISTS '{READ_ONLY_USER}'@{host};",
                       f"CREATE USER '{READ_ONLY_USER}'@{host} IDENTIFIED BY '{password}';",
                       f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{READ_ONLY_USER}'@{host};"]
    mariadb.admin_sql("\n".join(statements) + "\nFLUSH PRIVILEGES;\n")
    return {"database.user": READ_ONLY_USER, "database.password": password}


def read_only_props(tmp_path: Path, mariadb: Any, broker: Any, account: dict[str, str], db: str, chunk: int,
                    **extra: str) -> tuple[Path, str]:
    """A read-only connector whose only signal channel is Kafka (no signal.data.collection)."""
    topic = f"signals-{tmp_path.name}"[:200]
    config = props(tmp_path, mariadb, db, chunk, **{
        "read.only": "true", "signal.data.collection": "", "signal.enabled.channels": "kafka",
        "signal.kafka.topic": topic, "signal.kafka.bootstrap.servers": broker.bootstrap_servers,
        "signal.kafka.groupId": f"g-{tmp_path.name}", "snapshot.locking.mode": "none", **account, **extra})
    return config, topic


def send_signal(broker: Any, topic: str, value: dict[str, Any], key: str = "dbz") -> None:
    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **kafka_client_defaults("producer")})
    producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), partition=0)
    assert producer.flush(30) == 0


def execute_snapshot(db: str) -> dict[str, Any]:
    return {"type": "execute-snapshot", "data": {"data-collections": [f"{db}.items"], "type": "INCREMENTAL"}}


def assert_cannot_write(mariadb: Any, account: dict[str, str], db: str) -> None:
    """The premise: this account could not have inserted a watermark row."""
    kwargs = {**mariadb.connect_kwargs(db), "user": account["database.user"], "password": account["database.password"]}
    conn = pymysql.connect(**kwargs, autocommit=True)
    try:
        with pytest.raises(pymysql.err.OperationalError, match="denied"), conn.cursor() as cur:
            cur.execute("INSERT INTO debezium_signal VALUES ('x-open', 'snapshot-window-open', NULL)")
    finally:
        conn.close()


def test_read_only_snapshot_with_concurrent_changes(mariadb: Any, broker: Any, read_only_account: dict[str, str],
                                                    tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Updates, deletes and inserts race the chunk reads of a snapshot asked for on Kafka: replaying
    the events in order gives the table (no chunk row overwrites a newer streamed change), every
    original row that no change touched has exactly one read, none has two, and nothing was
    written to the database."""
    caplog.set_level(logging.INFO)
    db = "ro_churn"
    rows = 3000
    setup_db(mariadb, db, rows)
    assert_cannot_write(mariadb, read_only_account, db)
    config, topic = read_only_props(tmp_path, mariadb, broker, read_only_account, db, 100)
    out = tmp_path / "out.jsonl"
    capture = CaptureThread(config, out, stop_when_idle=5.0, mariadb=mariadb).start()
    capture.wait_streaming(60)
    stop = threading.Event()
    conn = pymysql.connect(**mariadb.connect_kwargs(db), autocommit=True)
    worker, changes = start_churn(conn.cursor().execute, rows,
                                  "UPDATE items SET label = CONCAT(label, '+') WHERE id = %s", stop)
    try:
        wait_for(lambda: changes[0] > 20, timeout=60, what="changes before the snapshot")
        send_signal(broker, topic, execute_snapshot(db))
        wait_for(lambda: "incremental snapshot completed" in caplog.text, timeout=180, what="the snapshot")
    finally:
        stop.set()
        worker.join(30)
        conn.close()
    capture.wait(240)
    recs = records(out)
    assert changes[0] > 20  # the churn ran before the snapshot was asked for (waited on above)
    assert "GTIDs; nothing is written" in caplog.text
    assert replay(recs) == table_state(mariadb, db)
    snapshot = reads(recs)
    assert {p["source"]["snapshot"] for p in snapshot} == {"incremental"}
    assert all(p["source"]["file"] and p["source"]["pos"] > 0 and p["before"] is None for p in snapshot)
    streamed = data_payloads(recs, "items")
    assert {p["source"]["snapshot"] for p in streamed if p["op"] != "r"} == {"false"}
    assert_untouched_rows_have_one_read(recs, table_state(mariadb, db), among=set(range(1, rows + 1)))
    assert query(mariadb, db, "SELECT COUNT(*) FROM debezium_signal") == [(0,)]
    assert not any(k.startswith("incremental_snapshot") for k in stored_offset(tmp_path))


def test_read_only_kill_9_mid_snapshot_resumes(mariadb: Any, broker: Any, read_only_account: dict[str, str],
                                               tmp_path: Path) -> None:
    """Killed mid-snapshot, a read-only capture goes on after a restart from the key in the offset:
    every row has a read across the runs and replaying all events gives the table."""
    db = "ro_kill"
    rows = 30000
    setup_db(mariadb, db, rows)
    config, topic = read_only_props(tmp_path, mariadb, broker, read_only_account, db, 20,
                                    **{"offset.flush.interval.ms": "100", "max.batch.size": "200"})
    offsets = tmp_path / "c.offsets.json"
    log = tmp_path / "capture.log"
    first = capture_subprocess(config, tmp_path / "run-0.jsonl", None, log)
    stored = kill_9_mid_snapshot(first, lambda: "streaming the binlog" in log.read_text(),
                                 lambda: send_signal(broker, topic, execute_snapshot(db)), offsets, "[20]", wait_for)
    resume_after_kill(mariadb, db, config, tmp_path, log, stored, rows, 20)
    assert query(mariadb, db, "SELECT COUNT(*) FROM debezium_signal") == [(0,)]


def test_change_committed_during_a_chunk_read_supersedes_its_rows(
        mariadb: Any, broker: Any, read_only_account: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Changes committed right after a chunk's query (before its high watermark is read) are the
    case the window exists for: the chunk holds the rows' older values, so the window must stay
    open until the stream has passed those changes, and they must drop the rows from the chunk."""
    from lakecdc.capture.mysql.read_only import ReadOnlyIncrementalSnapshot

    db = "ro_race"
    setup_db(mariadb, db, 30)
    raced: list[int] = []
    original = ReadOnlyIncrementalSnapshot.query_chunk

    def query_then_race(self: ReadOnlyIncrementalSnapshot) -> list[tuple[Any, ...]]:
        rows = original(self)
        if rows and not raced:  # the first chunk: change two of its rows behind its back
            raced.extend([rows[1][0], rows[3][0]])
            sql(mariadb, db, f"UPDATE items SET label = 'raced' WHERE id = {raced[0]}",
                f"DELETE FROM items WHERE id = {raced[1]}")
        return rows

    monkeypatch.setattr(ReadOnlyIncrementalSnapshot, "query_chunk", query_then_race)
    config, topic = read_only_props(tmp_path, mariadb, broker, read_only_account, db, 10)
    out = tmp_path / "out.jsonl"
    capture = CaptureThread(config, out, stop_when_idle=4.0, mariadb=mariadb).start()
    capture.wait_streaming(60)
    send_signal(broker, topic, execute_snapshot(db))
    capture.wait(180)
    recs = records(out)
    read_ids = [p["after"]["id"] for p in reads(recs)]
    assert raced == [2, 4]
    assert sorted(read_ids) == [i for i in range(1, 31) if i not in raced]
    assert replay(recs) == table_state(mariadb, db)
    assert table_state(mariadb, db)[2]["label"] == "raced" and 4 not in table_state(mariadb, db)
