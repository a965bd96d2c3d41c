"""Signals and incremental snapshots on a real PostgreSQL (18): the source signaling channel,
``log``/unknown actions, ``execute-snapshot`` (chunks, additional conditions, concurrent changes),
``stop-snapshot``, ``pause-snapshot`` and resuming from the offset after a restart."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from incremental_checks import (
    assert_untouched_rows_have_one_read,
    check_signals_and_windows,
    kill_9_mid_snapshot,
    load_runs,
    reads,
    replay,
    start_churn,
)
from pg_capture_support import (
    CaptureThread,
    fresh_database,
    load_records,
    slot_is_streaming,
    wait_for,
    write_properties,
)

pytestmark = pytest.mark.integration

DB = "signals"
SIGNAL_TABLE = ("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
                "data varchar(2048))")


def execute(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def setup_db(pg: Any, rows: int) -> str:
    dsn = fresh_database(pg, DB)
    execute(dsn, SIGNAL_TABLE, "CREATE TABLE items (id int PRIMARY KEY, label text, color text)",
            f"INSERT INTO items SELECT g, 'item' || g, CASE WHEN g % 2 = 0 THEN 'blue' ELSE 'red' END "
            f"FROM generate_series(1, {rows}) g")
    return dsn


def props(tmp_path: Path, pg: Any, chunk: int, **extra: str) -> Path:
    return write_properties(tmp_path / "c.properties", pg, DB, {
        "table.include.list": "public.items", "snapshot.mode": "no_data",
        "signal.data.collection": "public.debezium_signal", "incremental.snapshot.chunk.size": str(chunk),
        **extra})


def signal(signal_id: str, kind: str, data: dict[str, Any] | None) -> str:
    text = "NULL" if data is None else "'" + json.dumps(data).replace("'", "''") + "'"
    return f"INSERT INTO debezium_signal VALUES ('{signal_id}', '{kind}', {text})"


def start(config: Path, out: Path, dsn: str, idle: float = 4.0) -> CaptureThread:
    capture = CaptureThread(config, out, stop_when_idle=idle).start()
    wait_for(lambda: slot_is_streaming(dsn, f"{DB}_slot"), what="streaming")
    return capture


def table_state(dsn: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        return {r[0]: {"id": r[0], "label": r[1], "color": r[2]}
                for r in conn.execute("SELECT id, label, color FROM items").fetchall()}


def test_signals_and_incremental_snapshot(pg: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    dsn = setup_db(pg, 12)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 5), out, dsn)
    execute(dsn, signal("s-log", "log", {"message": "hello from signal at {}"}),
            signal("s-bogus", "no-such-action", {}),
            signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"}),
            "UPDATE items SET label = 'changed' WHERE id = 3")
    capture.wait(180)
    records = load_records(out)
    snapshot = reads(records)
    assert sorted(p["after"]["id"] for p in snapshot) == list(range(1, 13))
    assert {p["source"]["snapshot"] for p in snapshot} == {"incremental"}
    assert all(p["source"]["lsn"] is None and p["source"]["txId"] is None for p in snapshot)
    assert replay(records) == table_state(dsn)
    check_signals_and_windows(records, caplog.text)
    offsets = json.loads((tmp_path / "c.offsets.json").read_text())
    assert not any("incremental_snapshot" in json.dumps(v) for v in offsets.values())


def test_incremental_snapshot_with_concurrent_changes(pg: Any, tmp_path: Path) -> None:
    """Updates, deletes and inserts race the chunk reads: replaying the events in order gives the
    table's final content (a streamed change inside a window wins over the chunk's row)."""
    dsn = setup_db(pg, 3000)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 100), out, dsn, idle=5.0)
    stop = threading.Event()

    conn = psycopg.connect(dsn, autocommit=True)
    worker, _ = start_churn(lambda statement, params: conn.execute(statement, params), 3000,
                            "UPDATE items SET label = label || '+' WHERE id = %s", stop)
    try:
        execute(dsn, signal("ad-hoc", "execute-snapshot", {"data-collections": ["public\\.it.*"]}))
        wait_for(lambda: out.exists() and out.read_text().count("snapshot-window-close") >= 10, timeout=240,
                 what="ten snapshot windows")
    finally:
        stop.set()
        worker.join(30)
        conn.close()
    capture.wait(300)
    records = load_records(out)
    final = table_state(dsn)
    assert replay(records) == final
    assert_untouched_rows_have_one_read(records, final)


def test_conditions_stop_pause_and_resume_after_restart(pg: Any, tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    dsn = setup_db(pg, 30)
    config = props(tmp_path, pg, 4)
    out = tmp_path / "out.jsonl"
    # 1. additional condition (Debezium 3's per-collection form), then a stop in the same transaction
    capture = start(config, out, dsn)
    execute(dsn, signal("cond", "execute-snapshot", {
        "data-collections": ["public.items"], "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": "public.items", "filter": "color = 'blue' AND id <= 10"}]}))
    wait_for(lambda: "incremental snapshot completed" in caplog.text, what="conditional snapshot")
    execute(dsn, "BEGIN", signal("go", "execute-snapshot", {"data-collections": ["public.items"]}),
            signal("halt", "stop-snapshot", {"type": "incremental"}), "COMMIT")
    capture.wait(180)
    records = load_records(out)
    assert sorted(p["after"]["id"] for p in reads(records)) == [2, 4, 6, 8, 10]
    assert "stopping the incremental snapshot (signal 'halt')" in caplog.text
    # 2. execute + pause: only the first chunk is emitted; the offset keeps the progress
    before = len(records)
    capture = start(config, out, dsn)
    execute(dsn, "BEGIN", signal("again", "execute-snapshot", {"data-collections": ["public.items"]}),
            signal("wait", "pause-snapshot", None), "COMMIT")
    capture.wait(180)
    records = load_records(out)
    assert [p["after"]["id"] for p in reads(records[before:])] == [1, 2, 3, 4]
    offset = next(iter(json.loads((tmp_path / "c.offsets.json").read_text()).values()))
    assert json.loads(offset["incremental_snapshot_primary_key"]) == ["4"]
    assert json.loads(offset["incremental_snapshot_maximum_key"]) == ["30"]
    assert json.loads(offset["incremental_snapshot_collections"])[0]["incremental_snapshot_collections_id"] == \
        "public.items"
    # 3. a restart goes on from the stored key (pause is not kept, as it is not in Debezium's offset)
    before = len(records)
    start(config, out, dsn).wait(180)
    records = load_records(out)
    assert [p["after"]["id"] for p in reads(records[before:])] == list(range(5, 31))
    offset = next(iter(json.loads((tmp_path / "c.offsets.json").read_text()).values()))
    assert "incremental_snapshot_collections" not in offset


def test_kafka_signal_channel(pg: Any, broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A message keyed with topic.prefix on signal.kafka.topic starts an incremental snapshot;
    one keyed otherwise is skipped."""
    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults

    caplog.set_level(logging.INFO)
    dsn = setup_db(pg, 7)
    topic = f"signals-{tmp_path.name}"[:200]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **kafka_client_defaults("producer")})

    def send(key: str, value: dict[str, Any]) -> None:
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), partition=0)
        assert producer.flush(30) == 0

    send("other-connector", {"type": "execute-snapshot", "data": {"data-collections": ["public.items"]}})
    config = props(tmp_path, pg, 3, **{"signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic,
                                       "signal.kafka.bootstrap.servers": broker.bootstrap_servers,
                                       "signal.kafka.groupId": f"g-{tmp_path.name}"})
    out = tmp_path / "out.jsonl"
    capture = start(config, out, dsn, idle=5.0)
    send("dbz", {"type": "execute-snapshot",
                 "data": {"data-collections": ["public.items"], "type": "INCREMENTAL",
                          "additional-condition": "color = 'red'"}})
    wait_for(lambda: "incremental snapshot completed" in caplog.text, timeout=120, what="the snapshot")
    capture.wait(180)
    records = load_records(out)
    assert sorted(p["after"]["id"] for p in reads(records)) == [1, 3, 5, 7]
    assert "has key 'other-connector', not this connector's topic.prefix 'dbz': skipped" in caplog.text
    assert "from the kafka channel" in caplog.text


def test_blocking_snapshot(pg: Any, tmp_path: Path) -> None:
    """``"type": "blocking"``: the tables are read whole right after the signal's event, with the
    initial snapshot's markers, and streaming goes on afterwards."""
    dsn = setup_db(pg, 6)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 2), out, dsn)
    execute(dsn, signal("b-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "blocking"}),
            "UPDATE items SET label = 'after' WHERE id = 6")
    capture.wait(180)
    records = [r for r in load_records(out) if r["value"]]
    ops = [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["op"]) for r in records]
    start_at = ops.index(("debezium_signal", "c"))
    assert ops[start_at + 1:start_at + 7] == [("items", "r")] * 6
    snapshot = [r["value"]["payload"] for r in records[start_at + 1:start_at + 7]]
    assert [p["source"]["snapshot"] for p in snapshot] == ["first", "true", "true", "true", "true", "last"]
    assert ops[-1] == ("items", "u")
    assert replay(records) == table_state(dsn)
    # no watermark: a blocking snapshot does not use the signal table
    assert not any("snapshot-window" in json.dumps(r["value"]) for r in records)


def test_blocking_snapshot_additional_conditions(pg: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A blocking snapshot's additional condition is the table's whole SELECT (as Debezium's): one the
    database refuses fails that snapshot with an error naming the table and the statement, nothing
    of it is emitted and streaming goes on; a valid one reads only the rows it selects."""
    caplog.set_level(logging.INFO)
    dsn = setup_db(pg, 6)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 2), out, dsn)
    bad = "SELECT no_such_column FROM public.items"
    red = "SELECT * FROM public.items WHERE color = 'red' ORDER BY id"
    execute(dsn, signal("b-bad", "execute-snapshot", {
                "data-collections": ["public.items"], "type": "blocking",
                "additional-conditions": [{"data-collection": "public.items", "filter": bad}]}),
            "INSERT INTO items VALUES (60, 'between', 'red')",
            signal("b-red", "execute-snapshot", {
                "data-collections": ["public.items"], "type": "blocking",
                "additional-conditions": [{"data-collection": "public.items", "filter": red}]}),
            "UPDATE items SET label = 'after' WHERE id = 2")
    capture.wait(180)
    records = [r for r in load_records(out) if r["value"]]
    events = [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["op"], r["key"]["payload"]["id"])
              for r in records]
    assert events == [("debezium_signal", "c", "b-bad"), ("items", "c", 60), ("debezium_signal", "c", "b-red"),
                      ("items", "r", 1), ("items", "r", 3), ("items", "r", 5), ("items", "r", 60),
                      ("items", "u", 2)]
    snapshot = [r["value"]["payload"] for r in records[3:7]]
    assert [p["source"]["snapshot"] for p in snapshot] == ["first", "true", "true", "last"]
    state = table_state(dsn)
    assert [p["after"] for p in snapshot] == [state[i] for i in (1, 3, 5, 60)]
    failure = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failure) == 1
    assert "blocking snapshot of table 'public.items' failed" in failure[0] and repr(bad) in failure[0]
    assert "no_such_column" in failure[0].split(repr(bad), 1)[1]  # the database's reason follows


def test_signals_work_when_creates_are_skipped(pg: Any, tmp_path: Path) -> None:
    """skipped.operations=c hides the signal table's inserts, not the signals (nor the snapshot)."""
    dsn = setup_db(pg, 3)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 2, **{"skipped.operations": "c"}), out, dsn)
    execute(dsn, signal("s", "execute-snapshot", {"data-collections": ["public.items"]}),
            "INSERT INTO items VALUES (50, 'skipped', 'red')")
    capture.wait(180)
    records = load_records(out)
    # row 50 is read too when its insert committed before the snapshot found the maximum key
    assert sorted(p["after"]["id"] for p in reads(records)) in ([1, 2, 3], [1, 2, 3, 50])
    assert not any(r["topic"] == "dbz.public.debezium_signal" for r in records)
    assert not any(r["value"] and r["value"]["payload"]["op"] == "c" for r in records)


def test_stop_one_table_and_surrogate_key(pg: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """stop-snapshot naming one table drops only it; surrogate-key orders the chunks by that column."""
    caplog.set_level(logging.INFO)
    dsn = setup_db(pg, 4)
    execute(dsn, "CREATE TABLE others (id int PRIMARY KEY, code int UNIQUE NOT NULL, v text)",
            "INSERT INTO others SELECT g, 100 - g, 'v' || g FROM generate_series(1, 5) g")
    out = tmp_path / "out.jsonl"
    config = props(tmp_path, pg, 2, **{"table.include.list": "public.items,public.others"})
    capture = start(config, out, dsn)
    execute(dsn, "BEGIN", signal("both", "execute-snapshot", {"data-collections": ["public.items", "public.others"]}),
            signal("not-items", "stop-snapshot", {"data-collections": ["public.items"], "type": "incremental"}),
            "COMMIT")
    wait_for(lambda: "incremental snapshot completed" in caplog.text, what="the first snapshot")
    execute(dsn, signal("by-code", "execute-snapshot", {"data-collections": ["public.others"],
                                                        "surrogate-key": "code"}))
    capture.wait(180)
    records = load_records(out)
    others = [r["value"]["payload"]["after"]["id"] for r in records if r["topic"] == "dbz.public.others"
              and r["value"]["payload"]["op"] == "r"]
    assert others == [1, 2, 3, 4, 5] + [5, 4, 3, 2, 1]  # by id, then by code (100 - id)
    assert not reads(records)
    assert "removing ['public.items'] from the incremental snapshot (signal 'not-items')" in caplog.text


def test_invalid_condition_skips_the_table_and_streaming_goes_on(pg: Any, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    dsn = setup_db(pg, 3)
    out = tmp_path / "out.jsonl"
    capture = start(props(tmp_path, pg, 2), out, dsn)
    execute(dsn, signal("bad", "execute-snapshot", {"data-collections": ["public.items"],
                                                    "additional-condition": "no_such_column = 1"}),
            "INSERT INTO items VALUES (60, 'after', 'red')")
    capture.wait(180)
    records = load_records(out)
    assert not reads(records)
    assert [r["key"]["payload"]["id"] for r in records if r["topic"] == "dbz.public.items"] == [60]
    assert "incremental snapshot of table 'public.items' failed and is skipped" in caplog.text


def test_kill_9_mid_snapshot_resumes_without_losing_rows(pg: Any, tmp_path: Path) -> None:
    """A capture killed while an incremental snapshot runs (progress already in the offset) goes on
    after a restart: every row has a read event across the runs, and replaying all events gives the
    table."""
    from pg_capture_support import capture_subprocess

    dsn = setup_db(pg, 20000)  # 400 chunks: the kill lands well inside the snapshot
    config = props(tmp_path, pg, 50, **{"offset.flush.interval.ms": "200"})
    offsets = tmp_path / "c.offsets.json"
    log = tmp_path / "capture.log"
    first = capture_subprocess(config, tmp_path / "run-0.jsonl", None, log)
    stored = kill_9_mid_snapshot(
        first, lambda: slot_is_streaming(dsn, f"{DB}_slot"),
        lambda: execute(dsn, signal("big", "execute-snapshot", {"data-collections": ["public.items"]})),
        offsets, '\\"50\\"', wait_for)
    resumed_from = int(json.loads(stored["incremental_snapshot_primary_key"])[0])
    assert 0 < resumed_from < 20000
    execute(dsn, "UPDATE items SET label = 'between runs' WHERE id = 20000")
    second = capture_subprocess(config, tmp_path / "run-1.jsonl", 6.0, log)
    assert second.wait(timeout=300) == 0, log.read_text()[-3000:]
    runs = load_runs([tmp_path / "run-0.jsonl", tmp_path / "run-1.jsonl"])
    assert {p["after"]["id"] for p in reads(runs)} == set(range(1, 20001))
    second_run_reads = [p["after"]["id"] for p in reads([json.loads(x) for x in
                                                         (tmp_path / "run-1.jsonl").read_text().splitlines()])]
    assert min(second_run_reads) > resumed_from - 1  # went on from the stored key, not from the start
    assert replay(runs) == table_state(dsn)
