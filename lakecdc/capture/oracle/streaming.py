"""LogMiner streaming: mining windows -> buffered transactions -> records at COMMIT.

Each ``poll`` mines one window ``(start, end]`` with ``end = min(current SCN, start + batch size)``
(``log.mining.batch.size.*``; the size grows while the connector is behind and shrinks back when it
has caught up, sleeping ``log.mining.sleep.time.*`` between empty windows), in the steps of
``logminer.session``. Rows are handled by OPERATION_CODE:

====  ==========  ===========================================================================
code  operation   handling
====  ==========  ===========================================================================
6     START       opens the transaction in the buffer
9/10  LOB         SELECT_LOB_LOCATOR / LOB_WRITE (``lob.enabled``): buffered, merged at commit
1     INSERT      buffered under the XID (captured tables only; SQL_REDO parsed at commit)
3     UPDATE      buffered
2     DELETE      buffered
5     DDL         ``TRUNCATE TABLE`` of a captured table is buffered (op ``t``); any other DDL
                  is parsed into the table model, recorded in the schema history and announced
                  on the schema change topic (``database_schema``)
7     COMMIT      the transaction's changes become records, in redo order, unless the stored
                  offset says this commit was already emitted (restart)
36    ROLLBACK    the transaction is dropped
====  ==========  ===========================================================================

With ``log.mining.session.max.ms`` a window's LogMiner session that has been open that long is ended
and a new one mines the rest of the window (``logminer.limits``); ``log.mining.restart.connection``
reopens the mining connection then and at a log switch between windows.

The offset after a window is ``scn`` = the window end, or just before the oldest still-open
transaction, and ``commit_scn`` = the last emitted commit per redo thread (see ``offset``).

Memory is bounded: open transactions' rows are buffered per ``log.mining.buffer.*``
(``logminer.transactions``), and a poll hands over at most ``max.batch.size`` records. A committed
transaction's records are produced as its rows are read back, and mining the window pauses (its
LogMiner session and cursor stay open) until they are all handed over; its commit is recorded in the
offset only then, so an offset stored in between makes a restart emit the whole transaction again.

With ``signal.data.collection`` the signal table is captured like any other table: at the COMMIT of
a transaction, an insert into it is a signal or a window watermark (``capture/signaling.py``),
acted on before the row's own event (also when creates are skipped); an incremental snapshot's read
events go out before the close watermark's event, and the offset carries the snapshot's progress
as of the records emitted (``oracle/incremental.py``); a blocking snapshot's rows (read ``AS OF SCN``
the signal's commit) go out right after the signal's event. Kafka-channel signals are polled before
each mining window.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.heartbeat import Heartbeat
from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.blocking import blocking_snapshot
from lakecdc.capture.oracle.change_records import RecordFactory
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.database_schema import OracleDatabaseSchema
from lakecdc.capture.oracle.incremental import OracleIncrementalSnapshot
from lakecdc.capture.oracle.logminer import query as q
from lakecdc.capture.oracle.logminer.changes import LOB_MERGE_WINDOW, Change, transaction_changes
from lakecdc.capture.oracle.logminer.limits import SessionTimer
from lakecdc.capture.oracle.logminer.session import LogFile, end_session, logs_for, start_session
from lakecdc.capture.oracle.logminer.spill import SpillStore
from lakecdc.capture.oracle.logminer.transactions import Transaction, TransactionBuffer
from lakecdc.capture.oracle.offset import OracleOffset, ThreadCommit
from lakecdc.capture.oracle.schema_history import OracleSchemaHistory
from lakecdc.capture.oracle.source_info import source_builder
from lakecdc.capture.oracle.table_changes import schema_change_record
from lakecdc.capture.oracle.table_schema import TableSchema
from lakecdc.capture.oracle.types import TypeModes
from lakecdc.capture.signaling import Signaling
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import OraclePosition
from lakecdc.events.topics import TableId, TopicNamer
from lakecdc.events.transaction import TransactionTracker, transaction_record

log = logging.getLogger(__name__)

SQL_DB_OFFSET = "SELECT TO_CHAR(SYSTIMESTAMP, 'TZH:TZM') AS TZ FROM DUAL"


def tx_id_text(xid: Any) -> str:
    """Debezium's ``txId``: the XID as lower-case hex (``02000a0037030000``)."""
    if isinstance(xid, (bytes, bytearray)):
        return bytes(xid).hex()
    return str(xid).lower()


@dataclass
class _Window:
    """A mining window being read: its LogMiner session stays open while its rows are handled."""

    start: int
    end: int
    current: int  # the database's SCN when the window was chosen
    rows: Iterator[dict[str, Any]]
    last_ts: Any = None
    last_scn: int | None = None  #: the SCN of the last row handled


@dataclass
class _Emission:
    """A committed transaction whose records are being handed over, a few at a time."""

    tx: Transaction
    commit: ThreadCommit
    records: Iterator[list[Any]]


class OracleStreamingSource:
    def __init__(self, config: OracleConnectorConfig, modes: TypeModes, namer: TopicNamer,
                 sleep: Any = time.sleep, headers: list[tuple[str, bytes]] | None = None,
                 first_scn: list[int] | None = None, history: OracleSchemaHistory | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.modes = modes
        self.namer = namer
        self.source = source_builder(config)
        self.skipped = config.skipped_operation_codes
        signal = config.signal_table
        self._contents_sql = q.contents_query(config.excluded_schemas, config.lob_enabled, q.filter_predicate(
            config.log_mining_query_filter_mode, (config.schema_include_list, config.schema_exclude_list),
            (config.table_include_list, config.table_exclude_list),
            (config.log_mining_username_include_list, config.log_mining_username_exclude_list),
            f"{signal.schema}.{signal.table}" if signal is not None else None))
        # the SCN a start without an offset chose, kept by the connector: a reconnect before the
        # first commit resumes there instead of at a newer current SCN (which would skip changes)
        self._first_scn = first_scn if first_scn is not None else []
        self.headers = headers if headers is not None else config.data_headers()
        self.buffer = TransactionBuffer()
        self._window: _Window | None = None
        self._emission: _Emission | None = None
        self._carry: list[Any] = []  # records of the current change past the last hand-over's limit
        self.tracker = TransactionTracker()
        self.batch_size = config.log_mining_batch_size_default
        self.sleep_ms = config.log_mining_sleep_time_default_ms
        self._sleep = sleep
        self._session = SessionTimer(config.log_mining_session_max_ms, clock)
        self._newest_logs: set[tuple[int, int]] | None = None  #: the last window's newest log per thread
        self.conn: oraconn.OracleConnection | None = None
        # dictionary lookups run on their own connection (in the PDB): the mining connection stays in
        # CDB$ROOT with its LogMiner session and open V$LOGMNR_CONTENTS cursor
        self.meta_conn: oraconn.OracleConnection | None = None
        self.history = history
        self.schemas: OracleDatabaseSchema | None = None
        self._factories: dict[int, RecordFactory] = {}
        #: SQL_REDO longer than 4000 bytes comes in rows with CSF = 1 followed by the last piece
        self._continued: dict[str, str] = {}
        self.offset: OracleOffset | None = None
        self._next_start = 0
        self._dirty = False
        self._last_change = time.monotonic()
        self._db_offset = dt.timedelta(0)
        self.heartbeat = Heartbeat(config.heartbeat_interval_ms, namer.heartbeat_topic, config.topic_prefix)
        self.signaling: Signaling | None = None
        signal = config.signal_table
        #: (owner, table) of the signal table, whose inserts are signals and watermarks
        self._signal_key = (signal.schema, signal.table) if signal is not None else None
        self._signal_at: dict[str, Any] | None = None  #: the stream position of the signal being handled (log)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, offset: dict[str, Any] | None) -> None:
        c = self.config
        name = re.sub(r"[^A-Za-z0-9._-]", "_", c.connector_name)
        spill = SpillStore(name=f"lakecdc-logminer-{name}") if c.buffer_spills else None
        self.buffer = TransactionBuffer(spill, c.log_mining_buffer_memory_threshold,
                                        c.log_mining_buffer_transaction_events_threshold)
        self._window = self._emission = None
        self._carry = []
        self.conn = oraconn.connect(self.config)
        self.meta_conn = oraconn.connect(self.config)
        self.schemas = OracleDatabaseSchema(self.meta_conn, self.config, self.namer, self.modes, self.history)
        self.conn.use_root()
        if offset is None:
            # no snapshot (no_data): start at the current SCN, stored at the first commit
            if not self._first_scn:
                self._first_scn.append(self.conn.current_scn())
            self.offset = OracleOffset(self._first_scn[0])
            self._dirty = True
        else:
            self.offset = OracleOffset.from_offset(offset)
        self._next_start = self.offset.scn
        self.schemas.recover(self.offset.scn)
        tz = self.conn.scalar(SQL_DB_OFFSET) or "+00:00"
        sign = -1 if tz.startswith("-") else 1
        hours, minutes = tz.lstrip("+-").split(":")
        self._db_offset = sign * dt.timedelta(hours=int(hours), minutes=int(minutes))
        log.info("LogMiner streaming from SCN %d (commits already emitted: %s)", self.offset.scn,
                 self.offset.to_offset()["commit_scn"])
        if self._signal_key is not None:
            incremental = OracleIncrementalSnapshot(self.config, self.schemas, self.source, self.headers)
            self.signaling = Signaling(self.config, incremental, self._blocking_snapshot,
                                       offset=lambda: self._signal_at)
            incremental.restore(offset)
            incremental.start()  # a snapshot restored from the offset goes on with a new window

    def _blocking_snapshot(self, signal: Any, tables: list[str], position: OraclePosition | None,
                           selects: dict[str, str]) -> list[Any]:
        """Streaming waits while ``tables`` are read whole ``AS OF SCN`` the signal's commit (a Kafka
        signal: the restart SCN; ``blocking.py``)."""
        assert self.schemas is not None and self.offset is not None
        scn = position.commit_scn if position is not None and position.commit_scn else self.offset.scn
        return blocking_snapshot(self.config, self.modes, self.namer, self.schemas, self.headers, tables, scn,
                                 selects)

    def close(self) -> None:
        if self.signaling is not None:
            self.signaling.close()
            self.signaling = None
        self._window = self._emission = None
        self.buffer.close(self.config.log_mining_buffer_drop_on_stop)
        for conn in (self.conn, self.meta_conn):
            if conn is not None:
                conn.close()
        self.conn = self.meta_conn = None

    def idle_seconds(self) -> float:
        return time.monotonic() - self._last_change

    def committable_offset(self) -> dict[str, Any] | None:
        if not self._dirty or self.offset is None:
            return None
        self._dirty = False
        offset = self.offset.to_offset()
        if self.signaling is not None:  # the snapshot's progress as of every record handed out
            self.signaling.incremental.store(offset)
        return offset

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to tell Oracle: the archived logs are kept by the database's own retention."""

    # -- mining ----------------------------------------------------------------------------
    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        assert self.conn is not None and self.offset is not None
        limit = max(1, min(max_records, self.config.max_batch_size))
        if self._window is None and not self._open_window(out, timeout):
            return
        try:
            done = self._mine(out, limit)
        except BaseException:
            self._abandon_window()
            raise
        if done:
            self._close_window()
        if len(out) < limit:
            self._beat(out)

    def _open_window(self, out: list[Any], timeout: float) -> bool:
        assert self.conn is not None and self.offset is not None
        conn = self.conn
        if self.signaling is not None:
            # a Kafka signal acts between mining windows: a ``log`` message names the restart offset
            self._signal_at = self.offset.to_offset()
            self.signaling.poll_kafka(OraclePosition(scn=self.offset.scn), out)
        conn.use_root()
        current = conn.current_scn()
        start = self._next_start
        if current <= start:
            self._adjust(caught_up=True)
            self._beat(out)
            self._sleep(min(timeout, self.sleep_ms / 1000.0))
            return False
        end = min(current, start + self.batch_size)
        archive_only, hours = self.config.log_mining_archive_log_only_mode, self.config.archive_log_hours
        files = None
        if self.config.log_mining_restart_connection:
            files = logs_for(conn, start, archive_only, hours)
            if self._log_switched(files):
                conn = self._reconnect("a log switch")
        end = start_session(conn, start, end, archive_only, hours, files)
        if end <= start:  # archive-log-only mode, nothing newer archived yet
            self._sleep(min(timeout, self.sleep_ms / 1000.0))
            return False
        self._window = _Window(start, end, current, self._contents(start, end))
        return True

    def _contents(self, start: int, end: int) -> Iterator[dict[str, Any]]:
        """The session's V$LOGMNR_CONTENTS rows of ``(start, end]`` (the session is ended on failure)."""
        assert self.conn is not None
        self._session.started()
        try:
            return self.conn.iter_query(self._contents_sql, {"start_scn": start, "end_scn": end})
        except BaseException:
            end_session(self.conn)
            raise

    def _log_switched(self, files: list[LogFile]) -> bool:
        """Whether the newest log of a redo thread changed since the last window."""
        newest = {(t, max(f.sequence for f in files if f.thread == t)) for t in {f.thread for f in files}}
        switched = self._newest_logs is not None and newest != self._newest_logs
        self._newest_logs = newest
        return switched

    def _reconnect(self, why: str) -> oraconn.OracleConnection:
        """``log.mining.restart.connection``: a new mining connection (Oracle frees the old one's memory)."""
        assert self.conn is not None
        log.info("log.mining.restart.connection: reconnecting the mining connection after %s", why)
        self.conn.close()
        self.conn = oraconn.connect(self.config)
        self.conn.use_root()
        return self.conn

    def _restart_session(self, window: _Window, after_scn: int) -> None:
        """``log.mining.session.max.ms``: end the session and mine ``(after_scn, window end]`` in a new one."""
        assert self.conn is not None
        close = getattr(window.rows, "close", None)
        if close is not None:
            close()  # the old session's cursor
        end_session(self.conn)
        log.debug("LogMiner session open for %d ms or more (log.mining.session.max.ms); restarting after SCN %d",
                  self._session.max_ms, after_scn)
        if self.config.log_mining_restart_connection:
            self._reconnect("log.mining.session.max.ms")
        start_session(self.conn, after_scn, window.end, self.config.log_mining_archive_log_only_mode,
                      self.config.archive_log_hours)
        window.rows = self._contents(after_scn, window.end)

    def _mine(self, out: list[Any], limit: int) -> bool:
        """Handle the window's rows until it is read (True) or ``limit`` records are in ``out``."""
        window = self._window
        assert window is not None
        while True:
            if self._emission is not None and not self._hand_over(out, limit):
                return False
            if len(out) >= limit:  # a row adds at most one record of its own (a schema change)
                return False
            row = next(window.rows, None)
            if row is None:
                return True
            scn = int(row["SCN"])
            if (window.last_scn is not None and scn > window.last_scn and not self._continued
                    and self._session.expired()):
                # every row up to last_scn is handled: the new session starts after it and reads this row again
                self._restart_session(window, window.last_scn)
                continue
            self._handle(row, out)
            window.last_ts = row.get("TIMESTAMP") or window.last_ts
            window.last_scn = scn

    def _hand_over(self, out: list[Any], limit: int) -> bool:
        """Move the committing transaction's records to ``out`` up to ``limit``; True once all are."""
        emission = self._emission
        assert emission is not None and self.offset is not None
        while len(out) < limit:
            if self._carry:
                room = limit - len(out)
                out.extend(self._carry[:room])
                del self._carry[:room]
                continue
            chunk = next(emission.records, None)
            if chunk is None:
                self._emission = None
                self.buffer.release(emission.tx)
                self.offset.record_commit(emission.commit)  # every record of it is handed over
                self._dirty = True
                self._last_change = time.monotonic()
                return True
            self._carry = chunk
        return False

    def _close_window(self) -> None:
        window = self._window
        assert window is not None and self.conn is not None and self.offset is not None
        self._window = None
        end_session(self.conn)
        retention = self.config.log_mining_transaction_retention_ms
        if retention and window.last_ts is not None:
            for tx in self.buffer.abandon_started_before(window.last_ts - dt.timedelta(milliseconds=retention)):
                log.warning("transaction %s (started at SCN %d) has been open longer than "
                            "log.mining.transaction.retention.ms=%d; its %d buffered changes are dropped",
                            tx.xid, tx.start_scn, retention, tx.size)
        self._next_start = window.end
        self.offset.scn = self.buffer.restart_scn(window.end)
        self.offset.passed_snapshot(self.offset.scn)
        self._dirty = True
        self._adjust(caught_up=window.end >= window.current)

    def _abandon_window(self) -> None:
        """A failure mid-window: the session ends; the restart mines from the stored offset."""
        self._window = self._emission = None
        self._carry = []
        if self.conn is not None:
            try:
                end_session(self.conn)
            except Exception:  # noqa: BLE001 - the connection is likely gone; the failure is raised
                log.debug("ending the LogMiner session after a failure failed too", exc_info=True)

    def _adjust(self, caught_up: bool) -> None:
        c = self.config
        if caught_up:
            self.batch_size = max(c.log_mining_batch_size_min, min(self.batch_size, c.log_mining_batch_size_default))
            self.sleep_ms = min(c.log_mining_sleep_time_max_ms, self.sleep_ms + c.log_mining_sleep_time_increment_ms)
        else:
            self.batch_size = min(c.log_mining_batch_size_max, self.batch_size + c.log_mining_batch_size_increment)
            self.sleep_ms = max(c.log_mining_sleep_time_min_ms, self.sleep_ms - c.log_mining_sleep_time_increment_ms)

    def _beat(self, out: list[Any]) -> None:
        if self.heartbeat.due(time.monotonic()):
            record = self.heartbeat.beat()
            if record is not None:
                out.append(record)

    def _handle(self, row: dict[str, Any], out: list[Any]) -> None:
        code = int(row["OPERATION_CODE"])
        xid = tx_id_text(row["XID"])
        assert self.offset is not None
        if self.offset.before_snapshot(int(row["SCN"])) and xid not in self.offset.pending:
            return  # committed before the snapshot SCN: in the snapshot already
        if row.get("CSF") in (1, "1"):
            self._continued[xid] = self._continued.get(xid, "") + (row.get("SQL_REDO") or "")
            return
        if xid in self._continued:
            row = {**row, "SQL_REDO": self._continued.pop(xid) + (row.get("SQL_REDO") or "")}
        if code == q.OP_START:
            self.buffer.start(row, xid)
        elif code in (q.OP_INSERT, q.OP_UPDATE, q.OP_DELETE) or (
                code in (q.OP_SELECT_LOB_LOCATOR, q.OP_LOB_WRITE) and self.config.lob_enabled):
            if self._wanted(row):
                self.buffer.add(row, xid)
        elif code == q.OP_DDL:
            self._ddl(row, xid, out)
        elif code == q.OP_COMMIT:
            tx = self.buffer.commit(xid)
            self._commit(row, tx, out)
        elif code == q.OP_ROLLBACK:
            tx = self.buffer.rollback(xid)
            if tx is not None and tx.size:
                log.debug("transaction %s rolled back: %d buffered changes dropped", xid, tx.size)

    def _wanted(self, row: dict[str, Any]) -> bool:
        assert self.schemas is not None
        owner, table = row["SEG_OWNER"], row["TABLE_NAME"]
        if not owner or not table or not self.schemas.is_captured(owner, table):
            return False
        user = (row.get("USERNAME") or "").upper()
        if user in ("SYS", "SYSTEM"):  # never captured (Debezium Oracle docs), whatever the query returned
            return False
        c = self.config
        if c.username_include and not any(_full_match(p, user) for p in c.username_include):
            return False
        return not any(_full_match(p, user) for p in c.username_exclude)

    def _ddl(self, row: dict[str, Any], xid: str, out: list[Any]) -> None:
        assert self.schemas is not None
        owner, table = row["SEG_OWNER"], row["TABLE_NAME"]
        if not owner or not table:
            return
        sql = (row.get("SQL_REDO") or "").strip()
        if sql[:14].lower() == "truncate table":
            if self.schemas.is_captured(owner, table):
                self.buffer.add(row, xid)
            return
        scn = int(row["SCN"])
        changes = self.schemas.apply_ddl(sql, owner, table, scn)
        if not changes or not self.config.include_schema_changes:
            return
        source = self.source.build(
            db=self.config.source_db, schema=owner, table=table, ts_ms=self._ms(row.get("TIMESTAMP")) or 0, scn=scn,
            commit_scn=int(row.get("COMMIT_SCN") or scn), tx_id=xid, rs_id=_rs_id(row),
            ssn=int(row.get("SSN") or 0), redo_thread=int(row.get("THREAD") or 1), user_name=row.get("USERNAME"),
            row_id=row.get("ROW_ID"))
        position = OraclePosition(scn=scn, commit_scn=int(row.get("COMMIT_SCN") or scn), rs_id=_rs_id(row),
                                  ssn=int(row.get("SSN") or 0), tx_id=xid)
        out.append(schema_change_record(self.namer.schema_change_topic, source, self.config.source_db, owner,
                                        sql.rstrip().rstrip(";"), changes, position))
        self._last_change = time.monotonic()

    # -- commit -> records -------------------------------------------------------------------
    def _ms(self, value: Any) -> int | None:
        if value is None:
            return None
        utc = value - self._db_offset
        return int((utc - dt.datetime(1970, 1, 1)).total_seconds() * 1000)

    def _commit(self, row: dict[str, Any], tx: Transaction | None, out: list[Any]) -> None:
        assert self.offset is not None and self.schemas is not None
        commit_scn, thread = int(row["SCN"]), int(row.get("THREAD") or 1)
        commit = ThreadCommit(commit_scn, _rs_id(row), int(row.get("SSN") or 0), thread)
        if self.offset.already_emitted(thread, commit_scn):
            if tx is not None:
                if tx.size:
                    log.debug("transaction %s (commit SCN %d) was emitted before the restart; skipped", tx.xid,
                              commit_scn)
                self.buffer.release(tx)
            return
        if tx is not None and tx.size:
            # handed over by _hand_over, which records the commit once every record is out
            self._emission = _Emission(tx, commit, self._emit(tx, row, commit))
            return
        self.offset.record_commit(commit)
        self._dirty = True

    def _emit(self, tx: Transaction, commit_row: dict[str, Any], commit: ThreadCommit) -> Iterator[list[Any]]:
        """The transaction's records, a change's worth at a time, produced as its rows are read."""
        assert self.schemas is not None
        commit_ts_ms = self._ms(commit_row.get("TIMESTAMP"))
        start_ts_ms = self._ms(tx.start_ts)
        metadata = self.config.provide_transaction_metadata
        tracker = self.tracker
        began = False
        changes = transaction_changes(tx.xid, self.buffer.rows(tx), self.config.event_processing_failure_handling_mode,
                                      lob_window=LOB_MERGE_WINDOW if self.config.lob_enabled else 0)
        for seq, change in enumerate(changes, start=1):
            out: list[Any] = []
            ev, op = change.row, change.op
            owner, table = ev["SEG_OWNER"], ev["TABLE_NAME"]
            if self.signaling is not None and op != "t":
                self._signal(change, commit, tx.xid, out)
            if op in self.skipped:
                if self.signaling is not None:
                    self.signaling.drain(out)  # a blocking snapshot's rows, where the signal's event would be
                if out:
                    yield out
                continue
            self.schemas.scn = int(ev["SCN"])
            schema = self.schemas.get(owner, table)
            source = self.source.build(
                db=self.config.source_db, schema=owner, table=table, ts_ms=self._ms(ev.get("TIMESTAMP")) or 0,
                scn=int(ev["SCN"]), commit_scn=commit.scn, tx_id=tx.xid, rs_id=commit.rs_id, ssn=commit.ssn,
                redo_thread=commit.thread, user_name=ev.get("USERNAME"), commit_ts_ms=commit_ts_ms,
                start_scn=tx.start_scn, start_ts_ms=start_ts_ms, tx_sequence=seq, row_id=ev.get("ROW_ID"),
                redo_sql=ev.get("SQL_REDO") if self.config.log_mining_include_redo_sql else None)
            position = OraclePosition(scn=int(ev["SCN"]), commit_scn=commit.scn, rs_id=_rs_id(ev),
                                      ssn=int(ev.get("SSN") or 0), tx_id=tx.xid)
            if metadata and not began:
                out.append(transaction_record(self.namer.transaction_topic,
                                              tracker.begin(tx.xid, commit_ts_ms or 0), position))
                began = True
            tx_for = (lambda s=schema: tracker.event(s.data_collection)) if metadata else None
            self._records(out, schema, change, source, position, tx_for)
            if self.signaling is not None:
                self.signaling.drain(out)  # a blocking snapshot's rows, after the signal's own event
            yield out
        if began:
            yield [transaction_record(self.namer.transaction_topic, tracker.end(None, commit_ts_ms or 0))]

    def _signal(self, change: Change, commit: ThreadCommit, xid: str, out: list[Any]) -> None:
        """Before a committed change's own event: a change inside an incremental snapshot's window
        supersedes the chunk's buffered row (both keys of an update); an insert into the signal
        table is a signal or a watermark (the close watermark's read events go to ``out`` here)."""
        assert self.signaling is not None and self.schemas is not None
        ev = change.row
        owner, table = ev["SEG_OWNER"], ev["TABLE_NAME"]
        incremental = self.signaling.incremental
        table_id = TableId(None, owner, table)
        is_signal = change.op == "c" and (owner, table) == self._signal_key
        if not is_signal and not incremental.in_window(table_id):
            return
        self.schemas.scn = int(ev["SCN"])
        schema = self.schemas.get(owner, table)
        if incremental.in_window(table_id) and change.op not in self.skipped:
            for image in (change.old, change.new):
                if image:  # an insert has no old image, a delete no new one
                    incremental.seen(table_id, schema.key(schema.row(image)))
        if is_signal:
            position = OraclePosition(scn=int(ev["SCN"]), commit_scn=commit.scn, rs_id=_rs_id(ev),
                                      ssn=int(ev.get("SSN") or 0), tx_id=xid)
            self._signal_at = {"scn": str(ev["SCN"]), "commit_scn": str(commit.scn)}
            self.signaling.on_row(schema.row(change.new), position, out)

    def _factory(self, schema: TableSchema) -> RecordFactory:
        factory = self._factories.get(id(schema))
        if factory is None or factory.schema is not schema:
            factory = RecordFactory(schema, self.config.tombstones_on_delete, self.headers)
            self._factories[id(schema)] = factory
        return factory

    def _records(self, out: list[ChangeRecord], schema: TableSchema, change: Change, source: dict[str, Any],
                 position: OraclePosition, tx_for: Any) -> None:
        factory = self._factory(schema)
        ts_ns = time.time_ns()
        if change.op == "t":
            out.append(factory.truncate(source, position, ts_ns, tx_for() if tx_for else None))
        elif change.op == "c":
            factory.insert_into(out, schema.row(change.new), source, position, ts_ns, tx_for)
        elif change.op == "d":
            factory.delete_into(out, schema.row(change.old), source, position, ts_ns, tx_for)
        else:
            factory.update_into(out, schema.row(change.old), schema.row(change.new), source, position, ts_ns,
                                tx_for)


def _rs_id(row: dict[str, Any]) -> str | None:
    """RS_ID as Debezium keeps it: trimmed (LogMiner pads it with spaces)."""
    value = row.get("RS_ID")
    return value.strip() if isinstance(value, str) else value


def _full_match(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value, re.IGNORECASE) is not None

