"""Consistent snapshot of the captured Oracle tables with flashback queries.

    1. prerequisites (``connection.check_prerequisites``): ARCHIVELOG, supplemental logging, privileges
    2. ``SELECT CURRENT_SCN FROM V$DATABASE``: the snapshot SCN (with ``snapshot.locking.mode=shared``,
       the default, the captured tables are locked IN ROW SHARE MODE from here to the end of step 3:
       ``snapshot_lock``)
    3. each captured table's structure from the data dictionary, written to the schema history as
       a CREATE TABLE statement (and to the schema change topic with ``include.schema.changes``)
    4. ``SELECT ... FROM "OWNER"."TABLE" AS OF SCN <snapshot SCN>`` per table -> one ``op: "r"``
       event per row; every read sees the database exactly as of that SCN, without locks
    5. ``SELECT XID, START_SCN FROM V$TRANSACTION``: transactions still open at the snapshot SCN
       (``snapshot_pending_tx``); their changes up to the snapshot SCN are not in the reads
    6. the coordinator stores the offset ``{"scn": ..., "snapshot_scn": ..., "snapshot_pending_tx":
       ...}`` once every row is durable: streaming mines from before the oldest pending transaction
       and, up to the snapshot SCN, keeps only the pending transactions' changes: no gap and no
       overlap

Snapshot rows carry ``snapshot`` true / first / last (and ``*_in_data_collection``), the snapshot SCN as
``scn``, and no transaction id (Debezium Oracle documentation, ``source`` fields). Temporal and interval
columns are selected with ``TO_CHAR`` in the session's NLS formats so that nanoseconds and time zone
offsets reach the type converters intact (python-oracledb would drop both).

Step 5 reads V$TRANSACTION after the SCN (Debezium's "view only" way): a transaction that starts
before the snapshot SCN and commits in the instant between the two reads is missed; Debezium's
default also mines the logs for such transactions, lakecdc does not.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from lakecdc.capture.blocking import BlockingSnapshotError
from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.change_records import RecordFactory
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.database_schema import OracleDatabaseSchema
from lakecdc.capture.oracle.offset import OracleOffset
from lakecdc.capture.oracle.schema_history import OracleSchemaHistory
from lakecdc.capture.oracle.snapshot_lock import schema_locks
from lakecdc.capture.oracle.source_info import source_builder
from lakecdc.capture.oracle.table_changes import create_table_ddl, schema_change_record
from lakecdc.capture.oracle.table_schema import TableSchema
from lakecdc.capture.oracle.types import TypeModes, needs_text_select
from lakecdc.capture.snapshot_last import HoldLast
from lakecdc.capture.spi import Emit, SnapshotResult
from lakecdc.config.filters import compile_regex_list
from lakecdc.events.positions import OraclePosition
from lakecdc.events.source import snapshot_marker
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)

BATCH = 2000


def select_list(schema: TableSchema) -> str:
    parts = []
    for col in schema.columns:
        fmt = needs_text_select(col)
        quoted = f'"{col.name}"'
        if fmt is None:
            parts.append(quoted)
        elif fmt == "":
            parts.append(f"TO_CHAR({quoted}) AS {quoted}")
        elif "LOCAL" in col.data_type.upper():
            parts.append(f"TO_CHAR({quoted} AT TIME ZONE 'UTC', '{fmt}') AS {quoted}")
        else:
            parts.append(f"TO_CHAR({quoted}, '{fmt}') AS {quoted}")
    return ", ".join(parts)


def snapshot_statement(config: OracleConnectorConfig, schema: TableSchema, scn: int,
                       selects: dict[str, str] | None = None) -> str:
    """The table's snapshot query: a blocking snapshot's SELECT from its signal (``selects``, by
    ``OWNER.TABLE``), else ``snapshot.select.statement.overrides``, both as written, else every
    column ``AS OF SCN scn``."""
    key = f"{schema.owner}.{schema.table}"
    override = (selects or {}).get(key) or config.snapshot_select_statements.get(key)
    if override:
        return override
    return f'SELECT {select_list(schema)} FROM "{schema.owner}"."{schema.table}" AS OF SCN {scn}'


class OracleSnapshotSource:
    def __init__(self, config: OracleConnectorConfig, modes: TypeModes, namer: TopicNamer,
                 with_data: bool = True, show_progress: bool | None = None, console: Any = None,
                 headers: list[tuple[str, bytes]] | None = None,
                 history: OracleSchemaHistory | None = None, selects: dict[str, str] | None = None) -> None:
        self.config = config
        #: a blocking snapshot's SELECT statements from its signal, by ``OWNER.TABLE`` (capture/blocking.py)
        self.selects = selects or {}
        self.history = history
        self.modes = modes
        self.namer = namer
        self.with_data = with_data
        self.show_progress = show_progress
        self.console = console
        self.source = source_builder(config)
        self.headers = headers if headers is not None else config.data_headers()

    def run(self, emit: Emit) -> SnapshotResult:
        conn = oraconn.connect(self.config)
        started = time.monotonic()
        try:
            schemas = OracleDatabaseSchema(conn, self.config, self.namer, self.modes, self.history)
            captured = [t for t in conn.list_tables() if schemas.is_captured(*t)]
            oraconn.check_prerequisites(conn, self.config, captured)              # step 1
            with schema_locks(self.config, captured):                             # snapshot.locking.mode
                conn.use_root()
                scn = conn.current_scn()                                           # step 2
                self._schema(schemas, emit, captured, scn)                         # step 3
            tables = [schemas.get(owner, table) for owner, table in captured
                      if self._included(owner, table)]
            rows = self._scan(conn, emit, tables, scn) if self.with_data else 0    # step 4
            pending = conn.open_transactions(scn)                                  # step 5
            offset = OracleOffset.after_snapshot(scn, pending)
            log.info("snapshot read %d rows from %d tables at SCN %d in %.1f s; streaming starts at SCN %d "
                     "(%d transactions open at the snapshot SCN)", rows, len(tables), scn,
                     time.monotonic() - started, offset.scn, len(pending))
            return SnapshotResult(offset=offset.to_offset(), rows=rows, tables=len(tables))
        finally:
            conn.close()

    def blocking(self, emit: Emit, tables: list[TableSchema], scn: int) -> int:
        """A blocking snapshot (signal ``execute-snapshot``, ``type: blocking``): ``tables`` read whole
        as step 4 reads them, ``AS OF SCN scn`` (a SELECT from the signal's additional conditions
        runs as written, as Debezium runs it without ``snapshot.enhance.predicate.scn``), on a
        connection of its own; no schema history, no offset (streaming goes on after the signal's commit)."""
        conn = oraconn.connect(self.config)
        try:
            return self._scan(conn, emit, tables, scn)
        finally:
            conn.close()

    def _schema(self, schemas: OracleDatabaseSchema, emit: Emit, captured: list[tuple[str, str]], scn: int) -> None:
        """Every captured table's structure: into the schema history (a CREATE TABLE each, the first
        one superseding older records) and, with ``include.schema.changes``, onto the schema change
        topic, before any row."""
        records = []
        position = OraclePosition(scn=scn, snapshot=True)
        for i, (owner, table) in enumerate(captured):
            change = schemas.snapshot_table(owner, table, scn, first=i == 0)
            if self.config.include_schema_changes:
                last = i == len(captured) - 1
                source = self.source.build(db=self.config.source_db, schema=owner, table=table,
                                           ts_ms=int(time.time() * 1000), scn=scn, ssn=None,
                                           snapshot="last" if last else "true")
                records.append(schema_change_record(self.namer.schema_change_topic, source, self.config.source_db,
                                                    owner, create_table_ddl(change.table), [change], position))
        if records:
            emit(records)

    def _included(self, owner: str, table: str) -> bool:
        """``snapshot.include.collection.list``: the captured tables whose data the snapshot reads."""
        wanted = self.config.snapshot_include_collection_list
        if not wanted:
            return True
        patterns = compile_regex_list(wanted, "snapshot.include.collection.list")
        names = (f"{self.config.source_db}.{owner}.{table}", f"{owner}.{table}")
        return any(p.fullmatch(n) for p in patterns for n in names)

    def _first_row(self, rows: Any, schema: TableSchema) -> Any:
        """The query's first row (None: no row), where the database refuses a bad statement: one
        from the signal fails the blocking snapshot naming the table and the statement."""
        from_signal = self.selects.get(f"{schema.owner}.{schema.table}")
        try:
            return next(rows, None)
        except oraconn.OracleConnectionLostError:
            raise
        except Exception as exc:
            import oracledb

            if from_signal is None or not isinstance(exc, oracledb.DatabaseError):
                raise
            table = f"{self.config.source_db}.{schema.owner}.{schema.table}"
            raise BlockingSnapshotError(table, from_signal, str(exc)) from exc

    def _scan(self, conn: oraconn.OracleConnection, emit: Emit, tables: list[TableSchema], scn: int) -> int:
        progress = _Progress(self.show_progress, conn, tables, self.console)
        position = OraclePosition(scn=scn, snapshot=True)
        build = self.source.build
        total = 0
        conn.use_pdb()
        emit = hold = HoldLast(emit)
        try:
            for schema in tables:
                factory = RecordFactory(schema, self.config.tombstones_on_delete, self.headers)
                ts_ms = int(time.time() * 1000)

                def source(marker: str, schema: TableSchema = schema, ts_ms: int = ts_ms) -> dict[str, Any]:
                    return build(db=self.config.source_db, schema=schema.owner, table=schema.table, ts_ms=ts_ms,
                                 scn=scn, snapshot=marker, ssn=None)

                middle = source("true")
                progress.table_started(schema)
                rows = conn.iter_tuples(snapshot_statement(self.config, schema, scn, self.selects), BATCH)
                block: list[Any] = []
                table_rows = 0
                pending = self._first_row(rows, schema)
                while pending is not None:
                    following = next(rows, None)
                    names, values = pending
                    row = schema.row_from_tuple(names, values)
                    is_last = following is None
                    if table_rows == 0 or is_last:
                        marker = snapshot_marker(True, first=total == 0,
                                                 first_in_table=table_rows == 0, last_in_table=is_last)
                        src = source(marker)
                    else:
                        src = middle
                    block.append(factory.read(row, src, position, time.time_ns()))
                    table_rows += 1
                    total += 1
                    if len(block) >= BATCH:
                        emit(block)
                        progress.advance(len(block))
                        block = []
                    pending = following
                if block:
                    emit(block)
                    progress.advance(len(block))
                log.info("snapshot: table %s.%s done (%d rows)", schema.owner, schema.table, table_rows)
            hold.finish()
        finally:
            progress.close()
        return total


class _Progress:
    """A rich progress bar (table being read, rows read / estimated rows from ALL_TABLES.NUM_ROWS)
    on a terminal; silent otherwise. ``console`` is where it draws (default: stderr)."""

    def __init__(self, show: bool | None, conn: oraconn.OracleConnection, tables: list[TableSchema],
                 console: Any = None) -> None:
        self.bar: Any = None
        if show is None:
            show = sys.stderr.isatty()
        if not show or not tables:
            return
        estimate = sum(conn.row_estimate(t.owner, t.table) for t in tables)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("snapshot {task.fields[table]}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), transient=True, console=console)
        self.task = self.bar.add_task("rows", total=max(estimate, 1), table="")
        self.bar.start()

    def table_started(self, schema: TableSchema) -> None:
        if self.bar is not None:
            self.bar.update(self.task, table=f"{schema.owner}.{schema.table}")

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
