"""Binlog streaming: row events, DDL, transactions and offsets (Debezium's binlog streaming source).

For each binlog event read (in ``poll``):

- GTID / ``BEGIN``: a transaction starts; its first event's position is the restart position;
- ``TABLE_MAP`` + ``WRITE/UPDATE/DELETE_ROWS``: one change event per row (``c``/``u``/``d``; a key
  change is delete + tombstone + create with the key headers); each row's position is
  ``(file, position of the rows event, row index)``;
- ``XID`` / ``COMMIT``: the transaction ends (transaction END event); the offset moves past it;
- ``QUERY`` with DDL: parsed, recorded in the schema history *before* anything that depends on
  it, then a schema change event; ``TRUNCATE`` gives one ``op: "t"`` event per table.

Signals and incremental snapshots: inserts into the signal table go to ``Signaling`` before their
own event; with ``read.only=true`` the GTIDs streamed (after each transaction and between batches)
close the snapshot's windows instead (``read_only.py``).

Nothing is emitted twice: a restart from a stored offset skips the rows the offset says were
delivered, and within one process every record's position is compared with the highest position
already handed to the sink (the binlog client can re-deliver events after a reconnect).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from lakecdc.capture.heartbeat import Heartbeat
from lakecdc.capture.incremental import IncrementalSnapshot
from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql.binlog_reader import BinlogReader, ReaderFailure
from lakecdc.capture.mysql.blocking import blocking_snapshot
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.errors import (
    BinlogPurgedError,
    MySqlConnectionLostError,
    MySqlSetupError,
    UnknownTableError,
)
from lakecdc.capture.mysql.failure_modes import is_source_error, on_undecodable_event, on_unknown_table
from lakecdc.capture.mysql.incremental import MySqlIncrementalSnapshot
from lakecdc.capture.mysql.offset import ResumePoint, boundary_offset, in_transaction_offset, resume_point
from lakecdc.capture.mysql.read_only import ReadOnlyIncrementalSnapshot, check_prerequisites
from lakecdc.capture.mysql.row_decoder import library_images, row_images
from lakecdc.capture.mysql.source_info import source_builder
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.capture.signaling import Signaling
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.gtid import GtidSet
from lakecdc.events.positions import MySqlPosition, binlog_file_index
from lakecdc.events.topics import TableId as TopicTableId
from lakecdc.events.topics import TopicNamer
from lakecdc.events.transaction import TransactionTracker, transaction_record

log = logging.getLogger(__name__)

HEADER_LEN = 19


@dataclass
class EmittedMark:
    """The highest (file index, event position, row) handed to the sink in this process."""

    through: tuple[int, int, int] = (-1, -1, -1)


@dataclass
class _Tx:
    start: int = 0
    gtid: str | None = None
    thread: int | None = None
    query: str | None = None
    open: bool = False
    last_event_pos: int = -1
    rows_done: int = 0
    events_done: int = 0
    emitted: bool = False
    seen_positions: set[int] = field(default_factory=set)
    skip_rows: bool = False  # its GTID's source is filtered out (gtid.source.filter.dml.events)


class MySqlStreamingSource:
    def __init__(self, config: Any, modes: TypeModes, namer: TopicNamer, history: Any,
                 emitted: EmittedMark, snapshot_for_schema: Any = None,
                 headers: list[tuple[str, bytes]] | None = None) -> None:
        self.config = config
        self.modes = modes
        self.namer = namer
        self.history = history
        self.emitted = emitted
        self.snapshot_for_schema = snapshot_for_schema  # callable(schema) -> offset, for no_data starts
        self.schema = DatabaseSchema(config, modes, namer, history, headers)
        self.source = source_builder(config)
        self.skipped = config.skipped_operation_codes
        self.include_query = config.include_query
        self.tracker = TransactionTracker() if config.provide_transaction_metadata else None
        #: Debezium's MariaDB connector begins a transaction at every GTID event (see _announce_begin)
        self.eager_begin = self.tracker is not None and config.connector_type == "mariadb"
        self.reader: BinlogReader | None = None
        self.tx = _Tx()
        self.file = ""
        self.file_index = 0
        #: source.row of DDL and TRUNCATE events: Debezium's BinlogSourceInfo keeps the row number of
        #: the last captured rows event until a rotate event resets it (setBinlogPosition)
        self._source_row = 0
        self.resume: ResumePoint | None = None
        self.gtids = GtidSet()
        self.server_id = 0
        self.checksum_len = 4
        self._committed: dict[str, Any] | None = None
        self._last_offset_returned: dict[str, Any] | None = None
        self._pending: list[ChangeRecord] = []
        self._last_data = time.monotonic()
        self.heartbeat = Heartbeat(config.heartbeat_interval_ms, namer.heartbeat_topic, config.topic_prefix)
        self.events_seen = 0
        # (file index, end position) of the last binlog event handled by this source
        self._processed_through: tuple[int, int] = (-1, -1)
        self.signaling: Signaling | None = None
        self._sql: Any = None  # autocommit connection of incremental snapshots (chunks, watermarks)
        self._heartbeat_sql: Any = None  # autocommit connection of heartbeat.action.query
        #: the incremental snapshot when read.only=true: its windows close on the GTIDs streamed
        self._gtid_windows: ReadOnlyIncrementalSnapshot | None = None
        signal = config.signal_table
        #: (database, table) of the signal table, whose inserts are signals and watermarks
        self._signal_key = (signal.schema, signal.table) if signal is not None else None

    # -- start ---------------------------------------------------------------------------------
    def start(self, offset: dict[str, Any] | None) -> None:
        conn = myconn.connect(self.config)
        try:
            info = myconn.server_info(conn)
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL VARIABLES LIKE 'log_bin'")
                row = cur.fetchone()
                cur.execute("SHOW GLOBAL VARIABLES LIKE 'binlog_checksum'")
                checksum = cur.fetchone()
            myconn.check_setup(info, row[1] if row else None)
            self.checksum_len = 0 if checksum and str(checksum[1]).upper() == "NONE" else 4
            self.server_id = info.server_id
            mode = self.config.snapshot_mode_normalized
            if offset is None:
                if mode == "never":
                    files = myconn.binlog_files(conn)
                    offset = boundary_offset(files[0], 4, info.server_id, None, None)
                    log.info("snapshot.mode=never: reading the binlog from its oldest file %s", files[0])
                else:
                    assert self.snapshot_for_schema is not None
                    offset = self.snapshot_for_schema(self.schema, self._pending.extend)
            else:
                self._check_available(conn, info, offset)
                point = resume_point(offset)
                if mode == "recovery" or not self.history.exists():
                    if mode != "recovery":
                        raise MySqlSetupError(
                            "the schema history is empty but an offset is stored: the table structures at "
                            f"{point.file}:{point.pos} are unknown; restore the history, or set "
                            "snapshot.mode=recovery to rebuild it from the current structures"
                        )
                    log.warning("snapshot.mode=recovery: rebuilding the schema history from the current tables")
                    self.snapshot_for_schema(self.schema, None, position=offset)
                else:
                    applied = self.history.recover(point.file, point.pos, self.schema.tables)
                    log.info("schema history: %d statements replayed up to %s:%d", applied, point.file, point.pos)
            self.resume = resume_point(offset)
            self.gtids = GtidSet.parse(self.resume.gtids)
            self._committed = offset
        finally:
            conn.close()
        settings = binlog_connection_settings(self.config)
        self.file = self.resume.file
        self.file_index = binlog_file_index(self.file)
        self.reader = BinlogReader(
            settings, self.config.replica_server_id, self.resume.file, self.resume.pos,
            is_mariadb=info.is_mariadb, annotate_rows=self.include_query,
            queue_size=self.config.max_queue_size,
            mariadb_gtid_state=(self.resume.gtids or "") if info.is_mariadb else None,
            deserialization_failure_mode=self.config.event_deserialization_failure_handling_mode,
        )
        self.reader.start()
        if self.heartbeat.enabled and self.config.heartbeat_action_query:
            self._heartbeat_sql = myconn.connect(self.config, autocommit=True)
            self.heartbeat = Heartbeat(self.config.heartbeat_interval_ms, self.heartbeat.topic,
                                       self.config.topic_prefix, self.config.heartbeat_action_query,
                                       _Statements(self._heartbeat_sql))
        self._last_data = time.monotonic()  # idle time counts from here, not from before a schema snapshot
        log.info("streaming the binlog from %s:%d (server %s)", self.resume.file, self.resume.pos, info.version)
        # read-only: signals may come from Kafka alone, there being no signal table to write watermarks to
        if self.config.signal_table is not None or (self.config.read_only and "kafka" in self.config.signal_channels):
            self._start_signals(offset, info)

    def _start_signals(self, offset: dict[str, Any], info: myconn.ServerInfo) -> None:
        self._sql = myconn.connect(self.config, autocommit=True, conv=myconn.row_decoders(parsed=True))
        incremental: MySqlIncrementalSnapshot
        if self.config.read_only:
            check_prerequisites(self._sql, info)
            incremental = self._gtid_windows = ReadOnlyIncrementalSnapshot(
                self._sql, self.schema, self.config, self.source, self.config.signal_table, info.is_mariadb,
                stream_gtids=lambda: self.gtids)
            log.info("read.only=true: incremental snapshot windows are bounded by GTIDs; nothing is written")
        else:
            incremental = MySqlIncrementalSnapshot(self._sql, self.schema, self.config, self.source,
                                                   self.config.signal_table)
        self.signaling = Signaling(self.config, incremental, self._blocking_snapshot, offset=lambda: self._committed)
        incremental.restore(offset)
        incremental.start()

    def _blocking_snapshot(self, signal: Any, tables: list[str], position: MySqlPosition | None,
                           selects: dict[str, str]) -> list[Any]:
        return blocking_snapshot(self.config, self.schema, tables, position or self._position(), selects)

    def _position(self) -> MySqlPosition:
        """Where streaming is between two events: the last committed transaction's end."""
        committed = self._committed or {"file": self.file, "pos": 4}
        return MySqlPosition(file=committed["file"], pos=int(committed["pos"]), server_id=self.server_id,
                             gtid_set=committed.get("gtids"))

    def _check_available(self, conn: Any, info: Any, offset: dict[str, Any]) -> None:
        point = resume_point(offset)
        files = myconn.binlog_files(conn)
        if point.file not in files:
            raise BinlogPurgedError(
                f"binlog file {point.file} needed to resume at {point.file}:{point.pos} is no longer on the "
                f"server (oldest is {files[0] if files else 'none'}): it was purged while capture was stopped. "
                "Set snapshot.mode=when_needed to take a new snapshot automatically, or snapshot.mode=always"
            )

    # -- poll ----------------------------------------------------------------------------------
    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        if self._pending:
            out.extend(self._pending)
            self._pending = []
        if self._gtid_windows is not None:  # chunks of an idle server go out without waiting for an event
            self._close_gtid_windows(self._position(), out, max_records)
        reader = self.reader
        assert reader is not None
        deadline = time.monotonic() + timeout
        handle = self._handle
        while len(out) < max_records:
            if out:
                # drain what is buffered, but not past the deadline: events that add nothing here
                # (other tables' transactions) could keep coming and hold back the heartbeats,
                # offset commits and the stop check that run between polls
                if time.monotonic() >= deadline:
                    break
                item = reader.get_nowait()
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                item = reader.get(remaining)
            if item is None:
                break
            if isinstance(item, ReaderFailure):
                self._raise_failure(item.error)
            handle(item[0], item[1], out)
        if self.signaling is not None:
            self.signaling.poll_kafka(self._position(), out)
        if self._gtid_windows is not None:  # between batches, also when the server is idle
            self._close_gtid_windows(self._position(), out, max_records)
        if self.heartbeat.enabled and self.heartbeat.due(time.monotonic()):
            beat = self.heartbeat.beat()
            if beat is not None:
                out.append(beat)

    def _close_gtid_windows(self, position: MySqlPosition, out: list[Any], limit: int) -> None:
        assert self._gtid_windows is not None
        before = len(out)
        self._gtid_windows.on_stream(self.gtids, position, out, limit)
        if len(out) > before:  # a snapshot's rows are work too: an idle-stop must not cut it short
            self._last_data = time.monotonic()

    def _raise_failure(self, error: BaseException) -> None:
        if myconn.is_connection_lost(error) or isinstance(error, (OSError, ConnectionError)):
            raise MySqlConnectionLostError(f"the binlog connection was lost: {error}") from error
        if not is_source_error(error):  # the event, not the connection: retrying would fail the same way
            on_undecodable_event("fail", error, f"{self.file}:{self._processed_through[1]} (or the event after it)")
        text = str(error)
        if "1236" in text or "purged" in text.lower() or "Could not find first log" in text:
            raise BinlogPurgedError(f"the server cannot send the binlog from {self.file}: {text}") from error
        raise MySqlConnectionLostError(f"reading the binlog failed: {type(error).__name__}: {text}") from error

    # -- events --------------------------------------------------------------------------------
    def _handle(self, file: str, ev: Any, out: list[Any]) -> None:
        from pymysqlreplication.event import (
            GtidEvent,
            MariadbAnnotateRowsEvent,
            MariadbGtidEvent,
            QueryEvent,
            RotateEvent,
            RowsQueryLogEvent,
            XidEvent,
        )
        from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

        self.events_seen += 1
        if isinstance(ev, RotateEvent):
            self._source_row = 0
            if ev.next_binlog != self.file:
                self.file = ev.next_binlog
                self.file_index = binlog_file_index(self.file)
            return
        end = ev.packet.log_pos
        if end == 0:
            return  # artificial events (fake rotate, format description replay)
        if (self.file_index, end) <= self._processed_through:
            return  # re-delivered after the binlog client reconnected: already handled
        self._processed_through = (self.file_index, end)
        # "idle" means the binlog has nothing new, not that nothing captured changed: catching up
        # on other databases' events is work
        self._last_data = time.monotonic()
        start = end - ev.event_size - HEADER_LEN - self.checksum_len
        if isinstance(ev, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
            self._rows(ev, start, out)
        elif isinstance(ev, (MariadbGtidEvent, GtidEvent)):
            self._begin(start, str(ev.gtid))
            if self.eager_begin:
                self._announce_begin(ev, start, out)
        elif isinstance(ev, XidEvent):
            self._commit(end, ev.timestamp, out)
        elif isinstance(ev, QueryEvent):
            self._query(ev, start, end, out)
        elif isinstance(ev, MariadbAnnotateRowsEvent):
            self.tx.query = _text(ev.sql_statement)
        elif isinstance(ev, RowsQueryLogEvent):
            self.tx.query = _text(ev.query)

    def _begin(self, start: int, gtid: str | None) -> None:
        self.tx = _Tx(start=start, gtid=gtid, open=True,
                      skip_rows=gtid is not None and not self.config.captures_gtid_source(gtid))

    def _announce_begin(self, ev: Any, start: int, out: list[Any]) -> None:
        """BEGIN at the GTID event, as Debezium's MariaDB connector (MariaDbStreamingChangeEventSource.
        handleGtidEvent -> handleTransactionBegin): also for a transaction without captured changes
        (its END counts 0 events) and for a DDL statement or TRUNCATE, which no XID event ends, so
        no END follows and the next GTID begins the next transaction. Not repeated for a
        transaction whose events were delivered before a restart (Debezium's TransactionMonitor)."""
        assert self.tracker is not None
        if self.tracker.in_transaction:
            self.tracker.end(None, 0)
        begin = self.tracker.begin(self.tx.gtid or f"{self.file}:{start}", ev.timestamp * 1000)
        if (self.file_index, start, 0) > self.emitted.through and not self._resumed_past(start, 0):
            position = MySqlPosition(file=self.file, pos=start, server_id=ev.packet.server_id, gtid=self.tx.gtid,
                                     ts_sec=ev.timestamp)
            out.append(transaction_record(self.namer.transaction_topic, begin, position))

    def _query(self, ev: Any, start: int, end: int, out: list[Any]) -> None:
        sql = ev.query if isinstance(ev.query, str) else bytes(ev.query).decode("utf-8", "replace")
        head = sql.lstrip()[:9].upper()
        if head.startswith("BEGIN") or head.startswith("XA START"):
            if not self.tx.open:
                self._begin(start, None)
            # the only thread id Debezium reports: a BEGIN query's (MySQL). MariaDB starts transactions
            # with a GTID event instead, which has none, so its events carry thread null as in Debezium
            self.tx.thread = ev.slave_proxy_id
            return
        if head.startswith("COMMIT") or head.startswith("XA COMMIT") or head.startswith("XA END"):
            if head.startswith("XA END"):
                return
            self._commit(end, ev.timestamp, out)
            return
        if head.startswith("ROLLBACK"):
            self._rollback(end)
            return
        self._ddl(ev, sql, start, end, out)

    def _ddl(self, ev: Any, sql: str, start: int, end: int, out: list[Any]) -> None:
        db = ev.schema.decode("utf-8") if isinstance(ev.schema, (bytes, bytearray)) else (ev.schema or None)
        db = db or None
        gtid = self.tx.gtid
        history_position = {"file": self.file, "pos": start, "server_id": ev.packet.server_id,
                            "gtids": str(self.gtids.add(gtid)) if gtid else (str(self.gtids) or None),
                            "ts_sec": ev.timestamp}
        statements = self.schema.apply_ddl(sql, db, history_position, f"{self.file}:{start}", ev.timestamp * 1000)
        fresh = (self.file_index, start, 0) > self.emitted.through and not self._resumed_past(start, 0)
        if statements and fresh:
            ts_ms = ev.timestamp * 1000
            position = MySqlPosition(file=self.file, pos=start, server_id=ev.packet.server_id, gtid=gtid,
                                     ts_sec=ev.timestamp)
            for statement in statements:
                if statement.kind == "TRUNCATE":
                    self._truncate(statement.truncated, ev, start, position, out)
                    continue
                tables = ",".join(c.table.id.table for c in statement.changes) or None
                source = self.source.build(db=statement.database or db or "", table=tables, ts_ms=ts_ms,
                                           server_id=ev.packet.server_id, file=self.file, pos=start,
                                           row=self._source_row, gtid=gtid)  # thread null: Debezium takes none from DDL
                out.extend(self.schema.schema_change_records(statement, source, position))
            self.emitted.through = (self.file_index, start, 0)
        # a DDL statement commits implicitly: it is a transaction of its own (which Debezium's MariaDB
        # connector began at its GTID event and never ends)
        self._commit(end, ev.timestamp, out, announce_end=not self.eager_begin)

    def _truncate(self, table_ids: list[Any], ev: Any, start: int, position: MySqlPosition, out: list[Any]) -> None:
        if "t" in self.skipped:
            return
        for table_id in table_ids:
            factory = self.schema.factory(table_id.database, table_id.table)
            if factory is None:
                continue
            source = self.source.build(db=table_id.database, table=table_id.table, ts_ms=ev.timestamp * 1000,
                                       server_id=ev.packet.server_id, file=self.file, pos=start, row=self._source_row,
                                       gtid=self.tx.gtid,  # thread null, as for DDL
                                       query=_text(ev.query) if self.include_query else None)
            tx = self._tx_block(factory.schema.data_collection, ev.timestamp, position, out)
            out.append(factory.truncate(source, position, time.time_ns(), tx))
            self._last_data = time.monotonic()

    def _resumed_past(self, event_pos: int, row: int) -> bool:
        return self.resume is not None and self.resume.already_emitted(self.file_index, event_pos, row)

    def _rows(self, ev: Any, start: int, out: list[Any]) -> None:
        from pymysqlreplication.row_event import UpdateRowsEvent, WriteRowsEvent

        tx = self.tx
        if not tx.open:
            self._begin(start, None)
            tx = self.tx
        if start in tx.seen_positions:
            return  # re-delivered after a reconnect inside this transaction
        tx.seen_positions.add(start)
        db, table = ev.schema, ev.table
        factory = self.schema.factory(db, table)
        tx.last_event_pos = start
        tx.rows_done = 0
        if tx.skip_rows:
            tx.events_done += 1
            return
        if factory is None:
            if self.schema.is_captured(db, table) and self.schema.structure(db, table) is None:
                on_unknown_table(self.config.inconsistent_schema_handling_mode, f"{db}.{table}", f"{self.file}:{start}")
            tx.events_done += 1
            return
        ncols = len(factory.schema.table.columns)
        fixes = factory.has_set_columns or bool(factory.fractional_times)
        images = row_images(ev, fixes, factory.fractional_times, ncols)
        narrow: dict[str, Any] | None = None
        if images is None:  # left to mysql-replication
            try:
                rows = ev.rows  # decoded on first access
            except Exception as exc:
                if is_source_error(exc):
                    raise
                on_undecodable_event(self.config.event_deserialization_failure_handling_mode, exc,
                                     f"{self.file}:{start}")
                tx.events_done += 1
                return
            # a row as wide as the schema history says, or the first emitted row fails (below)
            narrow = next((row[k] for row in rows[:1] for k in ("values", "before_values", "after_values")
                           if k in row and len(row[k]) != ncols), None)
            images = library_images(ev, fixes, factory.fractional_times)
        if images:
            self._source_row = len(images) - 1
        is_write = isinstance(ev, WriteRowsEvent)
        is_update = isinstance(ev, UpdateRowsEvent)
        op = "c" if is_write else ("u" if is_update else "d")
        signaling = self.signaling
        signal_rows = signaling if is_write and signaling is not None and (db, table) == self._signal_key else None
        if signaling is not None and signaling.incremental.in_window(TopicTableId(None, db, table)):
            _supersede(signaling.incremental, TopicTableId(None, db, table), factory.schema, images, is_update)
        # signals are acted on even when creates are skipped (Debezium checks them first)
        if op in self.skipped and signal_rows is None:
            tx.events_done += 1
            return
        ts_sec = ev.timestamp
        server_id = ev.packet.server_id
        file, file_index = self.file, self.file_index
        gtid, restart_pos = tx.gtid, tx.start
        template = self.source.build(db=db, table=table, ts_ms=ts_sec * 1000, server_id=server_id, file=file,
                                     pos=start, row=0, gtid=gtid, thread=tx.thread,
                                     query=tx.query if self.include_query else None)
        # rows to skip (already delivered before a reconnect or restart) can only be in an event at or
        # before those marks: every other event takes the loop without per-row checks
        mark, resume = self.emitted.through, self.resume
        skip_through = resume.skip_through if resume is not None else None
        may_skip = (file_index, start) <= mark[:2] or (
            skip_through is not None and (file_index, start) <= skip_through[:2])
        data_collection = factory.schema.data_collection
        tracker = self.tracker
        tx_block = self._tx_block
        last_emitted = -1
        for i, image in enumerate(images):
            if may_skip and ((file_index, start, i) <= mark
                             or (resume is not None and resume.already_emitted(file_index, start, i))):
                continue
            if narrow is not None:
                _width_mismatch(factory, narrow, ncols)
            # positional (file, pos, row, event, restart_pos, server_id, gtid): the hot path
            position = MySqlPosition(file, start, i, 0, restart_pos, server_id, gtid, None, ts_sec)
            if i:
                source = template.copy()
                source["row"] = i
            else:
                source = template
            ts_ns = time.time_ns()
            if is_update:
                before_row, after_row = image
                factory.update_into(out, before_row, after_row, source, position, ts_ns,
                                    None if tracker is None else
                                    (lambda p=position: tx_block(data_collection, ts_sec, p, out)))
            else:
                txb = None if tracker is None else tx_block(data_collection, ts_sec, position, out)
                if signal_rows is not None:  # the signal (or watermark) acts before its row's own event
                    signal_rows.on_row(factory.schema.row(image), position, out)
                    if op not in self.skipped:
                        factory.insert_into(out, image, source, position, ts_ns, txb)
                    signal_rows.drain(out)  # a blocking snapshot's rows follow the signal's event
                elif is_write:
                    factory.insert_into(out, image, source, position, ts_ns, txb)
                else:
                    factory.delete_into(out, image, source, position, ts_ns, txb)
            last_emitted = i
        tx.rows_done = len(images)
        if last_emitted >= 0:
            tx.emitted = True
            self.emitted.through = (file_index, start, last_emitted)
        tx.events_done += 1
        self._last_data = time.monotonic()

    def _tx_block(self, data_collection: str, ts_sec: int, position: MySqlPosition,
                  out: list[Any]) -> dict[str, Any] | None:
        tracker = self.tracker
        if tracker is None:
            return None
        if not tracker.in_transaction:
            tx_id = self.tx.gtid or f"{self.file}:{self.tx.start}"
            out.append(transaction_record(self.namer.transaction_topic, tracker.begin(tx_id, ts_sec * 1000), position))
        return tracker.event(data_collection)

    def _commit(self, end: int, ts_sec: int, out: list[Any], announce_end: bool = True) -> None:
        tx = self.tx
        if tx.gtid:
            self.gtids = self.gtids.add(tx.gtid)
        if self.tracker is not None and self.tracker.in_transaction and not announce_end:
            self.tracker.end(None, 0)
        elif self.tracker is not None and self.tracker.in_transaction:
            position = MySqlPosition(file=self.file, pos=end, server_id=self.server_id, gtid=tx.gtid, ts_sec=ts_sec)
            out.append(transaction_record(self.namer.transaction_topic,
                                          self.tracker.end(None, ts_sec * 1000), position))
        self._committed = boundary_offset(self.file, end, self.server_id, str(self.gtids) or None, ts_sec)
        self.tx = _Tx()
        if self._gtid_windows is not None and tx.gtid:
            position = MySqlPosition(file=self.file, pos=end, server_id=self.server_id, gtid=tx.gtid,
                                     gtid_set=self._committed.get("gtids"), ts_sec=ts_sec)
            self._close_gtid_windows(position, out, len(out) + 1)  # one window per transaction

    def _rollback(self, end: int) -> None:
        if self.tracker is not None and self.tracker.in_transaction:
            self.tracker.end(None, 0)  # nothing of a rolled-back transaction is announced as complete
        self._committed = boundary_offset(self.file, end, self.server_id, str(self.gtids) or None, None)
        self.tx = _Tx()

    # -- offsets -------------------------------------------------------------------------------
    def committable_offset(self) -> dict[str, Any] | None:
        tx = self.tx
        offset: dict[str, Any] | None
        if tx.open and tx.emitted:
            offset = in_transaction_offset(self.file, tx.start, tx.last_event_pos, tx.rows_done, tx.events_done,
                                           self.server_id, str(self.gtids) or None, None)
        else:
            offset = self._committed
        if offset is not None and self.signaling is not None and self.signaling.incremental.running:
            offset = self.signaling.incremental.store(dict(offset))
        if offset is None or offset == self._last_offset_returned:
            return None
        self._last_offset_returned = offset
        return offset

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """The binlog is not acknowledged to the server: the stored offset is the only bookmark."""

    def idle_seconds(self) -> float:
        return time.monotonic() - self._last_data

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        if self.signaling is not None:
            self.signaling.close()
            self.signaling = None
        self._gtid_windows = None
        if self._heartbeat_sql is not None:
            try:
                self._heartbeat_sql.close()
            except Exception:  # already gone with the server
                pass
            self._heartbeat_sql = None
        if self._sql is not None:
            try:
                self._sql.close()
            except Exception:  # already gone with the server
                pass
            self._sql = None


class _Statements:
    """``execute(sql)`` on a PyMySQL connection, the call ``Heartbeat`` makes for its action query."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, statement: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute(statement)


def binlog_connection_settings(config: Any) -> dict[str, Any]:
    """PyMySQL settings of the binlog connection. ``binlog.net.read.timeout`` / ``.write.timeout``
    set the session's ``net_read_timeout`` / ``net_write_timeout`` as Debezium's BinlogConnectorConnection
    does (0: the server's default). ``connect.keep.alive`` is Debezium's keep-alive thread: a connection
    that delivers nothing (not even the heartbeat the server sends each second) for
    ``connect.keep.alive.interval.ms`` is taken as dead and reopened, by the socket read timing out."""
    settings = dict(config.connection_kwargs())
    settings["passwd"] = settings.pop("password")
    settings.pop("connect_timeout", None)
    session = [f"{name} = {value}" for name, value in (("net_read_timeout", config.binlog_net_read_timeout),
                                                        ("net_write_timeout", config.binlog_net_write_timeout))
               if value > 0]
    if session:
        settings["init_command"] = "SET SESSION " + ", ".join(session)
    if config.connect_keep_alive:
        settings["read_timeout"] = max(config.connect_keep_alive_interval_ms / 1000.0, 2.0)
    return settings


def _width_mismatch(factory: Any, values: dict[str, Any], ncols: int) -> None:
    """A binlog row image is read by position: the binlog's own column names may be missing
    (``binlog_row_metadata=MINIMAL``); the schema history is what names and types them, so the
    widths must agree."""
    raise UnknownTableError(
        f"a row of table '{factory.schema.table.id}' has {len(values)} columns but the schema history says "
        f"{ncols}: the history is out of step with the binlog"
    )


def _supersede(incremental: IncrementalSnapshot, table: TopicTableId, schema: Any, images: list[Any],
               is_update: bool) -> None:
    """Changes streamed inside an open window win over the chunk's buffered rows with their keys
    (both keys of an update: a key change removes the old row and writes the new one). The keys are
    read from the row images as emitted (an empty SET as '', as the chunk's ``SELECT`` reads it)."""
    for image in images:
        for row in (image if is_update else (image,)):
            incremental.seen(table, schema.key(row))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return bytes(value).decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
