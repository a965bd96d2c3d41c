"""Snapshot of the captured SQL Server tables (Debezium SQL Server documentation, "Snapshots"; isolation
per ``snapshot.isolation.mode``).

Steps (``snapshot.isolation.mode=repeatable_read``, the default)::

    1. CDC checks, captured tables and their capture instances
    2. SET LOCK_TIMEOUT <snapshot.lock.timeout.ms>
       SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SAVE TRANSACTION dbz_schema_snapshot
       SELECT TOP(0) * FROM [db].[schema].[table] WITH (TABLOCKX)       per table: no DDL meanwhile
    3. SELECT sys.fn_cdc_get_max_lsn()                                  streaming starts after it
    4. the structure of each table (its capture instance at that LSN)
    5. ROLLBACK TRANSACTION dbz_schema_snapshot                         locks released
       a CREATE schema change event per table on <topic.prefix> (include.schema.changes)
    6. SELECT <captured columns> FROM [db].[schema].[table]             one "r" event per row
    7. COMMIT; the coordinator stores the offset: the snapshot is complete

``read_uncommitted`` / ``read_committed`` take no lock (step 2 sets only the level);
``snapshot`` uses SNAPSHOT isolation (fully consistent with the stream, no lock); ``exclusive``
keeps the exclusive table locks until step 7. ``with_data=False`` (``no_data``) stops after step 5.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from lakecdc.capture.blocking import BlockingSnapshotError
from lakecdc.capture.snapshot_last import HoldLast
from lakecdc.capture.spi import Emit, SnapshotResult
from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.database_schema import DatabaseSchema
from lakecdc.capture.sqlserver.errors import SqlServerSetupError
from lakecdc.capture.sqlserver.offset import snapshot_offset
from lakecdc.capture.sqlserver.source_info import source_builder
from lakecdc.capture.sqlserver.table_changes import schema_change_record
from lakecdc.capture.sqlserver.table_schema import with_headers
from lakecdc.events.positions import SqlServerPosition
from lakecdc.events.source import snapshot_marker

log = logging.getLogger(__name__)

DEFAULT_FETCH = 2000
SAVEPOINT = "dbz_schema_snapshot"
_LEVELS = {"read_uncommitted": "READ UNCOMMITTED", "read_committed": "READ COMMITTED",
           "repeatable_read": "REPEATABLE READ", "exclusive": "REPEATABLE READ", "snapshot": "SNAPSHOT"}


def no_max_lsn_error(database: str) -> SqlServerSetupError:
    return SqlServerSetupError(
        f"sys.fn_cdc_get_max_lsn() is NULL in database '{database}': the CDC capture job has not run yet. "
        "Make sure SQL Server Agent is running (EXEC sys.sp_cdc_help_jobs lists the capture job)"
    )


class SqlServerSnapshotSource:
    def __init__(self, config: Any, schema: DatabaseSchema, connect: Callable[[], Any], with_data: bool = True,
                 show_progress: bool | None = None, console: Any = None,
                 headers: list[tuple[str, bytes]] | None = None, selects: dict[str, str] | None = None) -> None:
        self.config = config
        self.headers = config.data_headers() if headers is None else headers
        #: a blocking snapshot's SELECT statements from its signal, by ``schema.table`` (capture/blocking.py)
        self.selects = selects or {}
        self.console = console  # where the progress bar draws (default: rich's stderr console)
        self.schema = schema
        self.connect = connect
        self.with_data = with_data
        self.show_progress = sys.stderr.isatty() if show_progress is None else show_progress
        self.source = source_builder(config)
        self.mode: str = config.effective_isolation_mode

    def run(self, emit: Emit) -> SnapshotResult:
        conn = self.connect()
        try:
            self.schema.load(conn)                                                   # step 1
            tables = self.schema.tables()
            self._lock(conn, tables)                                                 # step 2
            max_lsn = sq.max_lsn(conn)                                               # step 3
            if max_lsn is None:
                raise no_max_lsn_error(self.schema.database)
            instances = [self.schema.instance_at(t, max_lsn) for t in tables]       # step 4
            schemas = [self.schema.schema(i) for i in instances]
            if self.mode == "repeatable_read":
                sq.execute(conn, f"ROLLBACK TRANSACTION {SAVEPOINT}")                # step 5
            if self.config.include_schema_changes:
                emit(schema_change_records(self.config, self.schema, instances, max_lsn))
            chosen = [i for i in instances if self._included(i)]
            rows = self._scan(conn, emit, chosen, max_lsn) if self.with_data else 0  # step 6
            conn.commit()                                                            # step 7
            log.info("snapshot at LSN %s: %d tables (%s), %d rows", sq.lsn_text(max_lsn), len(schemas),
                     ", ".join(s.data_collection for s in schemas), rows)
            return SnapshotResult(snapshot_offset(max_lsn), rows, len(schemas))
        finally:
            conn.close()

    def blocking(self, emit: Emit, tables: list[tuple[str, str]], lsn: int) -> int:
        """A blocking snapshot (``execute-snapshot`` with ``"type": "blocking"``) of ``tables``:
        steps 2, 5, 6 and 7 on a connection of its own, every row at ``lsn`` (the signal's commit LSN)."""
        conn = self.connect()
        try:
            self._lock(conn, tables)
            if self.mode == "repeatable_read":
                sq.execute(conn, f"ROLLBACK TRANSACTION {SAVEPOINT}")
            rows = self._scan(conn, emit, [self.schema.instance_at(t, lsn) for t in tables], lsn)
            conn.commit()
            return rows
        finally:
            conn.close()

    def _lock(self, conn: Any, tables: list[tuple[str, str]]) -> None:
        timeout = self.config.snapshot_lock_timeout_ms
        sq.execute(conn, f"SET LOCK_TIMEOUT {timeout if timeout >= 0 else -1}")
        if self.mode == "snapshot":
            # SNAPSHOT must be the level a transaction starts with: end the implicit one first
            conn.rollback()
        sq.execute(conn, f"SET TRANSACTION ISOLATION LEVEL {_LEVELS[self.mode]}")
        if self.mode not in ("repeatable_read", "exclusive"):
            return
        if self.mode == "repeatable_read":
            sq.execute(conn, f"SAVE TRANSACTION {SAVEPOINT}")
        db = sq.quote(self.schema.database)
        for schema, table in tables:
            log.info("locking table %s.%s", schema, table)
            sq.execute(conn, f"SELECT TOP(0) * FROM {db}.{sq.quote(schema)}.{sq.quote(table)} WITH (TABLOCKX)")

    def _statement(self, inst: Any) -> str:
        key = f"{inst.source_schema}.{inst.source_table}"
        override = self.selects.get(key) or self.config.snapshot_select_statements.get(key)
        if override:
            return str(override)
        columns = ", ".join(sq.quote(c) for c in self.schema.schema(inst).column_names)
        db = sq.quote(self.schema.database)
        return f"SELECT {columns} FROM {db}.{sq.quote(inst.source_schema)}.{sq.quote(inst.source_table)}"

    def _execute(self, cur: Any, inst: Any) -> None:
        """Run a table's snapshot query; the database refusing a blocking snapshot's SELECT from its
        signal fails the snapshot naming the table and the statement."""
        import pymssql

        from_signal = self.selects.get(f"{inst.source_schema}.{inst.source_table}")
        try:
            cur.execute(self._statement(inst))
        except (pymssql.ProgrammingError, pymssql.DataError, pymssql.IntegrityError) as exc:
            if from_signal is None:
                raise
            table = f"{self.schema.database}.{inst.source_schema}.{inst.source_table}"
            raise BlockingSnapshotError(table, from_signal, str(exc)) from exc

    def _included(self, inst: Any) -> bool:
        signal = self.config.signal_table
        if signal is not None and inst.table_key == (signal.schema, signal.table):
            return False  # the signal table is streamed (its rows are signals) but, as in Debezium, not snapshotted
        wanted = self.config.snapshot_include_collection_list
        if not wanted:
            return True
        from lakecdc.config.filters import compile_regex_list

        patterns = compile_regex_list(wanted, "snapshot.include.collection.list")
        names = (f"{self.schema.database}.{inst.source_schema}.{inst.source_table}",
                 f"{inst.source_schema}.{inst.source_table}")
        return any(p.fullmatch(n) for p in patterns for n in names)

    def _scan(self, conn: Any, emit: Emit, instances: list[Any], max_lsn: int) -> int:
        """One ``r`` record per row of ``instances``; the first and last rows of the snapshot and of each table
        carry Debezium's markers (first / last / first_in_data_collection / last_in_data_collection)."""
        progress = _Progress(conn, instances, self.console) if self.show_progress else None
        position = SqlServerPosition(commit_lsn=max_lsn, snapshot=True)
        commit_text = sq.lsn_text(max_lsn)
        fetch = self.config.snapshot_fetch_size or DEFAULT_FETCH
        total = 0
        emit = hold = HoldLast(emit)
        try:
            for inst in instances:
                factory = self.schema.factory(inst)
                ts_ms = int(time.time() * 1000)

                def source(marker: str, inst: Any = inst, ts_ms: int = ts_ms) -> dict[str, Any]:
                    return self.source.build(db=self.schema.database, schema=inst.source_schema,
                                             table=inst.source_table, ts_ms=ts_ms, commit_lsn=commit_text,
                                             change_lsn=None, event_serial_no=None, snapshot=marker)

                middle = source("true")
                cur = conn.cursor()
                table_rows = 0
                try:
                    self._execute(cur, inst)
                    block = cur.fetchmany(fetch)
                    while block:
                        following = cur.fetchmany(fetch)
                        ts_ns = time.time_ns()
                        pending = [factory.read(row, middle, position, ts_ns) for row in block]
                        if table_rows == 0:
                            only = len(block) == 1 and not following
                            marker = snapshot_marker(True, first=total == 0, first_in_table=True,
                                                     last_in_table=only)
                            pending[0] = factory.read(block[0], source(marker), position, ts_ns)
                        if not following and (len(block) > 1 or table_rows > 0):
                            marker = snapshot_marker(True, last_in_table=True)
                            pending[-1] = factory.read(block[-1], source(marker), position, ts_ns)
                        emit(with_headers(pending, self.headers))
                        table_rows += len(block)
                        total += len(block)
                        if progress is not None:
                            progress.advance(len(block))
                        block = following
                finally:
                    cur.close()
                log.info("snapshot: table %s.%s.%s done, %d rows", self.schema.database, inst.source_schema,
                         inst.source_table, table_rows)
            hold.finish()
        finally:
            if progress is not None:
                progress.close()
        return total


def schema_change_records(config: Any, schema: DatabaseSchema, instances: list[Any], lsn: int) -> list[Any]:
    """One CREATE schema change event per captured table, at the snapshot LSN, as Debezium's
    ``SqlServerSnapshotChangeEventSource`` emits them ("Schema change topic")."""
    source = source_builder(config)
    topic = schema.namer.schema_change_topic
    position = SqlServerPosition(commit_lsn=lsn, snapshot=True)
    ts_ms = int(time.time() * 1000)
    return [
        schema_change_record(topic, source.build(db=schema.database, schema=inst.source_schema,
                                                 table=inst.source_table, ts_ms=ts_ms, commit_lsn=sq.lsn_text(lsn),
                                                 change_lsn=None, event_serial_no=None, snapshot="true"),
                             schema.schema(inst), "CREATE", schema.primary_key(inst), position)
        for inst in instances
    ]


Q_ROW_ESTIMATE = "SELECT SUM(p.rows) FROM sys.partitions p WHERE p.object_id = OBJECT_ID(%s) AND p.index_id IN (0, 1)"


class _Progress:
    """A rich progress bar (rows read / rows SQL Server estimates) when attached to a terminal."""

    def __init__(self, conn: Any, instances: list[Any], console: Any = None) -> None:
        estimate = 0
        for inst in instances:
            cur = conn.cursor()
            try:
                cur.execute(Q_ROW_ESTIMATE, (f"{sq.quote(inst.source_schema)}.{sq.quote(inst.source_table)}",))
                row = cur.fetchone()
                estimate += int(row[0] or 0) if row else 0
            finally:
                cur.close()
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("snapshot"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            transient=True, console=console)
        self.task = self.bar.add_task("rows", total=max(estimate, 1))
        self.bar.start()

    def advance(self, n: int) -> None:
        self.bar.advance(self.task, n)

    def close(self) -> None:
        self.bar.stop()
