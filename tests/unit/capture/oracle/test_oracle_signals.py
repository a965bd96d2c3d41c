"""Oracle signals and incremental snapshots on the replay connection (no Oracle runs here).

The recorded database answers the chunk queries from its table rows and turns each watermark
INSERT (committed on the snapshot's own connection) into redo rows — START, INSERT, COMMIT at the
next SCNs — that the following mining window returns, as LogMiner would.
"""

from __future__ import annotations

import decimal
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

import oracle_chunks
import oracledb
from oracle_recorded import CUSTOMERS_COLUMNS, RecordedOracle, Table, customers, insert_sql, redo, update_sql
from oracle_replay import ReplayConnection, describe
from test_oracle_capture import BASE, config

from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.streaming import OracleStreamingSource

SIGNAL = Table("DEBEZIUM", "DEBEZIUM_SIGNAL", [("ID", "VARCHAR2", 42, None, None, False),
                                                 ("TYPE", "VARCHAR2", 32, None, None, False),
                                                 ("DATA", "VARCHAR2", 2048, None, None, True)], ["ID"])
PROPS = {"signal.data.collection": "ORCLPDB1.DEBEZIUM.DEBEZIUM_SIGNAL", "incremental.snapshot.chunk.size": "2"}
ROWS = [(1000 + i, f"First{i}", f"Last{i}", f"u{i}@example.com") for i in range(1, 6)]
CHUNK = oracle_chunks.STATEMENT
INSERT = re.compile(r'INSERT INTO "DEBEZIUM"\."DEBEZIUM_SIGNAL" \(ID, TYPE, DATA\) VALUES \(:1, :2, :3\)')


@dataclass
class SignalOracle(RecordedOracle):
    """A recorded database that also answers the incremental snapshot's statements."""

    next_scn: int = 2000
    watermarks: list[tuple[str, str]] = field(default_factory=list)
    #: called with the watermark kind right after its redo is appended (a concurrent commit)
    after_watermark: Callable[[SignalOracle, str], None] | None = None

    def commit_tx(self, rows: list[tuple[str, str, str]], xid: bytes | None = None) -> int:
        """One committed transaction of (sql, owner, table) inserts/updates; returns the change SCN."""
        xid = xid or (self.next_scn).to_bytes(8, "little")
        self.redo_rows.append(redo(self.next_scn, 6, xid))
        first = self.next_scn + 1
        for i, (sql, owner, table) in enumerate(rows):
            code = 1 if sql.startswith("insert") else 3
            self.redo_rows.append(redo(first + i, code, xid, sql, owner, table))
        self.redo_rows.append(redo(first + len(rows), 7, xid))
        self.next_scn = first + len(rows) + 1
        self.scns = [self.next_scn]
        return first

    def signal(self, signal_id: str, kind: str, data: dict[str, Any]) -> int:
        return self.commit_tx([(insert_sql("DEBEZIUM", "DEBEZIUM_SIGNAL",
                                           {"ID": signal_id, "TYPE": kind, "DATA": json.dumps(data)}),
                                "DEBEZIUM", "DEBEZIUM_SIGNAL")])

    def _watermark(self, binds: dict[Any, Any]) -> Any:
        watermark_id, kind, data = binds[1], binds[2], binds[3]
        self.watermarks.append((watermark_id, kind))
        self.signal(watermark_id, kind, json.loads(data))
        if self.after_watermark is not None:
            self.after_watermark(self, kind)
        return None, []

    def _chunk(self, conn: ReplayConnection, binds: dict[Any, Any]) -> Any:
        statement = conn.executed[-1][0]
        match = CHUNK.fullmatch(statement)
        assert match is not None
        return oracle_chunks.answer(self.table(match.group(2), match.group(3)), statement, binds)

    def connect(self, config: Any = None) -> ReplayConnection:
        conn = super().connect(config)
        conn.pattern_handlers = [(INSERT, self._watermark),
                                 (CHUNK, lambda b, c=conn: self._chunk(c, b)), *conn.pattern_handlers]
        return conn


@pytest.fixture
def db() -> Any:
    recorded = SignalOracle([customers(list(ROWS)), SIGNAL], scns=[2000])
    oraconn.set_connection_factory(recorded.connect)
    yield recorded
    oraconn.set_connection_factory(None)


def source(offset: dict[str, Any] | None, **extra: str) -> OracleStreamingSource:
    from lakecdc.capture.oracle.connector import OracleConnector

    connector = OracleConnector(config(**{**PROPS, **extra}), show_progress=False)
    src = OracleStreamingSource(connector.config, connector.modes, connector.namer, sleep=lambda s: None)
    src.start(offset or {"scn": "1999"})
    return src


def polls(src: OracleStreamingSource, n: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        src.poll(out, 10_000, 0)
    return out


def reads(records: list[Any]) -> list[Any]:
    return [r for r in records if r.value is not None and r.value["op"] == "r"]


def test_execute_snapshot_reads_in_chunks_between_watermarks(db: SignalOracle, caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    db.signal("log-1", "log", {"message": "signal at {}"})
    signal_scn = db.signal("ad-hoc-1", "execute-snapshot",
                           {"data-collections": ["ORCLPDB1\\.DEBEZIUM\\.CUSTOMERS"], "type": "incremental"})
    src = source(None)
    records = polls(src, 8)
    src.close()
    assert "signal at {'scn': '2001', 'commit_scn': '2002'}" in caplog.text
    read = reads(records)
    assert [r.key for r in read] == [{"ID": i} for i in range(1001, 1006)]
    for r, row in zip(read, ROWS):
        value = r.value
        assert r.topic == "server1.DEBEZIUM.CUSTOMERS"
        assert value["before"] is None
        assert value["after"] == {"ID": row[0], "FIRST_NAME": row[1], "LAST_NAME": row[2], "EMAIL": row[3]}
        assert value["source"]["snapshot"] == "incremental"
        assert value["source"]["table"] == "CUSTOMERS" and value["source"]["db"] == "ORCLPDB1"
    # 3 chunks with rows, then the empty chunk that ends the table: 4 windows
    assert [k for _, k in db.watermarks] == ["snapshot-window-open", "snapshot-window-close"] * 4
    signal_events = [r for r in records if r.topic == "server1.DEBEZIUM.DEBEZIUM_SIGNAL"]
    assert [e.value["after"]["ID"] for e in signal_events][:2] == ["log-1", "ad-hoc-1"]
    assert signal_events[1].value["source"]["scn"] == str(signal_scn)
    # each chunk's reads go out just before its close watermark's own event, at that watermark's SCN
    order = [(r.value["op"], r.value["after"]["ID"]) for r in records if r.value is not None]
    closes = [wid for wid, kind in db.watermarks if kind == "snapshot-window-close"]
    first_close = order.index(("c", closes[0]))
    assert order[first_close - 2:first_close] == [("r", 1001), ("r", 1002)]
    close_event = records[[r.value["after"]["ID"] if r.value else None for r in records].index(closes[0])]
    assert read[0].value["source"]["scn"] == close_event.value["source"]["scn"]
    assert read[0].value["source"]["commit_scn"] == close_event.value["source"]["commit_scn"]
    assert "incremental snapshot completed" in caplog.text


def test_change_inside_a_window_supersedes_the_chunk_row(db: SignalOracle) -> None:
    """An update of ID 1002 committed between the first open and close watermark: its streamed
    event stands for the row, the chunk's read of 1002 is dropped."""
    changed = {"EMAIL": "new@example.com"}
    old = {"ID": "1002", "FIRST_NAME": "First2", "LAST_NAME": "Last2", "EMAIL": "u2@example.com"}

    def concurrent(recorded: SignalOracle, kind: str) -> None:
        if kind == "snapshot-window-open" and len(recorded.watermarks) == 1:
            recorded.commit_tx([(update_sql("DEBEZIUM", "CUSTOMERS", changed, old), "DEBEZIUM", "CUSTOMERS")])

    db.after_watermark = concurrent
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"]})
    src = source(None)
    records = polls(src, 8)
    src.close()
    assert [r.key["ID"] for r in reads(records)] == [1001, 1003, 1004, 1005]
    updates = [r for r in records if r.value is not None and r.value["op"] == "u"]
    assert len(updates) == 1 and updates[0].value["after"]["EMAIL"] == "new@example.com"
    # the streamed update precedes the first window's reads, which follow at the close watermark
    ops = [(r.value["op"], r.key.get("ID") if isinstance(r.key, dict) else None) for r in records if r.value]
    assert ops.index(("u", 1002)) < ops.index(("r", 1001))


def test_progress_in_the_offset_and_resume_at_the_next_chunk(db: SignalOracle) -> None:
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"]})
    src = source(None)
    first = polls(src, 2)  # the signal, then the first window's close
    offset = src.committable_offset()
    src.close()
    assert [r.key["ID"] for r in reads(first)] == [1001, 1002]
    assert offset is not None
    assert json.loads(offset["incremental_snapshot_primary_key"]) == ["1002"]
    assert json.loads(offset["incremental_snapshot_maximum_key"]) == ["1005"]
    assert offset["incremental_snapshot_correlation_id"] == "ad-hoc-1"
    assert json.loads(offset["incremental_snapshot_collections"])[0]["incremental_snapshot_collections_id"] == \
        "ORCLPDB1.DEBEZIUM.CUSTOMERS"
    in_flight = db.watermarks[-1][0]  # the second window, written before the stop; its rows are never emitted
    src = source(json.loads(json.dumps(offset)))
    rest = polls(src, 8)
    final = src.committable_offset()
    src.close()
    assert [r.key["ID"] for r in reads(rest)] == [1003, 1004, 1005]
    assert in_flight in [r.value["after"]["ID"] for r in rest if r.topic.endswith("DEBEZIUM_SIGNAL")]
    assert final is not None and "incremental_snapshot_collections" not in final


def test_pause_stop_resume(db: SignalOracle) -> None:
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"]})
    src = source(None)
    first = polls(src, 1)  # the signal: the first window is written
    db.signal("p-1", "pause-snapshot", {})  # committed after the first window, before the second
    paused = polls(src, 4)
    # the first close reads the second chunk; the pause acts at the second close: no third window
    assert reads(first) == [] and [r.key["ID"] for r in reads(paused)] == [1001, 1002, 1003, 1004]
    written = len(db.watermarks)
    assert written == 4 and reads(polls(src, 2)) == [] and len(db.watermarks) == written
    offset = src.committable_offset()
    assert offset is not None and json.loads(offset["incremental_snapshot_primary_key"]) == ["1004"]
    db.signal("s-1", "stop-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"], "type": "incremental"})
    polls(src, 2)
    offset = src.committable_offset()
    assert offset is not None and "incremental_snapshot_collections" not in offset
    db.signal("r-1", "resume-snapshot", {})
    resumed = polls(src, 2)
    src.close()
    assert reads(resumed) == [] and len(db.watermarks) == written  # nothing left to read


def test_resume_continues_a_paused_snapshot(db: SignalOracle) -> None:
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"]})
    src = source(None)
    polls(src, 1)
    db.signal("p-1", "pause-snapshot", {})
    assert [r.key["ID"] for r in reads(polls(src, 4))] == [1001, 1002, 1003, 1004]
    db.signal("r-1", "resume-snapshot", {})
    resumed = polls(src, 4)
    src.close()
    assert [r.key["ID"] for r in reads(resumed)] == [1005]


def test_signals_name_no_unknown_table_and_skip_without_key(db: SignalOracle, caplog: Any) -> None:
    db.tables.append(Table("DEBEZIUM", "NOKEY", CUSTOMERS_COLUMNS, [], [(1, "a", "b", "c")]))
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.NOKEY", "ORCLPDB1.X.Y"]})
    src = source(None, **{"table.include.list": "DEBEZIUM\\.CUSTOMERS,DEBEZIUM\\.NOKEY"})
    records = polls(src, 4)
    src.close()
    assert reads(records) == []
    assert "no captured table matches 'ORCLPDB1.X.Y'" in caplog.text
    assert "skipped cause the table has no primary keys" in caplog.text


def test_signal_table_is_captured_though_the_include_list_leaves_it_out() -> None:
    cfg = config(**PROPS)
    assert cfg.signal_table is not None and (cfg.signal_table.schema, cfg.signal_table.table) == \
        ("DEBEZIUM", "DEBEZIUM_SIGNAL")
    assert cfg.table_filter.matches("DEBEZIUM", "DEBEZIUM_SIGNAL")
    assert not cfg.table_filter.matches("DEBEZIUM", "OTHER")
    assert BASE["table.include.list"] == "DEBEZIUM\\.CUSTOMERS"


def test_chunk_statements_in_oracle_syntax_with_an_additional_condition(db: SignalOracle) -> None:
    """Key bounds written out with positional binds, FETCH FIRST, the condition ANDed as written
    (a '%' in it stays: Oracle binds are ':n', nothing is interpolated)."""
    db.signal("ad-hoc-1", "execute-snapshot", {
        "data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"],
        "additional-conditions": [{"data-collection": "ORCLPDB1.DEBEZIUM.CUSTOMERS", "filter": "EMAIL LIKE 'u%'"}]})
    src = source(None)
    polls(src, 3)
    src.close()
    executed = [(sql, binds) for conn in db.connections for sql, binds in conn.executed if "CUSTOMERS" in sql]
    cols = '"ID", "FIRST_NAME", "LAST_NAME", "EMAIL"'
    assert executed[:3] == [
        ('SELECT "ID" FROM "DEBEZIUM"."CUSTOMERS" WHERE (EMAIL LIKE \'u%\') ORDER BY "ID" DESC FETCH FIRST 1 ROWS ONLY',
         {}),
        (f'SELECT {cols} FROM "DEBEZIUM"."CUSTOMERS" WHERE (NOT (("ID" > :1))) AND (EMAIL LIKE \'u%\') '
         'ORDER BY "ID" FETCH FIRST 2 ROWS ONLY', {1: decimal.Decimal(1005)}),
        (f'SELECT {cols} FROM "DEBEZIUM"."CUSTOMERS" WHERE (("ID" > :1)) AND (NOT (("ID" > :2))) AND '
         '(EMAIL LIKE \'u%\') ORDER BY "ID" FETCH FIRST 2 ROWS ONLY',
         {1: decimal.Decimal(1002), 2: decimal.Decimal(1005)}),
    ]


def test_kafka_channel_starts_an_incremental_snapshot(db: SignalOracle, broker: Any, tmp_path: Any,
                                                      caplog: Any) -> None:
    """signal.enabled.channels=kafka: a message keyed with topic.prefix is a signal, one keyed
    otherwise is skipped, and a signal-table row is no signal (the source channel is off); the
    watermarks still come back through LogMiner from the signal table."""
    import time

    from confluent_kafka import Producer

    from lakecdc.devstack.broker import kafka_client_defaults

    caplog.set_level(logging.INFO)
    topic = f"ora-signals-{tmp_path.name}"[:200]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **kafka_client_defaults("producer")})
    for key in ("other-connector", "server1"):
        value = {"type": "execute-snapshot", "data": {"data-collections": [r"ORCLPDB1\.DEBEZIUM\.CUSTOMERS"]}}
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), partition=0)
    producer.produce(topic, key=b"server1", value=json.dumps(
        {"type": "log", "data": {"message": "kafka log at {}"}}).encode(), partition=0)
    assert producer.flush(30) == 0
    db.signal("s-1", "log", {"message": "not read: source is off"})
    src = source(None, **{"signal.enabled.channels": "kafka", "signal.kafka.topic": topic,
                          "signal.kafka.bootstrap.servers": broker.bootstrap_servers,
                          "signal.kafka.groupId": f"g-{tmp_path.name}"})
    records: list[Any] = []
    deadline = time.monotonic() + 120  # the consumer's first fetch is slow on a loaded machine
    try:
        while len(reads(records)) < 5 and time.monotonic() < deadline:
            src.poll(records, 10_000, 0)
            time.sleep(0.05)
    finally:
        src.close()
    assert [r.key["ID"] for r in reads(records)] == [1001, 1002, 1003, 1004, 1005]
    maxima = [sql for conn in db.connections for sql, _ in conn.executed if "ORDER BY \"ID\" DESC" in sql]
    assert len(maxima) == 1  # one snapshot: the other connector's message was skipped
    assert "has key 'other-connector', not this connector's topic.prefix 'server1': skipped" in caplog.text
    assert "from the kafka channel" in caplog.text
    assert "not read: source is off" not in caplog.text
    assert "kafka log at {'scn': '" in caplog.text


def test_blocking_snapshot_after_the_signal_event(db: SignalOracle) -> None:
    """type blocking: the tables are read whole AS OF the signal's commit SCN, with the snapshot
    markers, right after the signal's own event; a later commit is streamed after them."""
    signal_scn = db.signal("b-1", "execute-snapshot",
                           {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"], "type": "blocking"})
    commit_scn = signal_scn + 1
    later = {"ID": "1006", "FIRST_NAME": "Six", "LAST_NAME": "Later", "EMAIL": "six@example.com"}
    db.commit_tx([(insert_sql("DEBEZIUM", "CUSTOMERS", later), "DEBEZIUM", "CUSTOMERS")])
    src = source(None)
    records = polls(src, 3)
    src.close()
    assert db.watermarks == []  # no window: a blocking snapshot is no incremental one
    assert db.snapshot_statements == [
        f'SELECT "ID", "FIRST_NAME", "LAST_NAME", "EMAIL" FROM "DEBEZIUM"."CUSTOMERS" AS OF SCN {commit_scn}']
    events = [(r.value["op"], r.key) for r in records if r.value is not None]
    assert events == [("c", {"ID": "b-1"})] + [("r", {"ID": i}) for i in range(1001, 1006)] + [("c", {"ID": 1006})]
    read = reads(records)
    assert [r.value["source"]["snapshot"] for r in read] == ["first", "true", "true", "true", "last"]
    assert {r.value["source"]["scn"] for r in read} == {str(commit_scn)}
    assert read[0].value["after"] == {"ID": 1001, "FIRST_NAME": "First1", "LAST_NAME": "Last1",
                                      "EMAIL": "u1@example.com"}


def test_incremental_reads_stay_outside_the_watermark_transaction(db: SignalOracle) -> None:
    """provide.transaction.metadata=true: a window's reads go out when its close watermark's COMMIT
    is mined, before that transaction's BEGIN (Debezium's TransactionMonitor emits BEGIN with a
    transaction's first data event, and the close signal is handled before it), with
    ``transaction: null``; the watermark rows' own events are in their transactions."""
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"]})
    src = source(None, **{"provide.transaction.metadata": "true"})
    records = polls(src, 8)
    src.close()

    def label(r: Any) -> str:
        if r.topic == "server1.transaction":
            return r.value["status"]
        return f"{r.value['op']} {r.key['ID']}"

    stream = [label(r) for r in records if r.value is not None and r.topic.startswith(("server1.transaction",
                                                                                         "server1.DEBEZIUM."))]
    first_close = next(wid for wid, kind in db.watermarks if kind == "snapshot-window-close")
    at = stream.index(f"c {first_close}")
    # the open watermark's transaction ends, the reads, then the close watermark's transaction
    assert stream[at - 4:at + 2] == ["END", "r 1001", "r 1002", "BEGIN", f"c {first_close}", "END"]
    read = reads([r for r in records if r.topic != "server1.transaction"])
    assert [r.key["ID"] for r in read] == [1001, 1002, 1003, 1004, 1005]
    assert all(r.value["transaction"] is None for r in read)
    close = next(r for r in records if r.key == {"ID": first_close} and r.value is not None)
    assert close.value["transaction"]["total_order"] == 1
    ends = [r for r in records if r.topic == "server1.transaction" and r.value["status"] == "END"
            and r.value["id"] == close.value["transaction"]["id"]]
    assert len(ends) == 1 and ends[0].value["event_count"] == 1  # the reads are not the transaction's events


def test_blocking_snapshot_additional_conditions(db: SignalOracle, caplog: Any) -> None:
    """A blocking snapshot's additional condition is the table's whole SELECT, run as written (as
    Debezium without snapshot.enhance.predicate.scn): one the database refuses fails that snapshot,
    naming the table and the statement, and streaming goes on; a valid one reads only its rows."""
    caplog.set_level(logging.INFO)
    bad = 'SELECT "NOPE" FROM "DEBEZIUM"."CUSTOMERS"'
    some = 'SELECT * FROM "DEBEZIUM"."CUSTOMERS" WHERE "ID" > 1003'

    def refuse(binds: dict[str, Any]) -> Any:
        raise oracledb.DatabaseError('ORA-00904: "NOPE": invalid identifier')

    def answer(binds: dict[str, Any]) -> Any:
        table = db.table("DEBEZIUM", "CUSTOMERS")
        return (describe(*[(c[0], oracledb.DB_TYPE_NUMBER if c[1] == "NUMBER" else oracledb.DB_TYPE_VARCHAR)
                           for c in table.columns]), [r for r in table.rows if r[0] > 1003])

    def connect(config: Any = None) -> ReplayConnection:
        conn = db.connect(config)
        conn.pattern_handlers = [(re.compile(re.escape(bad)), refuse), (re.compile(re.escape(some)), answer),
                                 *conn.pattern_handlers]
        return conn

    oraconn.set_connection_factory(connect)
    for signal_id, collection, select in (("b-bad", "ORCLPDB1.DEBEZIUM.CUSTOMERS", bad),
                                          ("b-some", "DEBEZIUM.CUSTOMERS", some)):
        db.signal(signal_id, "execute-snapshot", {
            "data-collections": ["ORCLPDB1.DEBEZIUM.CUSTOMERS"], "type": "blocking",
            "additional-conditions": [{"data-collection": collection, "filter": select}]})
    later = {"ID": "1006", "FIRST_NAME": "Six", "LAST_NAME": "Later", "EMAIL": "six@example.com"}
    db.commit_tx([(insert_sql("DEBEZIUM", "CUSTOMERS", later), "DEBEZIUM", "CUSTOMERS")])
    src = source(None)
    records = polls(src, 3)
    src.close()
    events = [(r.value["op"], r.key) for r in records if r.value is not None]
    assert events == [("c", {"ID": "b-bad"}), ("c", {"ID": "b-some"}), ("r", {"ID": 1004}), ("r", {"ID": 1005}),
                      ("c", {"ID": 1006})]
    assert [r.value["source"]["snapshot"] for r in reads(records)] == ["first", "last"]
    executed = [sql for conn in db.connections for sql, _ in conn.executed]
    assert executed.count(bad) == 1 and executed.count(some) == 1
    assert db.snapshot_statements == []  # no AS OF SCN read of the whole table
    failure = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failure) == 1
    assert "blocking snapshot of table 'ORCLPDB1.DEBEZIUM.CUSTOMERS' failed" in failure[0]
    assert repr(bad) in failure[0] and "ORA-00904" in failure[0]
