"""Streaming from the CDC change tables (Debezium SQL Server documentation, "Reading the change data
tables"): a poll loop over every capture instance.

Each pass::

    to  = commit LSN of the max.iteration.transactions-th transaction after the resume position
          (cdc.lsn_time_mapping; 0 = the last one)           nothing new: wait poll.interval.ms
    EXEC sys.sp_cdc_help_change_data_capture              new capture instances (schema changes)
    per capture instance, from = max(resume commit LSN, instance start LSN):
        SELECT * FROM cdc.[fn_cdc_get_all_changes_<instance>](from, to, N'all update old')
        ORDER BY __$start_lsn, __$seqval, __$operation
    merge the instances by (commit LSN, change LSN, operation): database order
    __$operation 1 delete, 2 insert, 3 + 4 update (before, after) -> d / c / u events
    (an update whose key changed: delete, tombstone, create, as Debezium)

``event_serial_no`` counts the change-table rows at one (commit LSN, change LSN): 1 for an insert
or a delete, 2 for an update (its before row is 1), and 1 then 2 for the delete and insert SQL
Server writes for a primary-key update. ``source.ts_ms`` is the commit time
(``sys.fn_cdc_map_lsn_to_time``). With ``provide.transaction.metadata`` each commit LSN is one
transaction: BEGIN before its first event, END after its last, id = the commit LSN text. As in
Debezium, BEGIN goes out with the first event emitted (none for a transaction whose events are all
skipped), after what a signal row of it did: an incremental snapshot's reads at a close watermark
come before the watermark's BEGIN, with ``transaction: null``.

A table's instance is read only for LSNs before the next instance's start LSN, so when a new capture
instance appears (Debezium's online schema update, "Database schema evolution") events switch to its
structure exactly where it begins; an ALTER schema change event on ``<topic.prefix>`` marks the switch
(``include.schema.changes``).

With ``signal.data.collection`` the signal table's capture instance is read like any other: an
insert into it is a signal or a window watermark (``capture/signaling.py``), acted on before the
row's own event; an incremental snapshot's read events go out before the close watermark's event,
and each stored offset carries the snapshot's progress as of the records before it.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lakecdc.capture.blocking import BlockingSnapshotError
from lakecdc.capture.heartbeat import Heartbeat
from lakecdc.capture.signaling import Signaling
from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.blocking import blocking_snapshot
from lakecdc.capture.sqlserver.connection import CaptureInstance
from lakecdc.capture.sqlserver.database_schema import DatabaseSchema
from lakecdc.capture.sqlserver.errors import SqlServerConnectionLostError, SqlServerTypeError
from lakecdc.capture.sqlserver.incremental import SqlServerIncrementalSnapshot
from lakecdc.capture.sqlserver.offset import ResumePoint, event_offset
from lakecdc.capture.sqlserver.snapshot import schema_change_records
from lakecdc.capture.sqlserver.source_info import source_builder
from lakecdc.capture.sqlserver.table_changes import schema_change_record
from lakecdc.capture.sqlserver.table_schema import with_headers
from lakecdc.events.positions import SqlServerPosition
from lakecdc.events.topics import TableId, TopicNamer
from lakecdc.events.transaction import TransactionTracker, transaction_record

log = logging.getLogger(__name__)

OP_DELETE, OP_INSERT, OP_UPDATE_BEFORE, OP_UPDATE_AFTER = 1, 2, 3, 4
_OPS = {OP_DELETE: "d", OP_INSERT: "c", OP_UPDATE_BEFORE: "u"}  # an update is keyed by its before row


@dataclass(order=True)
class Change:
    """One event's worth of change-table rows (an update's two rows are one change)."""

    commit_lsn: int
    change_lsn: int
    operation: int
    serial: int
    instance: CaptureInstance = field(compare=False)
    before: tuple[Any, ...] | None = field(compare=False, default=None)
    after: tuple[Any, ...] | None = field(compare=False, default=None)


def instance_changes(inst: CaptureInstance, names: list[str], rows: Iterator[tuple[Any, ...]],
                     stop_lsn: int | None, resume: ResumePoint | None) -> Iterator[Change]:
    """Change-table rows of one instance -> changes, dropping those at or past ``stop_lsn`` and
    those the resume point covers."""
    i_start, i_seq, i_op = names.index("__$start_lsn"), names.index("__$seqval"), names.index("__$operation")
    first_data = max(i_start, i_seq, i_op, names.index("__$update_mask")) + 1
    serial_at: tuple[int, int] | None = None
    serial = 0
    pending_before: tuple[Any, ...] | None = None
    for row in rows:
        commit, seq, op = sq.lsn_int(row[i_start]) or 0, sq.lsn_int(row[i_seq]) or 0, int(row[i_op])
        if stop_lsn is not None and commit >= stop_lsn:
            break
        serial = serial + 1 if serial_at == (commit, seq) else 1
        serial_at = (commit, seq)
        values = tuple(row[first_data:])
        if op == OP_UPDATE_BEFORE:
            pending_before = values
            continue
        if op == OP_UPDATE_AFTER:
            if pending_before is None:
                raise SqlServerConnectionLostError(
                    f"capture instance {inst.name}: update after-image at {sq.lsn_text(seq)} without its "
                    "before-image; re-reading from the last committed position")
            change = Change(commit, seq, OP_UPDATE_BEFORE, serial, inst, pending_before, values)
            pending_before = None
        elif op == OP_DELETE:
            change = Change(commit, seq, op, serial, inst, values, None)
        elif op == OP_INSERT:
            change = Change(commit, seq, op, serial, inst, None, values)
        else:
            continue
        if resume is not None and resume.covers(commit, seq, serial):
            continue
        yield change


@dataclass
class _Group:
    """Records handed over together, and the offset that becomes committable with them."""

    records: list[Any]
    offset: dict[str, Any] | None
    data: bool = True


class SqlServerStreamingSource:
    def __init__(self, config: Any, schema: DatabaseSchema, namer: TopicNamer, connect: Callable[[], Any],
                 headers: list[tuple[str, bytes]] | None = None) -> None:
        self.config = config
        self.headers = config.data_headers() if headers is None else headers
        self.schema = schema
        self.namer = namer
        self.connect = connect
        self.source = source_builder(config)
        self.skipped = config.skipped_operation_codes
        self.heartbeat = Heartbeat(config.heartbeat_interval_ms, namer.heartbeat_topic, config.topic_prefix)
        self.tx = TransactionTracker() if config.provide_transaction_metadata else None
        self.conn: Any = None
        self.resume: ResumePoint | None = None
        self._pending: deque[_Group] = deque()
        self._committable: dict[str, Any] | None = None
        self._last_data = time.monotonic()
        self._times: dict[int, int] = {}
        self._announced: set[str] = set()
        self.signaling: Signaling | None = None
        signal = config.signal_table
        #: (schema, table) of the signal table, whose inserts are signals and watermarks
        self._signal_key = (signal.schema, signal.table) if signal is not None else None
        self._signal_at: dict[str, Any] | None = None  #: the stream position of the signal being handled (log)

    # ---- StreamingSource ------------------------------------------------------------------------
    def start(self, offset: dict[str, Any] | None) -> None:
        self.conn = self.connect()
        try:
            self.schema.load(self.conn)
            if offset is None:
                # no_data: the structures are read; stream what commits from now on
                current = sq.max_lsn(self.conn)
                self.resume = ResumePoint(current or 0, None, 0)
                log.info("no stored offset: streaming changes after LSN %s", sq.lsn_text(current))
                if self.config.include_schema_changes and current:
                    instances = [self.schema.instance_at(t, current) for t in self.schema.tables()]
                    self._pending.append(_Group(schema_change_records(self.config, self.schema, instances, current),
                                                event_offset(current, None, 0), data=False))
            else:
                self.resume = ResumePoint.from_offset(offset)
                log.info("resuming after commit LSN %s change LSN %s serial %d", sq.lsn_text(self.resume.commit_lsn),
                         sq.lsn_text(self.resume.change_lsn), self.resume.event_serial_no)
            self.conn.commit()
        except Exception as exc:
            raise self._lost(exc) from exc
        # instances that began while the connector was stopped are announced (ALTER) when reached
        for instances in self.schema.instances.values():
            for i, inst in enumerate(instances):
                if i == 0 or (inst.start_lsn or 0) <= self.resume.commit_lsn:
                    self._announced.add(inst.name)
        self._last_data = time.monotonic()
        if self._signal_key is not None:
            self._start_signals(offset, self._signal_key)

    def _start_signals(self, offset: dict[str, Any] | None, signal_key: tuple[str | None, str]) -> None:
        if signal_key not in self.schema.instances:
            log.warning("signal.data.collection %s has no capture instance visible to this connector: signals and "
                        "incremental snapshots need CDC on it (%s)", self.config.signal_table,
                        "EXEC sys.sp_cdc_enable_table @source_schema = N'%s', @source_name = N'%s', @role_name = NULL"
                        % signal_key)
        incremental = SqlServerIncrementalSnapshot(self.connect, self.schema, self.config, self.source, self.headers)
        self.signaling = Signaling(self.config, incremental, self._blocking_snapshot, offset=lambda: self._signal_at)
        incremental.restore(offset)
        try:
            incremental.start()
        except Exception as exc:
            raise self._lost(exc) from exc

    def _blocking_snapshot(self, signal: Any, tables: list[str], position: SqlServerPosition | None,
                           selects: dict[str, str]) -> list[Any]:
        """Streaming waits while ``tables`` are read whole at the signal's commit LSN (``blocking.py``)."""
        assert self.resume is not None
        lsn = position.commit_lsn if position is not None else self.resume.commit_lsn
        try:
            return blocking_snapshot(self.config, self.schema, self.connect, self.headers, tables, lsn, selects)
        except BlockingSnapshotError:
            raise  # the signal's SELECT refused: the snapshot fails, streaming goes on (capture/signaling.py)
        except Exception as exc:
            raise self._lost(exc) from exc

    def _with_snapshot(self, offset: dict[str, Any] | None) -> dict[str, Any] | None:
        """The offset plus the incremental snapshot's progress as of the records before it."""
        if offset is None or self.signaling is None or not self.signaling.incremental.running:
            return offset
        return self.signaling.incremental.store(dict(offset))

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        if self.signaling is not None and not self._pending:
            assert self.resume is not None
            signalled: list[Any] = []
            # a Kafka signal acts between transactions: the position a ``log`` message names is
            # the last commit read, not the last source-channel signal's
            self._signal_at = {"commit_lsn": sq.lsn_text(self.resume.commit_lsn), "change_lsn": None,
                               "event_serial_no": None}
            try:
                self.signaling.poll_kafka(SqlServerPosition(commit_lsn=self.resume.commit_lsn), signalled)
            except Exception as exc:
                raise self._lost(exc) from exc
            if signalled:
                self._pending.append(_Group(signalled, None))
        if not self._pending:
            if self.heartbeat.due(time.monotonic()):
                record = self.heartbeat.beat()
                if record is not None:
                    out.append(record)
            try:
                found = self._pass()
            except Exception as exc:
                raise self._lost(exc) from exc
            if not found:
                time.sleep(min(timeout, self.config.poll_interval_ms / 1000.0))
                return
        while self._pending and len(out) < max_records:
            group = self._pending.popleft()
            out.extend(group.records)
            if group.data and group.records:
                self._last_data = time.monotonic()
            if group.offset is not None:
                self._committable = group.offset

    def committable_offset(self) -> dict[str, Any] | None:
        offset, self._committable = self._committable, None
        return offset

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to tell SQL Server: CDC cleanup is time-based, not driven by readers."""

    def idle_seconds(self) -> float:
        return 0.0 if self._pending else time.monotonic() - self._last_data

    def close(self) -> None:
        if self.signaling is not None:
            self.signaling.close()
            self.signaling = None
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    # ---- one pass -------------------------------------------------------------------------------
    def _lost(self, exc: Exception) -> Exception:
        if isinstance(exc, SqlServerConnectionLostError):
            return exc
        try:
            import pymssql
        except ImportError:  # pragma: no cover - pymssql is a dependency
            return exc
        if isinstance(exc, (pymssql.OperationalError, pymssql.InterfaceError)):
            return SqlServerConnectionLostError(f"SQL Server connection failed while streaming: {exc}")
        return exc

    def _pass(self) -> bool:
        """Read everything up to the current max LSN into ``_pending``; False when nothing is new."""
        assert self.resume is not None
        conn = self.conn
        to_lsn = sq.pass_end_lsn(conn, self.resume.commit_lsn, self.config.max_iteration_transactions)
        if to_lsn is None or to_lsn <= self.resume.commit_lsn and self.resume.change_lsn is None:
            conn.commit()  # a read-only replica shows new CDC rows only to a new transaction
            return False
        for inst in self.schema.refresh(conn):
            log.info("Schema will be changed for ChangeTable [captureInstance=%s, startLsn=%s]",
                     inst.name, sq.lsn_text(inst.start_lsn))
        streams = []
        cursors = []
        try:
            for key, instances in self.schema.instances.items():
                for inst in instances:
                    stop = self.schema.stop_lsn(inst)
                    start = inst.start_lsn or 0
                    # a boundary offset covers its whole commit: start after it (fn_cdc_increment_lsn)
                    boundary = self.resume.change_lsn is None and self.resume.commit_lsn
                    after = self.resume.commit_lsn + (1 if boundary else 0)
                    from_lsn = max(after, start)
                    if from_lsn > to_lsn or (stop is not None and from_lsn >= stop):
                        continue
                    if self.resume.commit_lsn < start and inst is instances[0] and self.resume.commit_lsn:
                        log.warning("capture instance %s starts at %s, after the resume position %s: changes "
                                    "between them were removed by CDC cleanup or precede the instance",
                                    inst.name, sq.lsn_text(start), sq.lsn_text(self.resume.commit_lsn))
                    names, cur = sq.change_rows(conn, inst.name, from_lsn, to_lsn)
                    cursors.append(cur)
                    streams.append(instance_changes(inst, names, iter(cur.fetchone, None), stop, self.resume))
            streams.append(iter(self._switches(to_lsn)))
            groups = self._records(heapq.merge(*streams))
        finally:
            for cur in cursors:
                cur.close()
        conn.commit()
        self._pending.extend(groups)
        self._pending.append(_Group([], self._with_snapshot(event_offset(to_lsn, None, 0)), data=False))
        self.resume = ResumePoint(to_lsn, None, 0)
        return True

    def _switches(self, to_lsn: int) -> list[Change]:
        """Markers (operation 0) where streaming moves to a new capture instance, sorted."""
        assert self.resume is not None
        marks = [Change(inst.start_lsn or 0, 0, 0, 0, inst)
                 for instances in self.schema.instances.values() for inst in instances[1:]
                 if inst.name not in self._announced and self.resume.commit_lsn < (inst.start_lsn or 0) <= to_lsn]
        return sorted(marks)

    def _commit_ms(self, commit_lsn: int) -> int:
        ts = self._times.get(commit_lsn)
        if ts is None:
            if len(self._times) > 10_000:
                self._times.clear()
            ts = sq.lsn_time_ms(self.conn, commit_lsn) or int(time.time() * 1000)
            self._times[commit_lsn] = ts
        return ts

    def _records(self, changes: Iterator[Change]) -> list[_Group]:
        groups: list[_Group] = []
        tx = self.tx
        # (commit, change, serial, ts_ms) of the last event of the transaction whose BEGIN went out
        open_tx: tuple[int, int, int, int] | None = None
        db = self.schema.database
        last_commit, commit_text, ts_ms = -1, None, 0
        for ch in changes:
            if ch.operation == 0:
                groups.extend(self._switch(ch.instance))
                continue
            if ch.commit_lsn != last_commit:  # LSN text and commit time once per transaction
                last_commit, commit_text = ch.commit_lsn, sq.lsn_text(ch.commit_lsn)
                ts_ms = self._commit_ms(ch.commit_lsn)
            change_text = sq.lsn_text(ch.change_lsn)
            if open_tx is not None:
                if open_tx[0] != ch.commit_lsn:
                    groups.append(self._end(open_tx))
                    open_tx = None
                else:
                    open_tx = (ch.commit_lsn, ch.change_lsn, ch.serial, ts_ms)  # END's offset covers it
            self._announce(ch.instance)
            schema = self.schema.schema(ch.instance)
            factory = self.schema.factory(ch.instance)
            position = SqlServerPosition(commit_lsn=ch.commit_lsn, change_lsn=ch.change_lsn, event_serial_no=ch.serial)
            offset = None if tx is not None else {"commit_lsn": commit_text, "change_lsn": change_text,
                                                  "event_serial_no": ch.serial}  # event_offset's shape
            op = _OPS[ch.operation]
            signaling = self.signaling
            if signaling is not None:
                table = TableId(None, ch.instance.source_schema, ch.instance.source_table)
                if signaling.incremental.in_window(table):
                    # a change inside a window supersedes the chunk's buffered row (both keys of an update)
                    for image in (ch.before, ch.after):
                        if image is not None:
                            signaling.incremental.seen(table, schema.key(image))
                if ch.operation == OP_INSERT and ch.instance.table_key == self._signal_key:
                    # the signal (or watermark) acts before its row's own event, also when creates are skipped
                    read: list[Any] = []
                    self._signal_at = {"commit_lsn": commit_text, "change_lsn": change_text,
                                       "event_serial_no": ch.serial}
                    signaling.on_row(schema.row(ch.after), position, read)
                    if read:
                        groups.append(_Group(read, None))
            offset = self._with_snapshot(offset)
            if op in self.skipped:
                groups.append(_Group([], offset, data=False))
                self._drain(groups)
                continue
            if tx is not None and open_tx is None:
                # BEGIN goes out with the transaction's first event, after what its signal row did (a
                # close watermark's reads, op "r" with no transaction block), as Debezium's
                # TransactionMonitor begins a transaction at its first data event
                begin = transaction_record(self.namer.transaction_topic, tx.begin(commit_text or "", ts_ms))
                groups.append(_Group([begin], None))
                open_tx = (ch.commit_lsn, ch.change_lsn, ch.serial, ts_ms)
            source = self.source.build(db=db, schema=ch.instance.source_schema, table=ch.instance.source_table,
                                       ts_ms=ts_ms, commit_lsn=commit_text, change_lsn=change_text,
                                       event_serial_no=ch.serial)
            ts_ns = time.time_ns()
            records: list[Any] = []
            collection = schema.data_collection

            def block() -> dict[str, Any] | None:
                return None if tx is None else tx.event(collection)

            try:
                if op == "c":
                    factory.insert_into(records, ch.after, source, position, ts_ns, block())
                elif op == "d":
                    factory.delete_into(records, ch.before, source, position, ts_ns, block())
                else:
                    factory.update_into(records, ch.before, ch.after, source, position, ts_ns,
                                        None if tx is None else block)
            except Exception as exc:  # a value the type mapping cannot convert
                self._failed(exc, ch, change_text)
                groups.append(_Group([], offset, data=False))
                continue
            groups.append(_Group(with_headers(records, self.headers), offset))
            self._drain(groups)
        if tx is not None and open_tx is not None:
            groups.append(self._end(open_tx))
        return groups

    def _drain(self, groups: list[_Group]) -> None:
        """A blocking snapshot's rows, after the signal's own event."""
        if self.signaling is not None:
            records: list[Any] = []
            self.signaling.drain(records)
            if records:
                groups.append(_Group(records, None))

    def _failed(self, exc: Exception, ch: Change, change_text: str | None) -> None:
        """``event.processing.failure.handling.mode``: fail (stop, naming the position), warn (log
        and skip the event), skip / ignore (skip it silently)."""
        where = (f"table {ch.instance.source_schema}.{ch.instance.source_table} at commit LSN "
                 f"{sq.lsn_text(ch.commit_lsn)} change LSN {change_text} (event_serial_no {ch.serial})")
        mode = self.config.event_processing_failure_handling_mode
        if mode == "fail":
            raise SqlServerTypeError(f"cannot convert the change of {where}: {exc}; set "
                                     "event.processing.failure.handling.mode=warn to skip such events") from exc
        if mode == "warn":
            log.warning("skipping the change of %s: %s", where, exc)

    def _end(self, last: tuple[int, int, int, int]) -> _Group:
        assert self.tx is not None
        commit, change, serial, ts_ms = last
        payload = self.tx.end(None, ts_ms)
        return _Group([transaction_record(self.namer.transaction_topic, payload)],
                      self._with_snapshot(event_offset(commit, change, serial)), data=False)

    def _switch(self, inst: CaptureInstance) -> list[_Group]:
        """The new instance's structure takes over: an ALTER schema change event, as Debezium's
        ``SqlServerStreamingChangeEventSource`` emits when it moves to a new change table."""
        self._announce(inst)
        instances = self.schema.instances[inst.table_key]
        previous = instances[instances.index(inst) - 1]
        if self.schema.schema(previous).columns == self.schema.schema(inst).columns:
            log.info("Migration skipped, no table schema changes detected.")
            return []
        if not self.config.include_schema_changes:
            return []
        start = inst.start_lsn or 0
        source = self.source.build(db=self.schema.database, schema=inst.source_schema, table=inst.source_table,
                                   ts_ms=int(time.time() * 1000), commit_lsn=sq.lsn_text(start), change_lsn=None,
                                   event_serial_no=None)
        record = schema_change_record(self.namer.schema_change_topic, source, self.schema.schema(inst), "ALTER",
                                      self.schema.primary_key(inst), SqlServerPosition(commit_lsn=start))
        return [_Group([record], None, data=False)]

    def _announce(self, inst: CaptureInstance) -> None:
        if inst.name not in self._announced:
            self._announced.add(inst.name)
            log.info("Migrating schema to ChangeTable [captureInstance=%s, sourceTable=%s.%s.%s]", inst.name,
                     self.schema.database, inst.source_schema, inst.source_table)
