"""Signals and incremental snapshots on SQL Server, from recorded answers.

The signal table ``testDB.dbo.debezium_signal`` is CDC-enabled: a signal is an insert read from its
change table, and the watermark rows the connector inserts (recorded statements) come back through
the same change table in a later pass, merged in commit order with ``dbo.customers``' changes.
Watermark ids and timestamps are fixed (``chunk_ids``) so that the recording can name them.
"""

from __future__ import annotations

import json
import logging
import types
from pathlib import Path
from typing import Any

import pytest
from sqlserver_recordings import CUSTOMERS, RecordedServer
from test_sqlserver_seed_golden import after, run
from test_sqlserver_streaming import START, data, streaming_only

import lakecdc.capture.incremental as incremental_module

COLS = [c[0] for c in CUSTOMERS]
SIGNAL = "testDB.dbo.debezium_signal"
SIGNAL_TOPIC = "server1.testDB.dbo.debezium_signal"
SIGNAL_COLUMNS = [("id", "varchar", 42, None, None, None, "NO"), ("type", "varchar", 32, None, None, None, "NO"),
                  ("data", "varchar", 2048, None, None, None, "YES")]
TS = "2026-11-22T20:00:00.000000000Z"
OPEN_DATA = json.dumps({"openWindowTimestamp": TS})
CLOSE_DATA = json.dumps({"openWindowTimestamp": TS, "closeWindowTimestamp": TS})
INSERT = "INSERT INTO [testDB].[dbo].[debezium_signal] VALUES (%s, %s, %s)"
SELECT = "SELECT TOP 2 [id], [first_name], [last_name], [email] FROM [testDB].[dbo].[customers]"
MAX_KEY = "SELECT TOP 1 [id] FROM [testDB].[dbo].[customers] ORDER BY [id] DESC"
FIRST_CHUNK = f"{SELECT} WHERE (NOT (([id] > %s))) ORDER BY [id]"
NEXT_CHUNK = f"{SELECT} WHERE (([id] > %s)) AND (NOT (([id] > %s))) ORDER BY [id]"
ROWS = {1001: (1001, "Sally", "Thomas", "sally.thomas@acme.com"),
        1002: (1002, "George", "Bailey", "gbailey@foobar.com"),
        1003: (1003, "Edward", "Walker", "ed@walker.com")}
PROPS = {"signal.data.collection": SIGNAL, "incremental.snapshot.chunk.size": "2"}


@pytest.fixture
def chunk_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Window ids c1, c2, ... and a fixed timestamp instead of random UUIDs and the clock."""
    counter = iter(range(1, 1000))
    monkeypatch.setattr(incremental_module, "uuid", types.SimpleNamespace(uuid4=lambda: f"c{next(counter)}"))
    monkeypatch.setattr(incremental_module, "instant", lambda: TS)


def signal_server() -> RecordedServer:
    server = RecordedServer().cdc_database()
    server.user_tables(("dbo", "customers", True), ("dbo", "debezium_signal", True))
    server.instances([
        RecordedServer.instance_row("dbo", "customers", "dbo_customers", "00000024:00000100:0001", COLS),
        RecordedServer.instance_row("dbo", "debezium_signal", "dbo_debezium_signal", "00000024:00000100:0001",
                                    ["id", "type", "data"])])
    server.columns("dbo", "customers", CUSTOMERS, ["id"])
    server.columns("dbo", "debezium_signal", SIGNAL_COLUMNS, ["id"])
    return server


def lsn_at(n: int) -> str:
    return f"00000030:{n:08x}:0005"


def seq_at(n: int) -> str:
    return f"00000030:{n:08x}:0002"


def pass_rows(server: RecordedServer, frm: str, to: str, signal_rows: list[tuple[Any, ...]],
              customer_rows: list[tuple[Any, ...]] = ()) -> None:
    """One pass's change rows, each ``(n, operation, values...)`` at commit lsn_at(n)."""
    for instance, columns, rows in (("dbo_debezium_signal", ["id", "type", "data"], signal_rows),
                                    ("dbo_customers", COLS, list(customer_rows))):
        server.changes(instance, after(frm), to, columns,
                       [(lsn_at(n), seq_at(n), op, *values) for n, op, *values in rows])
        for n, *_ in rows:
            server.lsn_time(lsn_at(n), 1_700_000_000_000 + n)


def window(server: RecordedServer, chunk: str) -> None:
    server.rec.add(INSERT, (f"{chunk}-open", "snapshot-window-open", OPEN_DATA), None)
    server.rec.add(INSERT, (f"{chunk}-close", "snapshot-window-close", CLOSE_DATA), None)


def watermarks(n: int, chunk: str) -> list[tuple[Any, ...]]:
    """The open (at n) and close (at n + 2) rows of window ``chunk`` in the signal change table."""
    return [(n, 2, f"{chunk}-open", "snapshot-window-open", OPEN_DATA),
            (n + 2, 2, f"{chunk}-close", "snapshot-window-close", CLOSE_DATA)]


def chunks(server: RecordedServer) -> None:
    """customers holds 1001..1003: max key 1003, chunks [1001, 1002], [1003], [] (chunk size 2)."""
    server.rec.add(MAX_KEY, None, server_result(["id"], [(1003,)]))
    server.rec.add(FIRST_CHUNK, (1003,), server_result(COLS, [ROWS[1001], ROWS[1002]]))
    server.rec.add(NEXT_CHUNK, (1002, 1003), server_result(COLS, [ROWS[1003]]))
    server.rec.add(NEXT_CHUNK, (1003, 1003), server_result(COLS, []))


def server_result(names: list[str], rows: list[tuple[Any, ...]]) -> Any:
    from sqlserver_replay import ResultSet

    return ResultSet.of(names, rows) if rows else ResultSet([(n, 1) for n in names], [])


def execute_signal(n: int, data_collections: list[str]) -> tuple[Any, ...]:
    return (n, 2, "ad-hoc-1", "execute-snapshot", json.dumps({"data-collections": data_collections,
                                                              "type": "incremental"}))


def whole_snapshot(c1_changes: list[tuple[Any, ...]] | None = None) -> RecordedServer:
    """The signal, then windows c1 (with ``c1_changes`` of customers inside), c2 and c3 in passes of
    their own: the whole snapshot of customers."""
    server = signal_server()
    server.passes(START, lsn_at(1), lsn_at(14), lsn_at(24), lsn_at(34))
    chunks(server)
    for chunk in ("c1", "c2", "c3"):
        window(server, chunk)
    pass_rows(server, START, lsn_at(1), [execute_signal(1, [r"testDB\.dbo\.customers"])])
    pass_rows(server, lsn_at(1), lsn_at(14), watermarks(10, "c1"), c1_changes or [])
    pass_rows(server, lsn_at(14), lsn_at(24), watermarks(20, "c2"))
    pass_rows(server, lsn_at(24), lsn_at(34), watermarks(30, "c3"))
    return server


def test_log_signal_from_the_signal_change_table(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level("INFO")
    server = signal_server()
    server.passes(START, lsn_at(1))
    pass_rows(server, START, lsn_at(1), [(1, 2, "s-1", "log", json.dumps({"message": "signal at {}"}))])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    messages = [r.getMessage() for r in caplog.records if r.name == "lakecdc.signal"]
    # {} is the signal's own stream position
    assert messages == [f"signal at {{'commit_lsn': '{lsn_at(1)}', 'change_lsn': '{seq_at(1)}', 'event_serial_no': 1}}"]
    # the signal row's own event is emitted on the signal table's topic, as Debezium does
    assert [(r.op, r.key) for r in data(sink.records, SIGNAL_TOPIC)] == [("c", {"id": "s-1"})]
    assert server.rec.served(INSERT, ("x", "x", "x")) == 0


def test_incremental_snapshot_reads_chunks_in_windows_and_drops_rows_changed_inside(
        tmp_path: Path, chunk_ids: None) -> None:
    # window c1 (rows 1001, 1002): 1002 is updated inside it, 1001 after its close
    server = whole_snapshot([(11, 3, *ROWS[1002]), (11, 4, 1002, "George", "Bailey", "george@new.com"),
                             (13, 3, *ROWS[1001]), (13, 4, 1001, "Sally", "Thomas", "sally@new.com")])
    streaming_only(server, tmp_path)
    sink, store, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    events = [(r.op, r.key["id"]) for r in data(sink.records)]
    # 1002's read is dropped (its update in the window is newer); 1001's read precedes its later update
    assert events == [("u", 1002), ("r", 1001), ("u", 1001), ("r", 1003)]
    reads = [r for r in data(sink.records) if r.value["op"] == "r"]
    assert reads[0].value["after"] == {"id": 1001, "first_name": "Sally", "last_name": "Thomas",
                                       "email": "sally.thomas@acme.com"}
    assert reads[0].value["before"] is None
    src = reads[0].value["source"]
    assert (src["snapshot"], src["db"], src["schema"], src["table"]) == ("incremental", "testDB", "dbo", "customers")
    # the read carries the close watermark's position
    assert (src["commit_lsn"], src["change_lsn"], src["event_serial_no"]) == (lsn_at(12), seq_at(12), 1)
    assert reads[1].value["source"]["commit_lsn"] == lsn_at(22)
    assert server.rec.served(NEXT_CHUNK, (1003, 1003)) == 1  # the empty chunk that ends the table
    # finished: no snapshot state left in the offset
    stored = json.loads((tmp_path / "offsets.json").read_text())
    (offset,) = stored.values()
    assert "incremental_snapshot_collections" not in offset and offset["commit_lsn"] == lsn_at(34)


@pytest.mark.parametrize("transactions", ["false", "true"])
def test_restart_resumes_at_the_next_chunk_from_the_offset(tmp_path: Path, chunk_ids: None, transactions: str) -> None:
    """Also with transaction metadata, where offsets are stored only after a transaction's END."""
    server = signal_server()
    server.passes(START, lsn_at(1), lsn_at(14))
    chunks(server)
    for chunk in ("c1", "c2", "c3", "c4"):
        window(server, chunk)
    pass_rows(server, START, lsn_at(1), [execute_signal(1, [r"testDB\.dbo\.customers"])])
    pass_rows(server, lsn_at(1), lsn_at(14), watermarks(10, "c1"))
    streaming_only(server, tmp_path)
    props = {k.replace(".", "__"): v for k, v in PROPS.items()}
    props["provide__transaction__metadata"] = transactions
    first, _, _ = run(server, tmp_path, **props)
    assert [(r.op, r.key["id"]) for r in data(first.records)] == [("r", 1001), ("r", 1002)]
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert offset["incremental_snapshot_primary_key"] == "[1002]"
    assert offset["incremental_snapshot_maximum_key"] == "[1003]"
    assert offset["incremental_snapshot_correlation_id"] == "ad-hoc-1"
    assert json.loads(offset["incremental_snapshot_collections"])[0]["incremental_snapshot_collections_id"] == \
        "testDB.dbo.customers"
    # window c2 was written before the stop and is never closed for this run: after the restart the
    # snapshot goes on with a new window (c3) from the last emitted key; c2's rows are ignored
    server.passes(lsn_at(14), lsn_at(24), lsn_at(34))
    pass_rows(server, lsn_at(14), lsn_at(24), watermarks(15, "c2") + watermarks(20, "c3"))
    pass_rows(server, lsn_at(24), lsn_at(34), watermarks(30, "c4"))
    second, _, _ = run(server, tmp_path, **props)
    assert [(r.op, r.key["id"]) for r in data(second.records)] == [("r", 1003)]
    assert server.rec.served(MAX_KEY) == 1  # the maximum key came from the offset
    assert server.rec.served(NEXT_CHUNK, (1002, 1003)) == 2  # chunk [1003] read again in the new window
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert "incremental_snapshot_collections" not in offset


def test_stop_pause_and_resume_signals(tmp_path: Path, chunk_ids: None) -> None:
    server = signal_server()
    server.passes(START, lsn_at(1), lsn_at(14), lsn_at(24), lsn_at(34))
    chunks(server)
    for chunk in ("c1", "c2"):
        window(server, chunk)
    pass_rows(server, START, lsn_at(1), [
        execute_signal(1, [r"testDB\.dbo\.customers"]),
        ])
    # paused inside window c1: its close emits the chunk, the next chunk waits for resume
    pass_rows(server, lsn_at(1), lsn_at(14), [
        watermarks(10, "c1")[0], (11, 2, "p-1", "pause-snapshot", "{}"), watermarks(10, "c1")[1]])
    pass_rows(server, lsn_at(14), lsn_at(24), [(20, 2, "r-1", "resume-snapshot", "{}")])
    # stop inside window c2: the chunk in the buffer is dropped, no further chunk
    pass_rows(server, lsn_at(24), lsn_at(34), [
        watermarks(30, "c2")[0], (31, 2, "x-1", "stop-snapshot", json.dumps({"type": "incremental"})),
        watermarks(30, "c2")[1]])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    assert [(r.op, r.key["id"]) for r in data(sink.records)] == [("r", 1001), ("r", 1002)]
    assert server.rec.served(NEXT_CHUNK, (1002, 1003)) == 1  # read once, after the resume
    assert server.rec.served(NEXT_CHUNK, (1003, 1003)) == 0  # stopped: no further chunk
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert "incremental_snapshot_collections" not in offset


def test_blocking_snapshot_reads_the_tables_after_the_signal(tmp_path: Path) -> None:
    server = signal_server()
    server.passes(START, lsn_at(3))
    blocking = json.dumps({"data-collections": [r"testDB\.dbo\.customers"], "type": "blocking"})
    pass_rows(server, START, lsn_at(3), [(1, 2, "b-1", "execute-snapshot", blocking)],
              [(2, 2, 1004, "Anne", "Kretchmar", "annek@noanswer.org")])
    server.snapshot_locks([("dbo", "customers")])
    server.snapshot_rows("dbo", "customers", COLS, [ROWS[1001], ROWS[1002], ROWS[1003]])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    signal_event = data(sink.records, SIGNAL_TOPIC)[0]
    # the signal's own event, then the snapshot's rows, then streaming goes on
    at = sink.records.index(signal_event)
    rows = [r for r in sink.records[at + 1:] if r.topic == "server1.testDB.dbo.customers"]
    assert [(r.op, r.key["id"]) for r in rows] == [("r", 1001), ("r", 1002), ("r", 1003), ("c", 1004)]
    reads = [r.value["source"] for r in rows[:3]]
    assert [s["snapshot"] for s in reads] == ["first", "true", "last"]
    assert {(s["commit_lsn"], s["change_lsn"], s["event_serial_no"]) for s in reads} == {(lsn_at(1), None, None)}
    assert rows[0].value["after"] == {"id": 1001, "first_name": "Sally", "last_name": "Thomas",
                                      "email": "sally.thomas@acme.com"}
    assert server.rec.served(f"SELECT {', '.join(f'[{c}]' for c in COLS)} FROM [testDB].[dbo].[customers]") == 1


def test_blocking_snapshot_additional_conditions(tmp_path: Path, caplog: Any) -> None:
    """A blocking snapshot's additional condition is the table's whole SELECT (as Debezium's), its
    data-collection the table with or without the database: a statement the server refuses fails
    that snapshot, naming the table and the statement, and streaming goes on; a valid one reads
    only its rows."""
    caplog.set_level("INFO")
    from sqlserver_replay import ResultSet

    server = signal_server()
    server.passes(START, lsn_at(4))
    bad = "SELECT [nope] FROM [testDB].[dbo].[customers]"
    some = "SELECT * FROM [testDB].[dbo].[customers] WHERE [id] > 1001"

    def blocking(collection: str, select: str) -> str:
        return json.dumps({"data-collections": [r"testDB\.dbo\.customers"], "type": "blocking",
                           "additional-conditions": [{"data-collection": collection, "filter": select}]})

    pass_rows(server, START, lsn_at(4), [(1, 2, "b-bad", "execute-snapshot", blocking("testDB.dbo.customers", bad)),
                                         (2, 2, "b-some", "execute-snapshot", blocking("dbo.customers", some))],
              [(3, 2, 1004, "Anne", "Kretchmar", "annek@noanswer.org")])
    server.snapshot_locks([("dbo", "customers")])
    server.rec.add(bad, None, ResultSet([], error="(207, b\"Invalid column name 'nope'.\")",
                                        error_class="ProgrammingError"))
    server.rec.add(some, None, server_result(COLS, [ROWS[1002], ROWS[1003]]))
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    events = [(r.topic.rsplit(".", 1)[1], r.op, r.key["id"]) for r in sink.records
              if r.topic in (SIGNAL_TOPIC, "server1.testDB.dbo.customers")]
    assert events == [("debezium_signal", "c", "b-bad"), ("debezium_signal", "c", "b-some"),
                      ("customers", "r", 1002), ("customers", "r", 1003), ("customers", "c", 1004)]
    reads = [r.value["source"] for r in data(sink.records, "server1.testDB.dbo.customers")[:2]]
    assert [s["snapshot"] for s in reads] == ["first", "last"]
    assert {s["commit_lsn"] for s in reads} == {lsn_at(2)}
    assert server.rec.served(bad) == 1 and server.rec.served(some) == 1
    failure = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failure) == 1
    assert "blocking snapshot of table 'testDB.dbo.customers' failed" in failure[0] and repr(bad) in failure[0]
    assert "Invalid column name 'nope'" in failure[0]


def test_kafka_channel_starts_an_incremental_snapshot(tmp_path: Path, chunk_ids: None, broker: Any,
                                                      caplog: Any) -> None:
    """signal.enabled.channels=kafka: a message keyed with topic.prefix is a signal, one keyed
    otherwise is skipped, and a signal-table row is no signal (the source channel is off); the
    watermarks still come back through the signal table's change table."""
    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults

    caplog.set_level("INFO")
    topic = f"signals-{tmp_path.name}"[:200]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **kafka_client_defaults("producer")})
    for key in ("other-connector", "server1"):
        value = {"type": "execute-snapshot", "data": {"data-collections": [r"testDB\.dbo\.customers"]}}
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), partition=0)
    log_signal = {"type": "log", "data": {"message": "kafka log at {}"}}
    producer.produce(topic, key=b"server1", value=json.dumps(log_signal).encode(), partition=0)
    assert producer.flush(30) == 0
    server = signal_server()
    server.passes(START)  # nothing new until the first watermark is written (the signal is in Kafka)
    answer = server.rec.answer

    def then_changes(sql: str, params: Any) -> Any:
        result = answer(sql, params)
        if params is not None and params[0] == "c1-open":
            server.passes(START, lsn_at(1), lsn_at(14), lsn_at(24), lsn_at(34))
        return result

    server.rec.answer = then_changes  # type: ignore[method-assign]
    chunks(server)
    for chunk in ("c1", "c2", "c3"):
        window(server, chunk)
    pass_rows(server, START, lsn_at(1), [(1, 2, "s-1", "log", json.dumps({"message": "not read: source is off"}))])
    pass_rows(server, lsn_at(1), lsn_at(14), watermarks(10, "c1"))
    pass_rows(server, lsn_at(14), lsn_at(24), watermarks(20, "c2"))
    pass_rows(server, lsn_at(24), lsn_at(34), watermarks(30, "c3"))
    streaming_only(server, tmp_path)
    props = {**PROPS, "signal.enabled.channels": "kafka", "signal.kafka.topic": topic,
             "signal.kafka.bootstrap.servers": broker.bootstrap_servers, "signal.kafka.groupId": f"g-{tmp_path.name}"}
    # the idle stop waits long enough for the consumer's first fetch on a loaded machine
    sink, _, _ = run(server, tmp_path, idle_s=15.0, replay_stop=False,
                     **{k.replace(".", "__"): v for k, v in props.items()})
    assert sorted(r.key["id"] for r in data(sink.records) if r.value["op"] == "r") == [1001, 1002, 1003]
    assert server.rec.served(MAX_KEY) == 1  # one snapshot: the other connector's message was skipped
    assert "has key 'other-connector', not this connector's topic.prefix 'server1': skipped" in caplog.text
    assert "from the kafka channel" in caplog.text
    assert "not read: source is off" not in caplog.text
    # a Kafka signal's log names the stream position it acted at (no source-channel signal came before)
    assert "kafka log at {'commit_lsn': '" in caplog.text, caplog.text[-2000:]


def test_additional_condition_in_the_chunk_queries(tmp_path: Path, chunk_ids: None) -> None:
    """The condition is ANDed to the maximum-key and chunk queries; its '%' is doubled only where
    the statement has parameters (pymssql interpolates only then)."""
    server = signal_server()
    server.passes(START, lsn_at(1), lsn_at(14), lsn_at(24))
    for chunk in ("c1", "c2"):
        window(server, chunk)
    server.rec.add("SELECT TOP 1 [id] FROM [testDB].[dbo].[customers] WHERE (last_name LIKE 'B%') ORDER BY [id] DESC",
                   None, server_result(["id"], [(1002,)]))
    server.rec.add(f"{SELECT} WHERE (NOT (([id] > %s))) AND (last_name LIKE 'B%%') ORDER BY [id]", (1002,),
                   server_result(COLS, [ROWS[1002]]))
    server.rec.add(f"{SELECT} WHERE (([id] > %s)) AND (NOT (([id] > %s))) AND (last_name LIKE 'B%%') ORDER BY [id]",
                   (1002, 1002), server_result(COLS, []))
    signal = json.dumps({"data-collections": ["testDB.dbo.customers"], "additional-conditions": [
        {"data-collection": "testDB.dbo.customers", "filter": "last_name LIKE 'B%'"}]})
    pass_rows(server, START, lsn_at(1), [(1, 2, "ad-hoc-2", "execute-snapshot", signal)])
    pass_rows(server, lsn_at(1), lsn_at(14), watermarks(10, "c1"))
    pass_rows(server, lsn_at(14), lsn_at(24), watermarks(20, "c2"))
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    assert [(r.op, r.key["id"]) for r in data(sink.records)] == [("r", 1002)]


def test_invalid_condition_skips_the_table_and_streaming_goes_on(tmp_path: Path, chunk_ids: None,
                                                                 caplog: Any) -> None:
    from sqlserver_replay import ResultSet

    server = signal_server()
    server.passes(START, lsn_at(1), lsn_at(14))
    window(server, "c1")
    server.rec.add("SELECT TOP 1 [id] FROM [testDB].[dbo].[customers] WHERE (no_such_column = 1) ORDER BY [id] DESC",
                   None, ResultSet([], error="Invalid column name 'no_such_column'.DB-Lib error message 20018, "
                                             "severity 16", error_class="ProgrammingError"))
    signal = json.dumps({"data-collections": ["testDB.dbo.customers"], "additional-condition": "no_such_column = 1"})
    pass_rows(server, START, lsn_at(1), [(1, 2, "ad-hoc-3", "execute-snapshot", signal)])
    pass_rows(server, lsn_at(1), lsn_at(14), watermarks(10, "c1"), [(12, 2, 1004, "Anne", "K", "anne@k.org")])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    assert [(r.op, r.key["id"]) for r in data(sink.records)] == [("c", 1004)]
    assert ("incremental snapshot of table 'testDB.dbo.customers' failed and is skipped: Invalid column name"
            in caplog.text)
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert "incremental_snapshot_collections" not in offset and offset["commit_lsn"] == lsn_at(14)


def test_two_column_key_chunks_with_written_out_bounds(tmp_path: Path, chunk_ids: None) -> None:
    """A key (order_id INT, line VARCHAR): chunks in key order through Debezium's written-out bounds,
    the last emitted key kept in the offset as JSON."""
    lines = [("order_id", "int", None, 10, 0, None, "NO"), ("line", "varchar", 8, None, None, None, "NO"),
             ("qty", "int", None, 10, 0, None, "YES")]
    server = RecordedServer().cdc_database()
    server.user_tables(("dbo", "lines", True), ("dbo", "debezium_signal", True))
    server.instances([
        RecordedServer.instance_row("dbo", "lines", "dbo_lines", "00000024:00000100:0001", ["order_id", "line", "qty"],
                                    ["order_id", "line"]),
        RecordedServer.instance_row("dbo", "debezium_signal", "dbo_debezium_signal", "00000024:00000100:0001",
                                    ["id", "type", "data"])])
    server.columns("dbo", "lines", lines, ["order_id", "line"])
    server.columns("dbo", "debezium_signal", SIGNAL_COLUMNS, ["id"])
    server.passes(START, lsn_at(1), lsn_at(14))
    window(server, "c1")
    window(server, "c2")
    select = "SELECT TOP 2 [order_id], [line], [qty] FROM [testDB].[dbo].[lines]"
    bound = "([order_id] > %s) OR ([order_id] = %s AND [line] > %s)"
    server.rec.add("SELECT TOP 1 [order_id], [line] FROM [testDB].[dbo].[lines] ORDER BY [order_id] DESC, [line] DESC",
                   None, server_result(["order_id", "line"], [(2, "b")]))
    server.rec.add(f"{select} WHERE (NOT ({bound})) ORDER BY [order_id], [line]", (2, 2, "b"),
                   server_result(["order_id", "line", "qty"], [(1, "a", 5), (1, "b", 6)]))
    server.rec.add(f"{select} WHERE ({bound}) AND (NOT ({bound})) ORDER BY [order_id], [line]", (1, 1, "b", 2, 2, "b"),
                   server_result(["order_id", "line", "qty"], [(2, "a", 7), (2, "b", 8)]))
    for instance, columns in (("dbo_lines", ["order_id", "line", "qty"]),
                              ("dbo_debezium_signal", ["id", "type", "data"])):
        rows = [execute_signal(1, [r"testDB\.dbo\.lines"])] if instance == "dbo_debezium_signal" else []
        server.changes(instance, after(START), lsn_at(1), columns,
                       [(lsn_at(n), seq_at(n), op, *v) for n, op, *v in rows])
        rows = watermarks(10, "c1") if instance == "dbo_debezium_signal" else []
        server.changes(instance, after(lsn_at(1)), lsn_at(14), columns,
                       [(lsn_at(n), seq_at(n), op, *v) for n, op, *v in rows])
    for n in (1, 10, 12):
        server.lsn_time(lsn_at(n), 1_700_000_000_000 + n)
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, table__include__list="dbo.lines",
                     **{k.replace(".", "__"): v for k, v in PROPS.items()})
    reads = [r for r in sink.records if r.topic == "server1.testDB.dbo.lines"]
    assert [(r.value["op"], r.key)
            for r in reads] == [("r", {"order_id": 1, "line": "a"}), ("r", {"order_id": 1, "line": "b"})]
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert json.loads(offset["incremental_snapshot_primary_key"]) == [1, "b"]
    assert json.loads(offset["incremental_snapshot_maximum_key"]) == [2, "b"]
    # the second chunk (window c2, not yet closed) was read from the key after (1, 'b')
    assert server.rec.served(f"{select} WHERE ({bound}) AND (NOT ({bound})) ORDER BY [order_id], [line]",
                             (1, 1, "b", 2, 2, "b")) == 1


def test_incremental_reads_stay_outside_the_watermark_transaction(tmp_path: Path, chunk_ids: None) -> None:
    """provide.transaction.metadata=true: a window's reads go out when its close watermark row is
    met, before that row's transaction begins (Debezium's TransactionMonitor emits BEGIN with a
    transaction's first data event, and the close signal is handled before it), with
    ``transaction: null``; the watermark rows' own events are in their transactions."""
    server = whole_snapshot()
    streaming_only(server, tmp_path)
    props = {k.replace(".", "__"): v for k, v in PROPS.items()}
    sink, _, _ = run(server, tmp_path, provide__transaction__metadata="true", **props)

    def label(r: Any) -> str:
        if r.topic == "server1.transaction":
            return f"{r.value['status']} {r.value['id']}"
        return f"{r.value['op']} {r.key.get('id')}"

    # the window c1 (open at 10, close at 12): its reads between END of 10 and BEGIN of 12
    stream = [label(r) for r in sink.records if r.value is not None]
    assert stream[stream.index(f"END {lsn_at(10)}"):stream.index(f"END {lsn_at(12)}") + 1] == [
        f"END {lsn_at(10)}", "r 1001", "r 1002", f"BEGIN {lsn_at(12)}", "c c1-close", f"END {lsn_at(12)}"]
    reads = [r for r in data(sink.records) if r.value["op"] == "r"]
    assert [r.key["id"] for r in reads] == [1001, 1002, 1003]
    assert all(r.value["transaction"] is None for r in reads)
    close = next(r for r in data(sink.records, SIGNAL_TOPIC) if r.key == {"id": "c1-close"})
    assert close.value["transaction"]["id"] == lsn_at(12) and close.value["transaction"]["total_order"] == 1
    end = next(r for r in sink.records if r.topic == "server1.transaction" and r.value["id"] == lsn_at(12)
               and r.value["status"] == "END")
    assert end.value["event_count"] == 1  # the reads are not the transaction's events
