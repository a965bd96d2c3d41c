"""Debezium MySQL/MariaDB properties with their effect, on the real MariaDB:
schema.history.internal.store.only.captured.databases.ddl, inconsistent.schema.handling.mode,
event.deserialization.failure.handling.mode, connect.keep.alive (+ interval) and
binlog.net.read.timeout / binlog.net.write.timeout."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from mysql_capture_support import (
    CaptureThread,
    capture,
    capture_subprocess,
    data_events,
    dump_threads,
    fresh_database,
    query,
    records,
    sql,
    wait_for_new_dump_thread,
    write_properties,
)

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.errors import UnknownTableError
from lakecdc.capture.mysql.failure_modes import BinlogDeserializationError
from lakecdc.capture.mysql.streaming import binlog_connection_settings

pytestmark = pytest.mark.integration


def _history_text(props: Path) -> str:
    return props.with_suffix(".history.jsonl").read_text()


@pytest.mark.parametrize("only_captured", [True, False])
def test_store_only_captured_databases_ddl(mariadb: Any, tmp_path: Path, only_captured: bool) -> None:
    captured, other = "it_hist_cap", "it_hist_other"
    fresh_database(mariadb, captured)
    fresh_database(mariadb, other)
    sql(mariadb, captured, "CREATE TABLE t (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, captured,
                             schema__history__internal__store__only__captured__databases__ddl=str(only_captured).lower())
    run = CaptureThread(props, tmp_path / "out.jsonl", stop_when_idle=2.0, mariadb=mariadb).start()
    run.wait_streaming()
    sql(mariadb, other, "CREATE TABLE elsewhere_tbl (id INT PRIMARY KEY)")
    sql(mariadb, captured, "CREATE TABLE here_tbl (id INT PRIMARY KEY)", "INSERT INTO here_tbl VALUES (1)")
    run.wait()
    history = _history_text(props)
    assert "here_tbl" in history
    assert ("elsewhere_tbl" in history) is (not only_captured)
    assert [e["after"]["id"] for e in data_events(records(tmp_path / "out.jsonl"), "here_tbl")] == [1]


def _table_unknown_to_the_history(mariadb: Any, tmp_path: Path, db: str) -> Path:
    """Run 1 captures only t1 and keeps only captured tables' DDL: t2's CREATE is not in the history.
    Run 2 (the returned file) captures t2 too: t2's rows then have no known structure."""
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t1 (id INT PRIMARY KEY)")
    first = write_properties(tmp_path / "c.properties", mariadb, db, table__include__list=f"{db}.t1",
                             schema__history__internal__store__only__captured__tables__ddl="true")
    run = CaptureThread(first, tmp_path / "out.jsonl", stop_when_idle=2.0, mariadb=mariadb).start()
    run.wait_streaming()
    sql(mariadb, db, "CREATE TABLE t2 (id INT PRIMARY KEY)", "INSERT INTO t1 VALUES (1)")
    run.wait()
    assert "t2" not in _history_text(first)
    sql(mariadb, db, "INSERT INTO t2 VALUES (20)", "INSERT INTO t1 VALUES (2)")
    return first


def test_inconsistent_schema_fail_stops_at_the_unknown_table(mariadb: Any, tmp_path: Path) -> None:
    db = "it_incons_fail"
    props = _table_unknown_to_the_history(mariadb, tmp_path, db)
    with pytest.raises(UnknownTableError, match=f"'{db}.t2'.*inconsistent.schema.handling.mode"):
        capture(props, tmp_path / "out.jsonl", stop_when_idle=2.0, table__include__list=f"{db}.t1,{db}.t2")


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_inconsistent_schema_warn_or_skip_goes_past_it(mariadb: Any, tmp_path: Path, mode: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    db = f"it_incons_{mode}"
    props = _table_unknown_to_the_history(mariadb, tmp_path, db)
    with caplog.at_level(logging.WARNING):
        capture(props, tmp_path / "out.jsonl", stop_when_idle=2.0, table__include__list=f"{db}.t1,{db}.t2",
                inconsistent__schema__handling__mode=mode)
    recs = records(tmp_path / "out.jsonl")
    assert [e["after"]["id"] for e in data_events(recs, "t1")] == [1, 2]
    assert data_events(recs, "t2") == []
    warned = [r for r in caplog.records if "inconsistent.schema.handling.mode=warn" in r.getMessage()]
    assert len(warned) == (1 if mode == "warn" else 0)


# -- event.deserialization.failure.handling.mode ----------------------------------------------------
# No server sends a corrupted event on demand: the real reader runs against the real server, and the
# row decoding of one event is made to fail: lakecdc's row decoder leaves it to mysql-replication (as
# it does with bytes it cannot read), whose decoding (on first access to the rows) raises.

@pytest.fixture
def undecodable_row_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from pymysqlreplication.row_event import RowsEvent

    from lakecdc.capture.mysql import streaming

    decode = streaming.row_images
    monkeypatch.setattr(streaming, "row_images",
                        lambda ev, *args: None if ev.table == "bad" else decode(ev, *args))
    original = RowsEvent.rows
    state = {"failed": False}

    def rows(self: Any) -> Any:
        if self.table == "bad" and not state["failed"]:
            state["failed"] = True
            raise ValueError("corrupted row image")
        return original.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(RowsEvent, "rows", property(rows))


def test_deserialization_failure_fail_stops(mariadb: Any, tmp_path: Path, undecodable_row_event: None) -> None:
    db = "it_deser_fail"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE bad (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db)
    run = CaptureThread(props, tmp_path / "out.jsonl", stop_when_idle=2.0, mariadb=mariadb).start()
    run.wait_streaming()
    sql(mariadb, db, "INSERT INTO bad VALUES (1)")
    with pytest.raises(BinlogDeserializationError, match="corrupted row image.*failure.handling.mode=fail"):
        run.wait()


def test_deserialization_failure_warn_skips_the_event(mariadb: Any, tmp_path: Path, undecodable_row_event: None,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    db = "it_deser_warn"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE bad (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db,
                             event__deserialization__failure__handling__mode="warn")
    with caplog.at_level(logging.WARNING):
        run = CaptureThread(props, tmp_path / "out.jsonl", stop_when_idle=2.0, mariadb=mariadb).start()
        run.wait_streaming()
        sql(mariadb, db, "INSERT INTO bad VALUES (1)", "INSERT INTO bad VALUES (2)")
        run.wait()
    assert [e["after"]["id"] for e in data_events(records(tmp_path / "out.jsonl"), "bad")] == [2]
    assert len([r for r in caplog.records if "corrupted row image" in r.getMessage()]) == 1


# -- connect.keep.alive: a binlog connection that silently stops delivering ------------------------

class FreezableProxy:
    """A TCP relay to the server; ``freeze()`` stops relaying on the connections open now (they stay
    open, silent: a half-dead network path), while new connections are relayed normally."""

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frozen: set[int] = set()
        self.generation = 0
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            generation = self.generation
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b, generation), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, generation: int) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                while generation in self.frozen and not self.closed:
                    time.sleep(0.05)
                sink.sendall(data)
        except OSError:
            pass

    def freeze(self) -> None:
        self.frozen.add(self.generation)
        self.generation += 1

    def close(self) -> None:
        self.closed = True
        self.frozen.clear()
        self.listener.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


@pytest.mark.parametrize("keep_alive", [True, False])
def test_keep_alive_reopens_a_binlog_connection_that_went_silent(mariadb: Any, tmp_path: Path,
                                                                  keep_alive: bool) -> None:
    db = f"it_keepalive_{int(keep_alive)}"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    proxy = FreezableProxy(mariadb.port)
    try:
        props = write_properties(tmp_path / "c.properties", mariadb, db, database__hostname="127.0.0.1",
                                 database__port=str(proxy.port), connect__keep__alive=str(keep_alive).lower(),
                                 connect__keep__alive__interval__ms="2000")
        out, log = tmp_path / "out.jsonl", tmp_path / "capture.log"
        # A capture without an idle stop (a loaded machine cannot end it while the proxy is frozen),
        # stopped with SIGTERM once the outcome is known. With keep-alive the reconnect may take longer
        # than 2 s under load: wait up to 30 s for the row (its arrival is the proof), without it 15 s of
        # nothing is the proof.
        existing = dump_threads(mariadb)
        proc = capture_subprocess(props, out, None, log)
        try:
            wait_for_new_dump_thread(mariadb, existing, timeout=60)
            proxy.freeze()
            sql(mariadb, db, "INSERT INTO t VALUES (1)")
            deadline = time.monotonic() + (30 if keep_alive else 15)
            while time.monotonic() < deadline and not data_events(records(out), "t"):
                time.sleep(0.2)
            arrived_while_frozen = bool(data_events(records(out), "t"))
            proxy.frozen.clear()  # the old connection delivers again: whatever it still sends is seen below
            settle_then_stop(proc, out, log)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert arrived_while_frozen is keep_alive
        assert [e["after"]["id"] for e in data_events(records(out), "t")] == [1]
    finally:
        proxy.close()


def settle_then_stop(proc: subprocess.Popen[bytes], out: Path, log: Path, quiet_s: float = 3.0,
                     timeout: float = 120.0) -> None:
    """Stop a capture subprocess cleanly (SIGTERM) once its output has a data event and then nothing
    new for ``quiet_s`` (what ``--stop-when-idle`` waits for), and require a clean exit."""
    deadline = time.monotonic() + timeout
    seen, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the capture exited by itself:\n{log.read_text(errors='replace')[-3000:]}"
        size = out.stat().st_size if out.exists() else 0
        if size != seen:
            seen, quiet_since = size, time.monotonic()
        elif data_events(records(out)) and time.monotonic() - quiet_since >= quiet_s:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)  # the coordinator commits the current batch and stops
    assert proc.wait(60) == 0, log.read_text(errors="replace")[-3000:]


# -- binlog.net.read.timeout / binlog.net.write.timeout ------------------------------------------------

def test_binlog_net_timeouts_are_the_binlog_sessions_timeouts(mariadb: Any, tmp_path: Path) -> None:
    """The binlog connection's settings give its session those timeouts on the real server (the
    dump thread's own variables are not visible without performance_schema)."""
    config = MySqlConnectorConfig.from_properties({"topic.prefix": "p", **mariadb.connection_properties(),
                                                   "binlog.net.read.timeout": "123",
                                                   "binlog.net.write.timeout": "77"})
    settings = binlog_connection_settings(config)
    settings["password"] = settings.pop("passwd")
    conn = pymysql.connect(**settings)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@SESSION.net_read_timeout, @@SESSION.net_write_timeout, @@GLOBAL.net_read_timeout")
            session_read, session_write, global_read = cur.fetchone()
    finally:
        conn.close()
    assert (session_read, session_write) == (123, 77) and global_read != 123
    default = binlog_connection_settings(MySqlConnectorConfig.from_properties({"topic.prefix": "p"}))
    assert "init_command" not in default  # 0: the server's defaults, as Debezium
    # and a capture with them streams
    db = "it_net_timeouts"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, binlog__net__read__timeout="123",
                             binlog__net__write__timeout="77")
    run = CaptureThread(props, tmp_path / "out.jsonl", stop_when_idle=2.0, mariadb=mariadb).start()
    run.wait_streaming()
    sql(mariadb, db, "INSERT INTO t VALUES (5)")
    run.wait()
    assert [e["after"]["id"] for e in data_events(records(tmp_path / "out.jsonl"), "t")] == [5]


# -- gtid.source.includes / excludes with gtid.source.filter.dml.events ----------------------------

@pytest.mark.parametrize(("props", "expected"), [
    ({"gtid__source__excludes": "7-.*"}, [1, 3]),
    ({"gtid__source__includes": "7-.*"}, [2]),
    ({"gtid__source__excludes": "7-.*", "gtid__source__filter__dml__events": "false"}, [1, 2, 3]),
])
def test_gtid_source_filter_skips_row_changes_of_other_sources(mariadb: Any, tmp_path: Path, props: dict[str, str],
                                                               expected: list[int]) -> None:
    """A MariaDB GTID's source is domain-server (Debezium's MariaDbGtidStreamId.asSourceFilterValue):
    the second insert runs in GTID domain 7, as a transaction replicated from elsewhere would."""
    db = "it_gtid_source"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    config = write_properties(tmp_path / "c.properties", mariadb, db, **props)
    out = tmp_path / "out.jsonl"
    run = CaptureThread(config, out, stop_when_idle=2.0, mariadb=mariadb).start()
    run.wait_streaming()
    sql(mariadb, db, "INSERT INTO t VALUES (1)")
    sql(mariadb, db, "SET SESSION gtid_domain_id = 7", "INSERT INTO t VALUES (2)")
    sql(mariadb, db, "CREATE TABLE t_after (id INT PRIMARY KEY)", "INSERT INTO t VALUES (3)")
    run.wait()
    assert [e["after"]["id"] for e in data_events(records(out), "t")] == expected
    # DDL is never filtered by GTID source: the table created afterwards is known
    assert "t_after" in _history_text(config)


# -- table.ignore.builtin -----------------------------------------------------------------------------

@pytest.mark.parametrize("ignore_builtin", [True, False])
def test_table_ignore_builtin_decides_on_tables_of_the_mysql_database(mariadb: Any, tmp_path: Path,
                                                                      ignore_builtin: bool) -> None:
    """A table in the built-in `mysql` database, selected by the lists: Debezium's filters leave it out
    unless table.ignore.builtin=false."""
    mariadb.admin_sql("DROP TABLE IF EXISTS mysql.lakecdc_probe;\n"
                      "CREATE TABLE mysql.lakecdc_probe (id INT PRIMARY KEY) ENGINE=InnoDB;\n"
                      "INSERT INTO mysql.lakecdc_probe VALUES (1);\n")
    try:
        config = write_properties(tmp_path / "c.properties", mariadb, "mysql",
                                  table__include__list="mysql.lakecdc_probe",
                                  table__ignore__builtin=str(ignore_builtin).lower())
        out = tmp_path / "out.jsonl"
        run = CaptureThread(config, out, stop_when_idle=2.0, mariadb=mariadb).start()
        run.wait_streaming()
        mariadb.admin_sql("INSERT INTO mysql.lakecdc_probe VALUES (2);\n")
        run.wait()
        events = [(e["op"], e["after"]["id"]) for e in data_events(records(out), "lakecdc_probe")]
        assert events == ([] if ignore_builtin else [("r", 1), ("c", 2)])
    finally:
        mariadb.admin_sql("DROP TABLE IF EXISTS mysql.lakecdc_probe;\n")


def test_initial_statements_run_on_the_sql_connections(mariadb: Any, tmp_path: Path) -> None:
    db = "it_initial_statements"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)",
        "CREATE TABLE probe (note VARCHAR(10))")
    config = write_properties(tmp_path / "c.properties", mariadb, db, table__include__list=f"{db}.t",
                              database__initial__statements=f"INSERT INTO {db}.probe VALUES ('a;;b');"
                                                            f"INSERT INTO {db}.probe VALUES ('c')")
    capture(config, tmp_path / "out.jsonl", stop_when_idle=1.5)
    assert [e["after"]["id"] for e in data_events(records(tmp_path / "out.jsonl"), "t")] == [1]
    notes = query(mariadb, db, "SELECT note, count(*) FROM probe GROUP BY note ORDER BY note")
    assert [n for n, _ in notes] == ["a;b", "c"] and notes[0][1] == notes[1][1] >= 1


def test_heartbeat_action_query_runs_on_the_source(mariadb: Any, tmp_path: Path) -> None:
    """Debezium's heartbeat.action.query runs on the source with each heartbeat. The query takes a
    user lock, seen from another session while the capture runs (a query writing a table would keep
    the binlog busy, so the capture would never go idle and stop)."""
    db = "it_heartbeat_action"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    config = write_properties(tmp_path / "c.properties", mariadb, db, heartbeat__interval__ms="300",
                              heartbeat__action__query="SELECT GET_LOCK('lakecdc_heartbeat_probe', 0)")
    out = tmp_path / "out.jsonl"
    run = CaptureThread(config, out, stop_when_idle=4.0, mariadb=mariadb).start()
    run.wait_streaming()
    deadline = time.monotonic() + 10
    holder = None
    while holder is None and time.monotonic() < deadline:
        holder = query(mariadb, db, "SELECT IS_USED_LOCK('lakecdc_heartbeat_probe')")[0][0]
        time.sleep(0.1)
    run.wait()
    assert holder is not None
    assert [r for r in records(out) if r["topic"].startswith("__debezium-heartbeat")]
    # closed with the capture: the lock is free again
    assert query(mariadb, db, "SELECT IS_USED_LOCK('lakecdc_heartbeat_probe')")[0][0] is None
