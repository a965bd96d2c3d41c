"""Signals and incremental snapshots on a real MariaDB: the source signaling channel (inserts into
``signal.data.collection`` read from the binlog), ``log``/unknown actions, ``execute-snapshot``
(chunks, watermarks, concurrent changes) and resuming after ``kill -9`` from the offset."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from incremental_checks import (
    assert_untouched_rows_have_one_read,
    check_signals_and_windows,
    data_payloads,
    kill_9_mid_snapshot,
    load_runs,
    reads,
    replay,
    start_churn,
)
from mysql_capture_support import (
    CaptureThread,
    capture_subprocess,
    fresh_database,
    query,
    records,
    sql,
    write_properties,
)

pytestmark = pytest.mark.integration

SIGNAL_TABLE = ("CREATE TABLE debezium_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
                "data VARCHAR(2048))")
ITEMS = "CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(200), color VARCHAR(20))"


def setup_db(mariadb: Any, db: str, rows: int) -> None:
    fresh_database(mariadb, db)
    sql(mariadb, db, SIGNAL_TABLE, ITEMS)
    if rows:
        values = ",".join(f"({i}, 'item{i}', '{'blue' if i % 2 == 0 else 'red'}')" for i in range(1, rows + 1))
        sql(mariadb, db, f"INSERT INTO items VALUES {values}")


def props(tmp_path: Path, mariadb: Any, db: str, chunk: int, **extra: str) -> Path:
    return write_properties(tmp_path / "c.properties", mariadb, db, **{
        "table.include.list": f"{db}.items", "snapshot.mode": "no_data",
        "signal.data.collection": f"{db}.debezium_signal", "incremental.snapshot.chunk.size": str(chunk),
        **extra})


def signal(signal_id: str, kind: str, data: dict[str, Any] | None) -> str:
    text = "NULL" if data is None else "'" + json.dumps(data).replace("\\", "\\\\").replace("'", "''") + "'"
    return f"INSERT INTO debezium_signal VALUES ('{signal_id}', '{kind}', {text})"


def start(mariadb: Any, config: Path, out: Path, idle: float = 4.0) -> CaptureThread:
    capture = CaptureThread(config, out, stop_when_idle=idle, mariadb=mariadb).start()
    capture.wait_streaming(60)
    return capture


def wait_for(condition: Any, timeout: float = 120, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def table_state(mariadb: Any, db: str, table: str = "items") -> dict[int, dict[str, Any]]:
    return {r[0]: {"id": r[0], "label": r[1], "color": r[2]}
            for r in query(mariadb, db, f"SELECT id, label, color FROM {table}")}


def stored_offset(tmp_path: Path) -> dict[str, Any]:
    return next(iter(json.loads((tmp_path / "c.offsets.json").read_text()).values()))


def test_source_channel_log_and_incremental_snapshot(mariadb: Any, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    db = "sig_basic"
    setup_db(mariadb, db, 12)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 5), out)
    sql(mariadb, db, signal("s-log", "log", {"message": "hello from signal at {}"}),
        signal("s-bogus", "no-such-action", {}),
        signal("ad-hoc-1", "execute-snapshot", {"data-collections": [f"{db}.items"], "type": "incremental"}),
        "UPDATE items SET label = 'changed' WHERE id = 3")
    capture.wait(180)
    recs = records(out)
    snapshot = reads(recs)
    # row 3 has no read when its update lands inside the first window (the streamed change wins)
    assert sorted(p["after"]["id"] for p in snapshot) in (list(range(1, 13)), [i for i in range(1, 13) if i != 3])
    assert {p["source"]["snapshot"] for p in snapshot} == {"incremental"}
    assert {(p["source"]["db"], p["source"]["table"]) for p in snapshot} == {(db, "items")}
    # the seed's incremental snapshot event: before and transaction null
    assert all(p["before"] is None and p["transaction"] is None for p in snapshot)
    assert all(p["source"]["file"] and p["source"]["pos"] > 0 for p in snapshot)
    assert replay(recs) == table_state(mariadb, db)
    check_signals_and_windows(recs, caplog.text)
    assert not any(k.startswith("incremental_snapshot") for k in stored_offset(tmp_path))


def test_incremental_snapshot_with_concurrent_changes(mariadb: Any, tmp_path: Path) -> None:
    """Updates, deletes and inserts race the chunk reads: replaying the events in order gives the
    table's final content (a change streamed inside a window wins over the chunk's row), and no
    row is read twice."""
    db = "sig_churn"
    setup_db(mariadb, db, 3000)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 100), out, idle=5.0)
    stop = threading.Event()
    conn = pymysql.connect(**mariadb.connect_kwargs(db), autocommit=True)
    cursor = conn.cursor()
    worker, changes = start_churn(cursor.execute, 3000, "UPDATE items SET label = CONCAT(label, '+') WHERE id = %s",
                                  stop)
    try:
        sql(mariadb, db, signal("ad-hoc", "execute-snapshot", {"data-collections": [f"{db}\\.it.*"]}))
        wait_for(lambda: out.exists() and out.read_text().count("snapshot-window-close") >= 10, timeout=240,
                 what="ten snapshot windows")
    finally:
        stop.set()
        worker.join(30)
        conn.close()
    capture.wait(300)
    recs = records(out)
    assert changes[0] > 0  # the churn ran while the chunks were read
    final = table_state(mariadb, db)
    assert replay(recs) == final
    assert_untouched_rows_have_one_read(recs, final)


def test_kill_9_mid_snapshot_resumes_at_the_next_chunk(mariadb: Any, tmp_path: Path) -> None:
    """A capture killed while an incremental snapshot runs goes on after a restart from the key in
    the offset: every row has a read across the runs and replaying all events gives the table."""
    db = "sig_kill"
    rows = 20000
    setup_db(mariadb, db, rows)
    config = props(tmp_path, mariadb, db, 50, **{"offset.flush.interval.ms": "200"})
    offsets = tmp_path / "c.offsets.json"
    log = tmp_path / "capture.log"
    first = capture_subprocess(config, tmp_path / "run-0.jsonl", None, log)
    stored = kill_9_mid_snapshot(
        first, lambda: "streaming the binlog" in log.read_text(),
        lambda: sql(mariadb, db, signal("big", "execute-snapshot", {"data-collections": [f"{db}.items"]})),
        offsets, "[50]", wait_for)
    assert json.loads(stored["incremental_snapshot_collections"])[0]["incremental_snapshot_collections_id"] == \
        f"{db}.items"
    assert stored["incremental_snapshot_correlation_id"] == "big"
    resume_after_kill(mariadb, db, config, tmp_path, log, stored, rows, 50)


def resume_after_kill(mariadb: Any, db: str, config: Path, tmp_path: Path, log: Path, stored: dict[str, Any],
                      rows: int, chunk: int) -> None:
    """After :func:`kill_9_mid_snapshot` stored ``stored`` past the first chunk of ``chunk`` rows: a
    row changes, a second run goes on from the stored key to the end of the table (``rows`` rows)."""
    resumed_from = json.loads(stored["incremental_snapshot_primary_key"])[0]
    assert chunk < resumed_from < rows
    assert json.loads(stored["incremental_snapshot_maximum_key"]) == [rows]
    sql(mariadb, db, f"UPDATE items SET label = 'between runs' WHERE id = {rows}")
    second = capture_subprocess(config, tmp_path / "run-1.jsonl", 6.0, log)
    assert second.wait(timeout=400) == 0, log.read_text()[-3000:]
    runs = load_runs([tmp_path / "run-0.jsonl", tmp_path / "run-1.jsonl"])
    assert {p["after"]["id"] for p in reads(runs)} == set(range(1, rows + 1))
    second_reads = [p["after"]["id"] for p in reads(records(tmp_path / "run-1.jsonl"))]
    # went on from the stored key (the chunk in flight at the kill is read again), not from the start
    assert min(second_reads) == resumed_from + 1
    assert len(second_reads) == len(set(second_reads)) == rows - resumed_from
    assert replay(runs) == table_state(mariadb, db)
    assert "incremental_snapshot_collections" not in stored_offset(tmp_path)


def test_conditions_stop_pause_and_resume_after_restart(mariadb: Any, tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    db = "sig_pause"
    setup_db(mariadb, db, 30)
    config = props(tmp_path, mariadb, db, 4)
    out = tmp_path / "out.jsonl"
    # 1. additional condition (Debezium 3's per-collection form), then a stop in the same transaction
    capture = start(mariadb, config, out)
    sql(mariadb, db, signal("cond", "execute-snapshot", {
        "data-collections": [f"{db}.items"], "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": f"{db}.items", "filter": "color = 'blue' AND id <= 10"}]}))
    wait_for(lambda: "incremental snapshot completed" in caplog.text, what="conditional snapshot")
    sql(mariadb, db, "BEGIN", signal("go", "execute-snapshot", {"data-collections": [f"{db}.items"]}),
        signal("halt", "stop-snapshot", {"type": "incremental"}), "COMMIT")
    capture.wait(180)
    recs = records(out)
    assert sorted(p["after"]["id"] for p in reads(recs)) == [2, 4, 6, 8, 10]
    assert "stopping the incremental snapshot (signal 'halt')" in caplog.text
    # 2. execute + pause: only the first chunk is emitted; the offset keeps the progress
    before = len(recs)
    capture = start(mariadb, config, out)
    sql(mariadb, db, "BEGIN", signal("again", "execute-snapshot", {"data-collections": [f"{db}.items"]}),
        signal("wait", "pause-snapshot", None), "COMMIT")
    capture.wait(180)
    recs = records(out)
    assert [p["after"]["id"] for p in reads(recs[before:])] == [1, 2, 3, 4]
    offset = stored_offset(tmp_path)
    assert json.loads(offset["incremental_snapshot_primary_key"]) == [4]
    assert json.loads(offset["incremental_snapshot_maximum_key"]) == [30]
    assert offset["incremental_snapshot_correlation_id"] == "again"
    # 3. resume-snapshot goes on; a second execute-snapshot adds its table to the running one
    sql(mariadb, db, "CREATE TABLE others (id INT PRIMARY KEY, code INT NOT NULL UNIQUE, v VARCHAR(10))",
        "INSERT INTO others VALUES (1, 99, 'a'), (2, 98, 'b'), (3, 97, 'c')")
    config = props(tmp_path, mariadb, db, 4, **{"table.include.list": f"{db}.items,{db}.others"})
    before = len(recs)
    capture = start(mariadb, config, out)
    # the restart already went on from the stored key (a pause is not kept, as in Debezium's offset)
    sql(mariadb, db, signal("more", "execute-snapshot", {"data-collections": [f"{db}.others"],
                                                          "surrogate-key": "code"}),
        signal("go-on", "resume-snapshot", None))
    capture.wait(180)
    recs = records(out)
    assert [p["after"]["id"] for p in reads(recs[before:])] == list(range(5, 31))
    assert [p["after"]["id"] for p in reads(recs[before:], "others")] == [3, 2, 1]  # by code
    assert "incremental_snapshot_collections" not in stored_offset(tmp_path)


def test_blocking_snapshot(mariadb: Any, tmp_path: Path) -> None:
    """``"type": "blocking"``: the tables are read whole right after the signal's event, with the
    initial snapshot's markers and the signal's binlog position, and streaming goes on after it
    without losing the changes made meanwhile."""
    db = "sig_block"
    setup_db(mariadb, db, 6)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 2), out)
    sql(mariadb, db, signal("b-1", "execute-snapshot", {"data-collections": [f"{db}.items"], "type": "blocking"}),
        "UPDATE items SET label = 'after' WHERE id = 6", "INSERT INTO items VALUES (7, 'seven', 'red')")
    capture.wait(180)
    recs = [r for r in records(out) if r.get("value") and "op" in r["value"]["payload"]]
    events = [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["op"]) for r in recs]
    start_at = events.index(("debezium_signal", "c"))
    snapshot = [r["value"]["payload"] for r in recs[start_at + 1:]
                if r["value"]["payload"]["op"] == "r"]
    # rows committed after the signal may be in the snapshot too (at least once, as Debezium)
    assert [p["after"]["id"] for p in snapshot][:6] == [1, 2, 3, 4, 5, 6]
    assert events[start_at + 1:start_at + 1 + len(snapshot)] == [("items", "r")] * len(snapshot)
    markers = [p["source"]["snapshot"] for p in snapshot]
    assert markers[0] == "first" and markers[-1] == "last" and set(markers[1:-1]) <= {"true"}
    signal_source = recs[start_at]["value"]["payload"]["source"]
    assert {(p["source"]["file"], p["source"]["pos"]) for p in snapshot} == \
        {(signal_source["file"], signal_source["pos"])}
    assert events[-2:] == [("items", "u"), ("items", "c")]
    assert replay(recs) == table_state(mariadb, db)
    assert not any("snapshot-window" in json.dumps(r["value"]) for r in recs)


def test_blocking_snapshot_additional_conditions(mariadb: Any, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A blocking snapshot's additional condition is the table's whole SELECT (as Debezium's): one the
    server refuses fails that snapshot with an error naming the table and the statement, nothing of
    it is emitted and streaming goes on; a valid one reads only the rows it selects."""
    caplog.set_level(logging.INFO)
    db = "sig_block_cond"
    setup_db(mariadb, db, 6)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 2), out)
    bad = f"SELECT no_such_column FROM {db}.items"
    red = f"SELECT * FROM {db}.items WHERE color = 'red' ORDER BY id"
    sql(mariadb, db, signal("b-bad", "execute-snapshot", {
            "data-collections": [f"{db}.items"], "type": "blocking",
            "additional-conditions": [{"data-collection": f"{db}.items", "filter": bad}]}),
        "INSERT INTO items VALUES (60, 'between', 'red')",
        signal("b-red", "execute-snapshot", {
            "data-collections": [f"{db}.items"], "type": "blocking",
            "additional-conditions": [{"data-collection": f"{db}.items", "filter": red}]}),
        "UPDATE items SET label = 'after' WHERE id = 2")
    capture.wait(180)
    recs = [r for r in records(out) if r.get("value") and "op" in r["value"]["payload"]]
    events = [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["op"], r["key"]["payload"]["id"]) for r in recs]
    assert events == [("debezium_signal", "c", "b-bad"), ("items", "c", 60), ("debezium_signal", "c", "b-red"),
                      ("items", "r", 1), ("items", "r", 3), ("items", "r", 5), ("items", "r", 60),
                      ("items", "u", 2)]
    snapshot = [r["value"]["payload"] for r in recs[3:7]]
    assert [p["source"]["snapshot"] for p in snapshot] == ["first", "true", "true", "last"]
    state = table_state(mariadb, db)
    assert [p["after"] for p in snapshot] == [state[i] for i in (1, 3, 5, 60)]
    failure = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failure) == 1
    assert f"blocking snapshot of table '{db}.items' failed" in failure[0] and repr(bad) in failure[0]
    assert "no_such_column" in failure[0].split(repr(bad), 1)[1]  # the server's reason follows


def test_signals_work_when_creates_are_skipped(mariadb: Any, tmp_path: Path) -> None:
    """skipped.operations=c hides the signal table's inserts, not the signals (nor the snapshot)."""
    db = "sig_skip"
    setup_db(mariadb, db, 3)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 2, **{"skipped.operations": "c"}), out)
    sql(mariadb, db, signal("s", "execute-snapshot", {"data-collections": [f"{db}.items"]}),
        "INSERT INTO items VALUES (50, 'skipped', 'red')")
    capture.wait(180)
    recs = records(out)
    # row 50 is read too when its insert committed before the snapshot found the maximum key
    assert sorted(p["after"]["id"] for p in reads(recs)) in ([1, 2, 3], [1, 2, 3, 50])
    assert not data_payloads(recs, "debezium_signal")
    assert not any(p["op"] == "c" for p in data_payloads(recs, "items"))


def test_invalid_condition_skips_the_table_and_streaming_goes_on(mariadb: Any, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    db = "sig_bad"
    setup_db(mariadb, db, 3)
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, props(tmp_path, mariadb, db, 2), out)
    sql(mariadb, db, signal("bad", "execute-snapshot", {"data-collections": [f"{db}.items"],
                                                        "additional-condition": "no_such_column = 1"}),
        "INSERT INTO items VALUES (60, 'after', 'red')")
    capture.wait(180)
    recs = records(out)
    assert not reads(recs)
    assert [p["after"]["id"] for p in data_payloads(recs, "items")] == [60]
    assert f"incremental snapshot of table '{db}.items' failed and is skipped" in caplog.text


def test_kafka_signal_channel(mariadb: Any, broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A message keyed with topic.prefix on signal.kafka.topic starts an incremental snapshot;
    one keyed otherwise is skipped; the source channel is off (signal.enabled.channels=kafka), so
    a row inserted into the signal table is no signal."""
    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults

    caplog.set_level(logging.INFO)
    db = "sig_kafka"
    setup_db(mariadb, db, 7)
    topic = f"signals-{tmp_path.name}"[:200]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **kafka_client_defaults("producer")})

    def send(key: str, value: dict[str, Any]) -> None:
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), partition=0)
        assert producer.flush(30) == 0

    send("other-connector", {"type": "execute-snapshot", "data": {"data-collections": [f"{db}.items"]}})
    config = props(tmp_path, mariadb, db, 3, **{"signal.enabled.channels": "kafka", "signal.kafka.topic": topic,
                                                "signal.kafka.bootstrap.servers": broker.bootstrap_servers,
                                                "signal.kafka.groupId": f"g-{tmp_path.name}"})
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, config, out, idle=5.0)
    sql(mariadb, db, signal("ignored", "log", {"message": "not read: the source channel is off"}))
    send("dbz", {"type": "execute-snapshot",
                 "data": {"data-collections": [f"{db}.items"], "type": "INCREMENTAL",
                          "additional-condition": "color = 'red'"}})
    wait_for(lambda: "incremental snapshot completed" in caplog.text, timeout=120, what="the snapshot")
    capture.wait(180)
    recs = records(out)
    assert sorted(p["after"]["id"] for p in reads(recs)) == [1, 3, 5, 7]
    assert "has key 'other-connector', not this connector's topic.prefix 'dbz': skipped" in caplog.text
    assert "from the kafka channel" in caplog.text
    assert "not read: the source channel is off" not in caplog.text


def test_composite_key_chunks_resume_from_the_offset(mariadb: Any, tmp_path: Path) -> None:
    """A two-column key (INT, VARCHAR): chunks follow the key order through Debezium's written-out
    bounds, and a paused snapshot restarts from the stored (JSON) key after a restart."""
    db = "sig_composite"
    fresh_database(mariadb, db)
    values = ",".join(f"({g}, '{code}', {g * 10 + i})" for g in (1, 2, 3) for i, code in enumerate("abcd"))
    sql(mariadb, db, SIGNAL_TABLE, "CREATE TABLE pairs (g INT, code VARCHAR(5), v INT, PRIMARY KEY (g, code))",
        f"INSERT INTO pairs VALUES {values}")
    config = write_properties(tmp_path / "c.properties", mariadb, db, **{
        "table.include.list": f"{db}.pairs", "snapshot.mode": "no_data",
        "signal.data.collection": f"{db}.debezium_signal", "incremental.snapshot.chunk.size": "5"})
    out = tmp_path / "out.jsonl"
    capture = start(mariadb, config, out)
    sql(mariadb, db, "BEGIN", signal("pairs", "execute-snapshot", {"data-collections": [f"{db}.pairs"]}),
        signal("hold", "pause-snapshot", None), "COMMIT")
    capture.wait(180)
    first = [(p["after"]["g"], p["after"]["code"]) for p in reads(records(out), "pairs")]
    assert first == [(1, "a"), (1, "b"), (1, "c"), (1, "d"), (2, "a")]
    assert json.loads(stored_offset(tmp_path)["incremental_snapshot_primary_key"]) == [2, "a"]
    before = len(records(out))
    start(mariadb, config, out).wait(180)
    rest = [(p["after"]["g"], p["after"]["code"]) for p in reads(records(out)[before:], "pairs")]
    assert rest == [(2, "b"), (2, "c"), (2, "d"), (3, "a"), (3, "b"), (3, "c"), (3, "d")]
