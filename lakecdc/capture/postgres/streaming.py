"""Streaming: pgoutput messages from the slot -> Debezium change records, in commit order.

Per message (``data_start`` is the XLogData LSN PostgreSQL puts on each message):

- Begin: opens the transaction; BEGIN record ``{"id": "<xid>:<data_start>"}`` when
  ``provide.transaction.metadata`` (Debezium sends it even if every event is then skipped).
- Insert/Update/Delete: ``c``/``u``/``d``; a delete is followed by a tombstone
  (``tombstones.on.delete``); an update that changes the key is delete + tombstone + create, the
  delete with header ``__debezium.newkey`` and the create with ``__debezium.oldkey`` (the other key,
  as the header converter writes it).
  ``source.sequence`` is ``[<last commit LSN>, <event LSN>]``; ``transaction.id`` is
  ``<xid>:<event LSN>``.
- Truncate: one ``t`` record per captured table (null key), unless ``skipped.operations`` has t.
- Message: logical decoding message, ``m`` on ``<prefix>.message``.
- Commit: END record ``{"id": "<xid>:<end LSN>"}`` with the counts; the offset may now advance.

Resuming: the offset stores the last commit's end LSN (``lsn_commit``) and, inside a large
transaction, the last event LSN sent (``lsn``, ``txId``). Replication restarts at ``lsn_commit``;
events of transaction ``txId`` at or before ``lsn`` are not emitted again.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from lakecdc.capture.heartbeat import Heartbeat
from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.blocking import blocking_snapshot
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.decoder import (
    UNCHANGED,
    BeginMessage,
    CommitMessage,
    LogicalMessage,
    RelationMessage,
    TruncateMessage,
    decode_message,
    decode_tuple,
)
from lakecdc.capture.postgres.errors import LsnFlushTimeoutError, PostgresUnavailable, SlotMissingError, scrub
from lakecdc.capture.postgres.incremental import PostgresIncrementalSnapshot
from lakecdc.capture.postgres.messages import MessageRecords, message_data_collection
from lakecdc.capture.postgres.offset import flush_lsn, resume_point
from lakecdc.capture.postgres.replication import Keepalive, ReplicationConnection, XLogData, format_lsn
from lakecdc.capture.postgres.snapshot_parallel import values_unread
from lakecdc.capture.postgres.source_info import source_builder
from lakecdc.capture.postgres.streaming_parallel import StreamWorkers
from lakecdc.capture.postgres.table_schema import TableSchemas
from lakecdc.capture.postgres.types import TypeModes
from lakecdc.capture.signaling import Signaling
from lakecdc.capture.signals import Signal
from lakecdc.events.envelope import HEADER_NEW_KEY, HEADER_OLD_KEY, ChangeRecord
from lakecdc.events.envelope import envelope_payload as _payload
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.serde import RecordEncoder
from lakecdc.events.topics import TopicNamer
from lakecdc.events.transaction import TransactionTracker, transaction_record
from lakecdc.transport.offsets import Offset

log = logging.getLogger(__name__)

_RELID = struct.Struct(">I").unpack_from


@contextmanager
def _sql_connection_guard(target: str) -> Iterator[None]:
    """A dropped SQL connection (catalog lookups, heartbeat query) becomes a transient error, so
    the coordinator reconnects and resumes from the stored offset instead of building schemas
    without the catalog (no key, wrong optionality) or stopping."""
    try:
        yield
    except psycopg.OperationalError as exc:
        raise PostgresUnavailable(
            f"lost the SQL connection to {target} used for catalog lookups: {scrub(str(exc)).strip()}"
        ) from None


class PostgresStreamingSource:
    def __init__(self, config: PostgresConnectorConfig, modes: TypeModes, namer: TopicNamer,
                 headers: list[tuple[str, bytes]] | None = None) -> None:
        self.config = config
        self.namer = namer
        self.modes = modes
        self._sql = pgconn.connect(config)
        self._target = config.describe_target()
        try:
            with _sql_connection_guard(self._target):
                self._schemas = TableSchemas(self._sql, config, modes, namer)
        except PostgresUnavailable:
            self._sql.close()
            raise
        self._repl: ReplicationConnection | None = None
        self._source = source_builder(config)
        self._skipped = config.skipped_operation_codes
        self._skip_creates = "c" in self._skipped
        self._source_templates: dict[Any, dict[str, Any]] = {}
        self._sequence_head = '[null,"'
        # primary-key change headers are written with the header converter (JSON, schemas on by default)
        self._header_schemas = config.header_schemas_enable
        self._headers = headers if headers is not None else config.data_headers()
        self._key_header_encoders: dict[Any, Any] = {}
        self._tombstones = config.tombstones_on_delete
        self._tx_topic = namer.transaction_topic
        self._tx = TransactionTracker() if config.provide_transaction_metadata else None
        self._messages = MessageRecords(config, namer, self._source)
        self._incremental: PostgresIncrementalSnapshot | None = None
        self._signals: Signaling | None = None
        self._signal_table = config.signal_table
        if config.signal_table is not None:
            self._incremental = PostgresIncrementalSnapshot(self._sql, self._schemas, config, self._source,
                                                            self._headers, config.signal_table)
            self._signals = Signaling(config, self._incremental, self._blocking_snapshot,
                                      offset=lambda: self._committed.to_offset() if self._committed else None)
        self._workers: StreamWorkers | None = None
        if config.streaming_workers > 1:
            if values_unread(config):
                self._workers = StreamWorkers(config.streaming_workers, self._schemas, self._headers)
            else:
                log.warning("lakecdc.streaming.workers=%d is not used: transforms or the metrics exporter read "
                            "record values, which the workers would hand over encoded; streaming runs in one "
                            "process", config.streaming_workers)
        self._heartbeat = Heartbeat(config.heartbeat_interval_ms, namer.heartbeat_topic, config.topic_prefix,
                                    config.heartbeat_action_query, self._sql)
        # transaction state
        self._xid: int | None = None
        self._commit_ts_us = 0
        self._last_commit_lsn: int | None = None
        self._last_event_lsn: int | None = None
        # what is safe to store / acknowledge
        self._committed: PostgresPosition | None = None
        self._dirty = False
        self._received_lsn = 0
        self._acked_lsn = 0
        self._skip_xid: int | None = None
        self._skip_upto = 0
        self._last_data = time.monotonic()
        self._last_status = time.monotonic()
        self._status_interval = max(config.status_update_interval_ms, 1000) / 1000.0

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, offset: Offset | None) -> None:
        with _sql_connection_guard(self._target):
            self._start(offset)

    def _start(self, offset: Offset | None) -> None:
        # The publication before the slot, as Debezium's PostgresReplicationConnection does: pgoutput
        # reads it as of each change's position, so changes between a new slot's consistent point and
        # a later CREATE PUBLICATION (any busy table) are decoded without it ("skipped loading
        # publication", or an error before PostgreSQL 18).
        tables = pgconn.captured_tables(self._sql, self.config)
        pgconn.ensure_publication(self._sql, self.config, tables)
        state = pgconn.slot_state(self._sql, self.config.slot_name)
        if not state.exists:
            if offset is not None:
                raise SlotMissingError(
                    f"replication slot '{self.config.slot_name}' does not exist but an offset is stored "
                    f"({offset}); the changes since then are lost. Use snapshot.mode=when_needed or "
                    "always to re-snapshot, or delete the stored offset"
                )
            repl = ReplicationConnection.connect(self.config.conninfo(replication=True))
            try:
                created = repl.create_slot(self.config.slot_name, export_snapshot=False,
                                           failover=self.config.slot_failover)
            finally:
                repl.close()
            log.info("created replication slot %s at %s", self.config.slot_name, created.consistent_point)
        elif state.wal_status == "lost":
            from lakecdc.capture.postgres.errors import WalRemovedError

            raise WalRemovedError(
                f"replication slot '{self.config.slot_name}' has lost WAL it needs (wal_status=lost): "
                "PostgreSQL removed it while capture was behind (max_slot_wal_keep_size), so the changes "
                "since the stored offset are gone; re-snapshot with snapshot.mode=when_needed or always"
            )
        signal_table = self._signal_table
        if signal_table is not None and not self._sql.execute(
                "SELECT 1 FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s AND tablename = %s",
                (self.config.publication_name, signal_table.schema, signal_table.table)).fetchone():
            log.warning("signal table %s is not in publication %s: signals inserted there will not be seen "
                        "(ALTER PUBLICATION ... ADD TABLE, or publication.autocreate.mode=filtered)",
                        signal_table, self.config.publication_name)
        point = resume_point(offset)
        self._last_commit_lsn = point.last_commit_lsn
        self._skip_xid, self._skip_upto = point.skip_xid, point.skip_upto_lsn
        self._committed = None
        self._acked_lsn = point.start_lsn
        if state.active:
            pgconn.terminate_slot_holder(self._sql, self.config.slot_name)
            time.sleep(0.2)
        self._repl = ReplicationConnection.connect(self.config.conninfo(replication=True))
        options = {
            "proto_version": "1",
            "publication_names": self.config.publication_name.replace("'", "''"),
            "messages": "true",
        }
        self._repl.start(self.config.slot_name, point.start_lsn, options)
        log.info("streaming from slot %s at LSN %s", self.config.slot_name, point.start_lsn)
        self._last_data = time.monotonic()
        if self._incremental is not None:
            self._incremental.restore(offset)
            self._incremental.start()

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
        if self._signals is not None:
            self._signals.close()
        if self._repl is not None:
            self._repl.close()
            self._repl = None
        if self.config.slot_drop_on_stop:
            try:
                pgconn.drop_slot(self._sql, self.config.slot_name)
            except Exception as exc:  # report, but closing must go on
                log.warning("could not drop slot %s: %s", self.config.slot_name, exc)
        self._sql.close()

    # -- SPI --------------------------------------------------------------------------------
    def idle_seconds(self) -> float:
        return time.monotonic() - self._last_data

    def committable_offset(self) -> Offset | None:
        if not self._dirty:
            return None
        self._dirty = False
        if self._xid is not None and self._last_event_lsn is not None:
            # inside a transaction: remember how far its events went, resume before it
            offset = PostgresPosition(
                lsn=self._last_event_lsn, commit_lsn=self._last_commit_lsn, lsn_proc=self._last_event_lsn,
                tx_id=self._xid, ts_usec=self._commit_ts_us,
            ).to_offset()
            offset["in_tx"] = True
            return self._incremental.store(offset) if self._incremental is not None else offset
        if self._committed is None:
            return None
        offset = self._committed.to_offset()
        return self._incremental.store(offset) if self._incremental is not None else offset

    def acknowledge(self, offset: Offset) -> None:
        lsn = flush_lsn(offset)
        if lsn is None:
            return
        self._acked_lsn = max(self._acked_lsn, lsn)
        if self._repl is not None:
            self._send_status()
            self._last_status = time.monotonic()

    def _send_status(self) -> None:
        """Confirm the acknowledged LSN to the slot, bounded by ``lsn.flush.timeout.ms``; a server
        that does not take it in time gets ``lsn.flush.timeout.action`` (Debezium 3's rule)."""
        assert self._repl is not None
        timeout_ms = self.config.lsn_flush_timeout_ms
        # manual flushing: the status update still keeps the connection alive, with no flushed LSN
        # (0 is InvalidXLogRecPtr, which PostgreSQL ignores for the slot)
        flushed = self._acked_lsn if self.config.confirms_flushed_lsn else 0
        if self._repl.send_status(max(self._received_lsn, self._acked_lsn), flushed,
                                  timeout=timeout_ms / 1000.0 if timeout_ms > 0 else None):
            return
        action = self.config.lsn_flush_timeout_action
        what = (f"confirming LSN {format_lsn(self._acked_lsn)} to slot '{self.config.slot_name}' did not complete "
                f"within lsn.flush.timeout.ms={timeout_ms}: the server is not reading the replication connection")
        if action == "fail":
            raise LsnFlushTimeoutError(f"{what} (lsn.flush.timeout.action=fail; warn or ignore go on)")
        if action == "warn":
            log.warning("%s; going on (lsn.flush.timeout.action=warn)", what)

    # -- reading ----------------------------------------------------------------------------
    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        with _sql_connection_guard(self._target):  # per batch, not per event
            self._poll(out, max_records, timeout)

    def _poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        repl = self._repl
        assert repl is not None, "start() first"
        deadline = time.monotonic() + timeout
        wait = timeout
        handle = self._handle
        received = 0
        while len(out) < max_records:
            message = repl.read(wait)
            if message is None:
                break
            if type(message) is XLogData:
                handle(message.data_start, bytes(message.payload), out)
                received += 1
                if received & 1023:  # keep draining what is buffered
                    wait = 0.0
                    continue
            else:
                assert isinstance(message, Keepalive)
                self._on_keepalive(message)
            # The poll ends at its deadline even while messages keep coming: a busy table outside
            # the capture (its changes filtered here) would otherwise hold it forever, and with it
            # the heartbeats, offset commits and the stop check that run between polls.
            wait = deadline - time.monotonic()
            if wait <= 0:
                break
        if self._workers is not None:
            self._workers.resolve(out)
        now = time.monotonic()
        if received:
            self._last_data = now
        if self._signals is not None:
            self._signals.poll_kafka(self._committed, out)
        if self._heartbeat.due(now):
            record = self._heartbeat.beat()
            if record is not None:
                out.append(record)
            if self._sql.closed:  # the action query found the SQL connection gone (logged by beat)
                raise psycopg.OperationalError("the connection is closed")
        if now - self._last_status >= self._status_interval:
            self._send_status()
            self._last_status = now

    def _on_keepalive(self, message: Keepalive) -> None:
        if message.wal_end > self._received_lsn:
            self._received_lsn = message.wal_end
        floor = max(self._committed.lsn if self._committed else 0, self._acked_lsn)
        if self._xid is None and message.wal_end > floor:
            # Outside a transaction every change before wal_end has been received: the slot may
            # advance past WAL that only held other tables' changes (an open transaction's
            # changes are resent anyway, as its commit lies after wal_end).
            self._committed = PostgresPosition(
                lsn=message.wal_end, commit_lsn=self._last_commit_lsn, lsn_proc=message.wal_end,
                ts_usec=self._committed.ts_usec if self._committed else None,
            )
            self._dirty = True
        if message.reply_requested and self._repl is not None:
            self._send_status()
            self._last_status = time.monotonic()

    def _handle(self, lsn: int, data: bytes, out: list[Any]) -> None:
        tag = data[0]
        if tag == 0x49:  # Insert, the hottest path: decoded inline, no message object
            relation_id = _RELID(data, 1)[0]
            schema = self._schemas.by_relation_id(relation_id)
            # signals are acted on even when creates are skipped (Debezium checks them first)
            if schema is None or (self._skip_creates and schema.table_id != self._signal_table):
                return
            if self._workers is not None and self._no_signal_needs(schema):
                self._defer("c", lsn, relation_id, schema, data, out)
                return
            self._on_insert(lsn, schema, decode_tuple(data, 6)[0], out)
            return
        if tag == 0x55 or tag == 0x44:  # Update, Delete
            # to the workers: a delete, or an update with no old tuple (its new one follows 'N' at 5)
            if self._workers is not None and (tag == 0x44 or data[5] == 0x4E):
                relation_id = _RELID(data, 1)[0]
                schema = self._schemas.by_relation_id(relation_id)
                op = "d" if tag == 0x44 else "u"
                if schema is None or op in self._skipped:
                    return
                if self._no_signal_needs(schema):
                    self._defer(op, lsn, relation_id, schema, data, out)
                    return
            self._on_row_change(lsn, decode_message(data), out)
            return
        message = decode_message(data)
        if type(message) is BeginMessage:
            self._source_templates.clear()
            self._xid = message.xid
            self._commit_ts_us = message.commit_ts_us
            self._last_event_lsn = None
            self._last_data = time.monotonic()
            resuming = self._skip_xid == message.xid
            if self._tx is not None:
                payload = self._tx.begin(f"{message.xid}:{lsn}", message.commit_ts_us // 1000)
                if not resuming:
                    out.append(transaction_record(self._tx_topic, payload))
        elif type(message) is CommitMessage:
            if self._tx is not None and self._tx.in_transaction:
                payload = self._tx.end(f"{self._xid}:{lsn}", self._commit_ts_us // 1000)
                out.append(transaction_record(self._tx_topic, payload))
            self._committed = PostgresPosition(
                lsn=lsn, commit_lsn=lsn, lsn_proc=lsn, tx_id=self._xid, ts_usec=self._commit_ts_us
            )
            self._last_commit_lsn = lsn
            self._source_templates.clear()
            self._received_lsn = max(self._received_lsn, lsn)
            if self._skip_xid == self._xid:
                self._skip_xid = None
            self._xid = None
            self._dirty = True
        elif type(message) is RelationMessage:
            if self._workers is not None:
                self._workers.before_relation(out)
            self._schemas.for_relation(message)
        elif type(message) is TruncateMessage:
            self._on_truncate(lsn, message, out)
        elif type(message) is LogicalMessage:
            self._on_message(lsn, message, out)
        # Type and Origin messages carry nothing Debezium emits

    def _on_message(self, lsn: int, message: LogicalMessage, out: list[Any]) -> None:
        if not self._messages.wanted(message):
            return
        transactional = message.transactional and self._xid is not None
        block = None
        if not transactional:
            # Debezium treats a non-transactional message as a completed unit of its own
            self._last_commit_lsn = lsn
            self._source_templates.clear()
            if self._xid is None:
                self._committed = PostgresPosition(lsn=lsn, commit_lsn=lsn, lsn_proc=lsn, ts_usec=self._commit_ts_us)
        else:
            self._last_event_lsn = lsn
            if self._tx is not None and self._tx.in_transaction:
                block = self._tx.event(message_data_collection(), f"{self._xid}:{lsn}")
        self._dirty = True
        if transactional and self._skip(lsn):
            return
        out.append(self._messages.record(message, lsn, self._xid if transactional else None, self._commit_ts_us,
                                         self._last_commit_lsn, block))

    def _blocking_snapshot(self, signal: Signal, tables: list[str], position: PostgresPosition | None,
                           selects: dict[str, str]) -> list[Any]:
        return blocking_snapshot(self._sql, self.config, self.modes, self.namer, self._schemas, self._headers, tables,
                                 position, selects)

    def _dedupe(self, schema: Any, *keys: Any) -> None:
        """Streamed changes of the chunk's table win over its buffered rows (window open)."""
        incremental = self._incremental
        if incremental is not None and incremental.window_open:
            for key in keys:
                incremental.seen(schema.table_id, key)

    def _skip(self, lsn: int) -> bool:
        return self._skip_xid is not None and self._skip_xid == self._xid and lsn <= self._skip_upto

    def _source_template(self, schema: Any) -> dict[str, Any]:
        """The table's source block for the current transaction (``lsn`` and ``sequence`` to be
        set per event; ``_sequence_head`` is the start of ``sequence``)."""
        template = self._source_templates.get(schema)
        if template is None:
            template = self._source.build(
                schema=schema.table_id.schema or "public", table=schema.table_id.table, ts_us=self._commit_ts_us,
                lsn=0, last_commit_lsn=self._last_commit_lsn, tx_id=self._xid,
            )
            self._source_templates[schema] = template
            commit = self._last_commit_lsn
            self._sequence_head = '[null,"' if commit is None else f'["{commit}","'
        return template

    def _source_block(self, schema: Any, lsn: int) -> dict[str, Any]:
        """The source block: a per-table template for the current transaction, copied with this
        event's LSN (only ``lsn`` and ``sequence`` change between events of one transaction)."""
        source = self._source_template(schema).copy()
        source["sequence"] = f'{self._sequence_head}{lsn}"]'
        source["lsn"] = lsn
        return source

    def _no_signal_needs(self, schema: Any) -> bool:
        """Whether a row change of ``schema``'s table may go to the workers: not the signal table,
        and no incremental snapshot window open (which needs the row's key here)."""
        signals = self._signals
        return signals is None or (schema.table_id != self._signal_table and not signals.incremental.window_open)

    def _defer(self, op: str, lsn: int, relation_id: int, schema: Any, data: bytes, out: list[Any]) -> None:
        """``_on_insert`` / ``_on_row_change`` with the record built by a worker process
        (``streaming_parallel``): the state it needs is taken here, in stream order."""
        self._last_event_lsn = lsn
        self._dirty = True
        xid = self._xid
        template = self._source_template(schema)
        tx = self._tx
        tx_block = tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None
        if self._skip_xid is not None and self._skip(lsn):
            return
        position = PostgresPosition(lsn=lsn, commit_lsn=self._last_commit_lsn, tx_id=xid, ts_usec=self._commit_ts_us)
        assert self._workers is not None
        self._workers.defer(out, op, relation_id, schema, data, template, self._sequence_head, lsn, tx_block, position,
                            op == "d" and self._tombstones)

    def _on_insert(self, lsn: int, schema: Any, values: list[Any], out: list[Any]) -> None:
        self._last_event_lsn = lsn
        self._dirty = True
        xid = self._xid
        commit_lsn = self._last_commit_lsn
        ts_us = self._commit_ts_us
        source = self._source_block(schema, lsn)
        tx = self._tx
        ts_ns = time.time_ns()
        value = {
            "before": None, "after": schema.row(values), "source": source,
            "transaction": tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None,
            "op": "c", "ts_ms": ts_ns // 1_000_000, "ts_us": ts_ns // 1_000, "ts_ns": ts_ns,
        }
        if self._skip_xid is not None and self._skip(lsn):
            return
        key = schema.key(values)
        position = PostgresPosition(lsn=lsn, commit_lsn=commit_lsn, tx_id=xid, ts_usec=ts_us)
        signals = self._signals
        if signals is not None:
            if signals.incremental.window_open:
                signals.incremental.seen(schema.table_id, key)
            if self._signal_table is not None and schema.table_id == self._signal_table:
                signals.on_row(value["after"], position, out)
                if not self._skip_creates:
                    out.append(ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value,
                                            self._headers, position))
                signals.drain(out)  # a blocking snapshot's rows follow the signal's event
                return
        out.append(ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value, self._headers, position))

    def _on_row_change(self, lsn: int, message: Any, out: list[Any]) -> None:
        schema = self._schemas.by_relation_id(message.relation_id)
        if schema is None:
            return
        tag = type(message).__name__[0]  # I(nsert) U(pdate) D(elete)
        op = "c" if tag == "I" else ("u" if tag == "U" else "d")
        if op in self._skipped:
            return
        self._last_event_lsn = lsn
        self._dirty = True
        suppressed = self._skip(lsn)
        xid = self._xid
        position = PostgresPosition(lsn=lsn, commit_lsn=self._last_commit_lsn, tx_id=xid,
                                    ts_usec=self._commit_ts_us)
        source = self._source_block(schema, lsn)
        now = time.time_ns()
        tx = self._tx
        if op == "c":
            after_values = message.new
            key = schema.key(after_values)
            value = _payload("c", None, schema.row(after_values), source, now,
                              tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None)
            if not suppressed:
                self._dedupe(schema, key)
                signals = self._signals
                if signals is not None and self._signal_table is not None and schema.table_id == self._signal_table:
                    signals.on_row(value["after"], position, out)
                if not self._skip_creates:
                    out.append(ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value,
                                            self._headers, position))
                if signals is not None:
                    signals.drain(out)
            return
        if op == "d":
            old_values = message.old
            key = schema.key(old_values)
            value = _payload("d", schema.row(old_values), None, source, now,
                              tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None)
            if not suppressed:
                self._dedupe(schema, key)
                out.append(ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value, self._headers,
                                        position))
                if self._tombstones:
                    out.append(ChangeRecord(schema.topic, schema.key_schema, key, None, None, self._headers, position))
            return
        # update
        old_values = message.old
        new_values = _unchanged_from_old(message.new, old_values)
        after = schema.row(new_values)
        new_key = schema.key(new_values)
        before = schema.row(old_values) if old_values is not None else None
        old_key = schema.key(old_values) if old_values is not None else None
        if old_key is not None and old_key != new_key and None not in old_key.values():
            # primary-key change: delete(old key) + tombstone + create(new key), same LSN
            d_value = _payload("d", before, None, source, now,
                                tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None)
            c_value = _payload("c", None, after, source, now,
                                tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None)
            if not suppressed:
                self._dedupe(schema, old_key, new_key)
                encode_key = self._header_encoder(schema)
                delete_headers = [(HEADER_NEW_KEY, encode_key(new_key)), *self._headers]
                out.append(ChangeRecord(schema.topic, schema.key_schema, old_key, schema.envelope, d_value,
                                        delete_headers, position))
                if self._tombstones:
                    out.append(ChangeRecord(schema.topic, schema.key_schema, old_key, None, None, delete_headers,
                                            position))
                out.append(ChangeRecord(schema.topic, schema.key_schema, new_key, schema.envelope, c_value,
                                        [(HEADER_OLD_KEY, encode_key(old_key)), *self._headers],
                                        PostgresPosition(lsn=lsn, commit_lsn=self._last_commit_lsn, tx_id=xid,
                                                         ts_usec=self._commit_ts_us, index=1)))
            return
        value = _payload("u", before, after, source, now,
                          tx.event(schema.data_collection, f"{xid}:{lsn}") if tx else None)
        if not suppressed:
            self._dedupe(schema, new_key)
            out.append(ChangeRecord(schema.topic, schema.key_schema, new_key, schema.envelope, value, self._headers,
                                    position))

    def _header_encoder(self, schema: Any) -> Any:
        """Key -> header bytes (the header converter's JSON), compiled once per key schema."""
        encoder = self._key_header_encoders.get(schema.key_schema)
        if encoder is None:
            encoder = RecordEncoder(schema.key_schema, self._header_schemas).encode
            self._key_header_encoders[schema.key_schema] = encoder
        return encoder

    def _on_truncate(self, lsn: int, message: TruncateMessage, out: list[Any]) -> None:
        if "t" in self._skipped:
            return
        now = time.time_ns()
        for relation_id in message.relation_ids:
            schema = self._schemas.by_relation_id(relation_id)
            if schema is None:
                continue
            self._last_event_lsn = lsn
            self._dirty = True
            source = self._source.build(
                schema=schema.table_id.schema or "public", table=schema.table_id.table,
                ts_us=self._commit_ts_us, lsn=lsn, last_commit_lsn=self._last_commit_lsn, tx_id=self._xid,
            )
            tx_block = self._tx.event(schema.data_collection, f"{self._xid}:{lsn}") if self._tx else None
            if self._skip(lsn):
                continue
            out.append(ChangeRecord(
                schema.topic, None, None, schema.envelope, _payload("t", None, None, source, now, tx_block),
                self._headers,
                PostgresPosition(lsn=lsn, commit_lsn=self._last_commit_lsn, tx_id=self._xid,
                                 ts_usec=self._commit_ts_us),
            ))


def _unchanged_from_old(new: list[Any], old: list[Any] | None) -> list[Any]:
    """An update's new tuple with each unchanged TOASTed value taken from the old tuple where it
    holds one (REPLICA IDENTITY FULL sends the whole old row, detoasted), as Debezium's
    ``PostgresChangeRecordEmitter`` does with the old values it caches; otherwise the column keeps
    the unavailable-value placeholder (an old tuple of key columns only holds nulls there)."""
    if old is None or not any(value is UNCHANGED for value in new):
        return new
    return [old[i] if value is UNCHANGED and i < len(old) and old[i] is not None and old[i] is not UNCHANGED
            else value for i, value in enumerate(new)]
