"""Consistent initial snapshot, with no gap and no overlap with streaming.

1. Create the replication slot with ``EXPORT_SNAPSHOT`` (an existing slot is dropped and
   recreated: a new snapshot makes its old position meaningless). The slot's *consistent point*
   is the LSN the snapshot reflects; the exported snapshot stays importable while the
   replication connection that created it is idle.
2. On a SQL connection: ``BEGIN ISOLATION LEVEL REPEATABLE READ`` + ``SET TRANSACTION SNAPSHOT``
   with the exported name: every read below sees exactly the data as of the consistent point.
   The captured tables are locked ``IN ACCESS SHARE MODE`` (``snapshot.lock.timeout.ms``) so a
   concurrent TRUNCATE, which is not MVCC-safe, waits for the snapshot instead of hiding rows
   from it; then the replication connection is closed (the slot stays, inactive).
3. Read each captured table with ``COPY (SELECT ...) TO STDOUT`` (text format: the same value
   converters as pgoutput) or the ``snapshot.select.statement.overrides`` statement, emitting
   ``op "r"`` records, each marked first / last / last_in_data_collection / true as Debezium does.
4. Commit; the coordinator then stores the offset ``{"lsn": <consistent point>, "snapshot": true,
   "last_snapshot_record": true}`` and streaming starts exactly there: transactions committed
   after the consistent point are streamed, earlier ones are in the snapshot.

A crash before step 4 stores nothing, so the next start snapshots again, as Debezium's PostgreSQL
connector restarts a snapshot that did not complete (documentation, "Snapshots").
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from lakecdc.capture.blocking import BlockingSnapshotError
from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.offset import snapshot_offset
from lakecdc.capture.postgres.replication import ReplicationConnection
from lakecdc.capture.postgres.snapshot_parallel import EncodedRows, block_ranges, parallel_allowed, parallel_rows
from lakecdc.capture.postgres.source_info import PostgresSourceBuilder, source_builder
from lakecdc.capture.postgres.table_schema import TableSchema, TableSchemas
from lakecdc.capture.postgres.types import TypeModes
from lakecdc.capture.snapshot_last import HoldLast
from lakecdc.capture.spi import Emit, SnapshotResult
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.source import snapshot_marker
from lakecdc.events.topics import TableId, TopicNamer
from lakecdc.transport.sink import EncodedPayload

log = logging.getLogger(__name__)

BATCH = 5_000


class PostgresSnapshotSource:
    def __init__(self, config: PostgresConnectorConfig, modes: TypeModes, namer: TopicNamer,
                 with_data: bool = True, show_progress: bool | None = None,
                 headers: list[tuple[str, bytes]] | None = None, selects: dict[str, str] | None = None) -> None:
        self.headers = headers if headers is not None else config.data_headers()
        self.config = config
        #: a blocking snapshot's SELECT statements from its signal, by ``schema.table`` (capture/blocking.py)
        self.selects = selects or {}
        self.modes = modes
        self.namer = namer
        self.with_data = with_data
        self.show_progress = sys.stderr.isatty() if show_progress is None else show_progress

    def run(self, emit: Emit) -> SnapshotResult:
        config = self.config
        sql_conn = pgconn.connect(config)
        repl: ReplicationConnection | None = None
        try:
            tables = pgconn.captured_tables(sql_conn, config)
            pgconn.check_privileges(sql_conn, config, tables,
                                    creates_publication=not pgconn.publication_exists(sql_conn, config.publication_name)
                                    and config.publication_autocreate_mode != "disabled")
            pgconn.ensure_publication(sql_conn, config, tables)
            # the signal table is streamed (its rows are signals) but, as in Debezium, not snapshotted
            tables = [t for t in tables if t != config.signal_table]
            state = pgconn.slot_state(sql_conn, config.slot_name)
            if state.exists:
                if state.active:
                    pgconn.terminate_slot_holder(sql_conn, config.slot_name)
                    time.sleep(0.2)
                log.info("dropping replication slot %s to take a consistent snapshot with a new one",
                         config.slot_name)
                pgconn.drop_slot(sql_conn, config.slot_name)
            repl = ReplicationConnection.connect(config.conninfo(replication=True))
            created = repl.create_slot(config.slot_name, export_snapshot=True, failover=config.slot_failover)
            log.info("snapshot step 1: created slot %s, consistent point %s", config.slot_name,
                     created.consistent_point)
            sql_conn.autocommit = False
            sql_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            sql_conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(created.snapshot_name)))
            self._lock_tables(sql_conn, tables)
            # The snapshot is imported: the slot no longer needs its creating connection, and
            # releasing it now shows the slot inactive until streaming really starts.
            repl.close()
            repl = None
            tx_id = pgconn.one_row(sql_conn.execute("SELECT txid_current()"))[0]
            ts_us = time.time_ns() // 1000
            log.info("snapshot step 2: reading %d tables as of LSN %s", len(tables), created.consistent_point)
            schemas = TableSchemas(sql_conn, config, self.modes, self.namer)
            rows = 0
            if self.with_data:
                rows = self.read_tables(sql_conn, schemas, tables, emit, created.consistent_point, tx_id, ts_us,
                                        parallel=parallel_allowed(config))
            sql_conn.execute("COMMIT")
            sql_conn.autocommit = True
            log.info("snapshot step 3: committed; %d rows", rows)
            return SnapshotResult(snapshot_offset(created.consistent_point, tx_id, ts_us), rows, len(tables))
        finally:
            if repl is not None:
                repl.close()
            sql_conn.close()

    def _lock_tables(self, conn: Any, tables: list[TableId]) -> None:
        """ACCESS SHARE locks until the snapshot commits: a TRUNCATE (not MVCC-safe: an older
        snapshot would see the table empty) or DDL then waits for the snapshot instead of
        emptying it, and is streamed afterwards."""
        if not tables:
            return
        timeout_ms = self.config.snapshot_lock_timeout_ms
        conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{timeout_ms}ms")))
        conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(
            sql.SQL(", ").join(pgconn.quoted(t) for t in tables)))

    def read_tables(self, conn: Any, schemas: TableSchemas, tables: list[TableId], emit: Emit, lsn: int,
                    tx_id: int, ts_us: int, parallel: bool = False) -> int:
        """Emit every row of ``tables`` as ``r`` records (the caller holds the snapshot transaction);
        also used by a blocking snapshot while streaming. ``parallel``: large tables are read by
        ``snapshot.max.threads`` worker processes (snapshot_parallel.py)."""
        builder = source_builder(self.config)
        position = PostgresPosition(lsn=lsn, tx_id=tx_id, ts_usec=ts_us, snapshot=True)
        progress = _Progress(self.show_progress)
        headers = self.headers
        total = 0
        batch: list[ChangeRecord] = []
        emit = hold = HoldLast(emit)
        try:
            for table_index, table in enumerate(tables):
                schema = schemas.for_table(table)
                first_table = table_index == 0
                estimate = conn.execute(
                    "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass",
                    (pgconn.regclass_text(table),),
                ).fetchone()[0]
                task = progress.add(str(table), estimate)
                if log.isEnabledFor(logging.DEBUG):
                    visible = conn.execute(sql.SQL("SELECT count(*), txid_current_snapshot()::text FROM {}").format(
                        pgconn.quoted(table))).fetchone()
                    log.debug("snapshot of %s: %s rows visible (snapshot %s)", table, visible[0], visible[1])
                sources = _SourceFactory(builder, schema, lsn, tx_id, ts_us)
                topic, key_schema, envelope, key_of, row_of = (
                    schema.topic, schema.key_schema, schema.envelope, schema.key, schema.row
                )
                # One row is held back: whether it is its table's last is known only at the next.
                held: dict[str, Any] | None = None
                held_key: Any = None
                count = 0
                for values in self._table_rows(conn, schema, table, sources, parallel):
                    if type(values) is EncodedRows:
                        # rows between two rows read here: never a table's first or last
                        if held is not None:
                            _finish(held, sources, first_table and count == 1, count == 1, False)
                            batch.append(ChangeRecord(topic, key_schema, held_key, envelope, held, headers, position))
                            held = None
                        batch.extend(ChangeRecord(topic, key_schema, None if key is None else EncodedPayload(key),
                                                  envelope, EncodedPayload(value), headers, position)
                                     for key, value in values.pairs)
                        count += len(values.pairs)
                        if len(batch) >= BATCH:
                            emit(batch)
                            progress.advance(task, len(batch))
                            batch = []
                        continue
                    if held is not None:
                        _finish(held, sources, first_table and count == 1, count == 1, False)
                        batch.append(ChangeRecord(topic, key_schema, held_key, envelope, held, headers, position))
                        if len(batch) >= BATCH:
                            emit(batch)
                            batch = []
                            progress.advance(task, BATCH)
                    count += 1
                    held_key = key_of(values)
                    held = {"before": None, "after": row_of(values), "source": None, "transaction": None,
                            "op": "r", "ts_ms": 0, "ts_us": 0, "ts_ns": 0}
                if held is not None:
                    _finish(held, sources, first_table and count == 1, count == 1, True)
                    batch.append(ChangeRecord(topic, key_schema, held_key, envelope, held, headers, position))
                progress.finish(task, count)
                total += count
                log.info("snapshot of %s: %d rows", table, count)
            hold(batch)
            hold.finish()
        finally:
            progress.close()
        return total

    def _table_rows(self, conn: Any, schema: TableSchema, table: TableId, sources: _SourceFactory,
                    parallel: bool) -> Iterator[Any]:
        """The table's rows as values, or, read in parallel, also runs of encoded rows."""
        if parallel and str(table) not in self.selects and str(table) not in self.config.snapshot_select_statements:
            ranges = block_ranges(conn, table, self.config.snapshot_max_threads)
            if ranges is not None:
                return parallel_rows(conn, self.config, schema, table, ranges, sources.build("true"))
        return self._rows(conn, schema, table)

    def _rows(self, conn: Any, schema: TableSchema, table: TableId) -> Any:
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in schema.column_names)
        from_signal = self.selects.get(str(table))
        override = from_signal or self.config.snapshot_select_statements.get(str(table))
        if override:
            query = sql.SQL("SELECT {} FROM ({}) AS lakecdc_override").format(columns, sql.SQL(override))
        else:
            query = sql.SQL("SELECT {} FROM {}").format(columns, pgconn.quoted(table))
        try:
            with conn.cursor() as cur:
                with cur.copy(sql.SQL("COPY ({}) TO STDOUT").format(query)) as copy:
                    yield from copy.rows()
        except psycopg.OperationalError:
            raise  # connection lost: streaming reconnects
        except psycopg.Error as exc:
            if from_signal is None:
                raise
            raise BlockingSnapshotError(str(table), from_signal, str(exc)) from exc


class _SourceFactory:
    __slots__ = ("builder", "schema", "lsn", "tx_id", "ts_us")

    def __init__(self, builder: PostgresSourceBuilder, schema: TableSchema, lsn: int, tx_id: int, ts_us: int):
        self.builder, self.schema, self.lsn, self.tx_id, self.ts_us = builder, schema, lsn, tx_id, ts_us

    def build(self, marker: str) -> dict[str, Any]:
        return self.builder.build(
            schema=self.schema.table_id.schema or "public", table=self.schema.table_id.table, ts_us=self.ts_us,
            lsn=self.lsn, last_commit_lsn=None, tx_id=self.tx_id, snapshot=marker,
        )


def _finish(value: dict[str, Any], sources: _SourceFactory, first: bool, first_in_table: bool,
            last_in_table: bool) -> None:
    """Fill a held-back row's source block (Debezium's marker precedence: first,
    last_in_data_collection, first_in_data_collection, true; the snapshot's final record becomes
    "last" once the snapshot ends) and its processing time."""
    marker = snapshot_marker(True, first=first, first_in_table=first_in_table, last_in_table=last_in_table)
    value["source"] = sources.build(marker)
    now = time.time_ns()
    value["ts_ms"], value["ts_us"], value["ts_ns"] = now // 1_000_000, now // 1000, now


class _Progress:
    """A rich progress bar per table when attached to a terminal; silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self._progress = None
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("snapshot {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                transient=False,
            )
            self._progress.start()

    def add(self, name: str, estimate: int) -> Any:
        if self._progress is None:
            return None
        return self._progress.add_task(name, total=max(int(estimate), 1))

    def advance(self, task: Any, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(task, n)

    def finish(self, task: Any, count: int) -> None:
        if self._progress is not None:
            self._progress.update(task, total=max(count, 1), completed=count)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
