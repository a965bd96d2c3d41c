"""Consistent snapshot of the captured MySQL/MariaDB tables (Debezium MySQL documentation, "Snapshots":
the default workflow under a global read lock, and the table-level-lock workflow).

With a global read lock (``snapshot.locking.mode=minimal``, the default)::

    1. FLUSH TABLES WITH READ LOCK                 writes and DDL wait
    2. START TRANSACTION WITH CONSISTENT SNAPSHOT  repeatable read, one view for every read below
    3. SHOW BINARY LOG STATUS / SHOW MASTER STATUS the binlog position streaming starts from
    4. SHOW CREATE TABLE for every table of the captured databases -> schema history
    5. UNLOCK TABLES                               (``extended``: only after step 8)
    6. schema change events (CREATE TABLE ...) for the captured tables
    7. SELECT * per captured table -> one ``op: "r"`` event per row
    8. COMMIT
    9. the coordinator stores the offset: the snapshot is complete

When the user may not take a global read lock (managed servers), the table-lock variant locks the
captured tables with ``LOCK TABLES ... READ`` inside the transaction and releases them only after the
commit, as Debezium's table-level-lock workflow does. ``snapshot.locking.mode=none`` takes no lock (only
safe without DDL). ``with_data=False`` (``no_data``/``schema_only``) stops after step 6.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lakecdc.capture.blocking import BlockingSnapshotError
from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql import snapshot_parallel as parallel
from lakecdc.capture.mysql.change_records import schema_change_record
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.errors import MySqlPrivilegeError
from lakecdc.capture.mysql.offset import boundary_offset
from lakecdc.capture.mysql.snapshot_parallel import SnapshotWorkers, parallel_allowed
from lakecdc.capture.mysql.source_info import source_builder
from lakecdc.capture.mysql.table_changes import change_id
from lakecdc.capture.snapshot_last import HoldLast
from lakecdc.capture.spi import Emit, SnapshotResult
from lakecdc.events.positions import MySqlPosition
from lakecdc.events.source import snapshot_marker

log = logging.getLogger(__name__)

ER_ACCESS_DENIED_CODES = frozenset({1044, 1045, 1227})
BATCH = 2000


class MySqlSnapshotSource:
    def __init__(self, config: Any, schema: DatabaseSchema, with_data: bool = True,
                 show_progress: bool | None = None, selects: dict[str, str] | None = None) -> None:
        self.config = config
        self.schema = schema
        #: a blocking snapshot's SELECT statements from its signal, by ``db.table`` (capture/blocking.py)
        self.selects = selects or {}
        self.with_data = with_data
        self.show_progress = show_progress
        self.source = source_builder(config)
        self.lock_kind = "none"
        self.lock_used = "no"
        self._create_statements: dict[tuple[str, str], str] = {}
        #: the server's and each database's character set statements, as Debezium's snapshot emits them
        self._charset_statement = ""
        self._database_statements: dict[str, str] = {}

    # -- the steps -----------------------------------------------------------------------------
    def run(self, emit: Emit) -> SnapshotResult:
        conn = myconn.connect(self.config, conv=myconn.row_decoders())
        started = time.monotonic()
        rows = 0
        workers: SnapshotWorkers | None = None
        try:
            info = myconn.server_info(conn)
            with conn.cursor() as cur:
                cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            databases = self._structure_databases(myconn.list_databases(conn))
            self._lock_globally(conn)                                                  # step 1
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")              # step 2
            tables = {db: myconn.list_tables(conn, db) for db in databases}
            signal = self.config.signal_table
            # the signal table is streamed (its rows are signals) but, as in Debezium, not snapshotted
            captured = [(db, t) for db in databases for t in tables[db] if self.schema.is_captured(db, t)
                        and (signal is None or (db, t) != (signal.schema, signal.table))]
            if self.lock_kind == "none" and self.config.snapshot_locking_mode != "none":
                self._lock_tables(conn, captured)                                      # 1.2.5 step 1
            status = myconn.binlog_status(conn, info)                                  # step 3
            ts_sec = int(time.time())
            position = {"file": status.file, "pos": status.pos, "server_id": info.server_id,
                        "gtids": status.gtids, "snapshot": True}
            self._read_schema(conn, info, databases, tables, position)                 # step 4
            # snapshot.max.threads: worker transactions begin before the lock goes
            workers = self._start_workers(conn, captured)
            if self.lock_kind == "global" and self.config.snapshot_locking_mode != "extended":
                self._unlock(conn)                                                     # step 5
            self._emit_schema_changes(emit, status, info)                              # step 6
            if self.with_data:
                rows = self.scan(conn, emit, captured, MySqlPosition(                  # step 7
                    file=status.file, pos=status.pos, server_id=info.server_id, snapshot=True), workers)
            conn.commit()                                                              # step 8
            if self.lock_kind != "none":
                self._unlock(conn)                                                     # 1.2.5 step 9
            offset = boundary_offset(status.file, status.pos, info.server_id, status.gtids, ts_sec)
            elapsed = time.monotonic() - started
            log.info("snapshot read %d rows from %d tables in %.1f s (%s lock); streaming starts at %s:%d",
                     rows, len(captured), elapsed, self.lock_used, status.file, status.pos)
            return SnapshotResult(offset=offset, rows=rows, tables=len(captured))
        finally:
            if workers is not None:
                workers.close()
            try:
                conn.rollback()
                if self.lock_kind != "none":
                    self._unlock(conn)
            except Exception:  # the connection may already be gone; the server drops its locks
                pass
            conn.close()

    def _start_workers(self, conn: Any, captured: list[tuple[str, str]]) -> SnapshotWorkers | None:
        """``snapshot.max.threads`` worker processes (snapshot_parallel.py) when they may be used: a
        lock holds writers back while they begin, nothing before the sink reads record values, and a
        captured table is large enough to be read in key ranges."""
        config = self.config
        if not self.with_data or self.lock_kind == "none" or self.selects or not parallel_allowed(config):
            return None
        factories = {(db, t): f for db, t in captured if (f := self.schema.factory(db, t)) is not None}
        with conn.cursor() as cur:
            large = False
            for db, table in factories:
                cur.execute("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                            "AND TABLE_NAME = %s", (db, table))
                row = cur.fetchone()
                large = large or bool(row and int(row[0] or 0) >= parallel.MIN_ROWS)
        return SnapshotWorkers(config, factories) if large else None

    def _structure_databases(self, names: list[str]) -> list[str]:
        """The databases whose tables' structure the snapshot reads into the schema history:
        Debezium's ``capturedSchemaTables`` -- every table of every database but the system ones
        (``mysql``, ``sys``, ``performance_schema``, ``information_schema``; all with
        ``table.ignore.builtin=false``) unless
        ``schema.history.internal.store.only.captured.tables.ddl`` (only the captured tables) or
        ``...captured.databases.ddl`` (only the captured databases) narrow it."""
        config = self.config
        if config.schema_history_internal_store_only_captured_tables_ddl or \
                config.schema_history_internal_store_only_captured_databases_ddl:
            return [d for d in names if self.schema.is_database_captured(d)]
        system = config.excluded_schemas if config.table_ignore_builtin else frozenset()
        return [d for d in names if d.lower() not in system]

    def _lock_globally(self, conn: Any) -> None:
        import pymysql

        mode = self.config.snapshot_locking_mode
        if mode == "none":
            return
        statement = "LOCK TABLES FOR BACKUP" if mode == "minimal_percona" else "FLUSH TABLES WITH READ LOCK"
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
            self.lock_kind = self.lock_used = "global"
            log.info("snapshot step 1: global read lock taken (%s)", statement)
        except (pymysql.err.OperationalError, pymysql.err.ProgrammingError) as exc:
            if exc.args and exc.args[0] in ER_ACCESS_DENIED_CODES:
                log.info("a global read lock is not allowed for this user (%s); using table-level locks",
                         exc.args[-1])
                return
            raise

    def _lock_tables(self, conn: Any, captured: list[tuple[str, str]]) -> None:
        import pymysql

        if not captured:
            return
        names = ", ".join(f"{myconn.quote(db)}.{myconn.quote(t)} READ" for db, t in captured)
        try:
            with conn.cursor() as cur:
                # LOCK TABLES would end a started transaction: run it inside one implicit
                # transaction (autocommit off) whose first read fixes the snapshot
                cur.execute("COMMIT")
                cur.execute("SET autocommit = 0")
                cur.execute(f"LOCK TABLES {names}")
            self.lock_kind = self.lock_used = "tables"
            log.info("snapshot step 1: table-level read locks taken on %d tables", len(captured))
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] in ER_ACCESS_DENIED_CODES:
                raise MySqlPrivilegeError(
                    "the snapshot needs a global read lock (RELOAD privilege) or the LOCK TABLES privilege "
                    "on the captured tables; grant one, or set snapshot.locking.mode=none"
                ) from None
            raise

    def _unlock(self, conn: Any) -> None:
        with conn.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        if self.lock_kind == "global":
            log.info("snapshot step 5: global read lock released")
        self.lock_kind = "none" if self.lock_kind == "global" else self.lock_kind

    def _read_schema(self, conn: Any, info: Any, databases: list[str], tables: dict[str, list[str]],
                     position: dict[str, Any]) -> None:
        where = f"{position['file']}:{position['pos']}"
        first = dict(position, snapshot_first=True)
        charset = info.character_set_server or "utf8mb4"
        self.schema.apply_ddl(f"SET character_set_server = {charset}", None, first, where)
        with conn.cursor() as cur:
            cur.execute("SELECT @@character_set_server, @@collation_server")
            server = cur.fetchone()
            cur.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME "
                        "FROM information_schema.SCHEMATA")
            locales = {str(row[0]): row[1:] for row in cur.fetchall()}
        # BinlogConnection.setStatementFor / DatabaseLocales.appendToDdlStatement's spellings
        self._charset_statement = f"SET character_set_server={server[0]}, collation_server={server[1]}"
        for db in databases:
            cs, coll = locales.get(db, (None, None))
            self._database_statements[db] = (f"CREATE DATABASE {myconn.quote(db)}" + (f" CHARSET {cs}" if cs else "")
                                             + (f" COLLATE {coll}" if coll else ""))
        for db in databases:
            db_charset = myconn.database_charset(conn, db)
            ddl = f"CREATE DATABASE IF NOT EXISTS {myconn.quote(db)}"
            if db_charset:
                ddl += f" CHARACTER SET {db_charset}"
            self.schema.apply_ddl(ddl, None, position, where)
            for table in tables[db]:
                ddl = myconn.show_create_table(conn, db, table)
                self._create_statements[(db, table)] = ddl
                self.schema.apply_ddl(ddl, db, position, where)

    def _emit_schema_changes(self, emit: Emit, status: Any, info: Any) -> None:
        from lakecdc.capture.mysql.ddl.parser import ParsedStatement, TableChange

        records = []
        ts_ms = int(time.time() * 1000)
        position = MySqlPosition(file=status.file, pos=status.pos, server_id=info.server_id, snapshot=True)

        def statement_record(db: str, table: str | None, ddl: str, changes: list[dict[str, Any]]) -> None:
            source = self.source.build(db=db, table=table, ts_ms=ts_ms, server_id=0, file=status.file,
                                       pos=status.pos, row=0, snapshot="true")
            records.append(schema_change_record(self.schema.namer.schema_change_topic, self.schema.change_key_schema,
                                                self.schema.change_value_schema, source, db, ddl, changes, position,
                                                self.schema.headers))

        # BinlogSnapshotChangeEventSource.readTableStructure: the server's character set, a DROP TABLE
        # IF EXISTS per table, then per database DROP DATABASE IF EXISTS, CREATE DATABASE, USE and
        # its CREATE TABLEs (the tables are not known yet when the DROPs are parsed: "table" is null)
        captured = self._schema_tables()
        if self.config.include_schema_changes and captured:
            statement_record("", None, self._charset_statement, [])
            for table in captured:
                db, name = table.id.database, table.id.table
                statement_record(db, name, f"DROP TABLE IF EXISTS {myconn.quote(db)}.{myconn.quote(name)}",
                                 [{"type": "DROP", "id": change_id(table.id, None), "table": None}])
        databases: set[str] = set()
        for table in captured:
            if self.config.include_schema_changes and table.id.database not in databases:
                databases.add(table.id.database)
                database, quoted = table.id.database, myconn.quote(table.id.database)
                statement_record(database, None, f"DROP DATABASE IF EXISTS {quoted}", [])
                statement_record(database, None,
                                 self._database_statements.get(database, f"CREATE DATABASE {quoted}"), [])
                statement_record(database, None, f"USE {quoted}", [])
            ddl = self._create_statements.get((table.id.database, table.id.table), "")
            statement = ParsedStatement("CREATE_TABLE", ddl, table.id.database,
                                        [TableChange("CREATE", table)])
            source = self.source.build(db=table.id.database, table=table.id.table, ts_ms=ts_ms,
                                       server_id=0, file=status.file, pos=status.pos, row=0, snapshot="true")
            position = MySqlPosition(file=status.file, pos=status.pos, server_id=info.server_id, snapshot=True)
            records += self.schema.schema_change_records(statement, source, position)
        if records:
            emit(records)

    def _schema_tables(self) -> list[Any]:
        """The tables whose structure the snapshot emits: every one it read (``_structure_databases``),
        or with ``schema.history.internal.store.only.captured.tables.ddl`` the captured ones."""
        if self.config.schema_history_internal_store_only_captured_tables_ddl:
            return self.schema.captured_tables()
        return [t for t in self.schema.tables if t.id.database in self._database_statements]

    def scan(self, conn: Any, emit: Emit, captured: list[tuple[str, str]], position: MySqlPosition,
             workers: SnapshotWorkers | None = None) -> int:
        """Step 7: one ``r`` record per row, at ``position`` (also a blocking snapshot's, read while
        streaming). Rows are fetched in blocks; every row of a table shares one source block and
        one position (they differ only for the first and last rows). ``workers`` read the large
        tables in key ranges."""
        import pymysql.cursors

        total = 0
        progress = _Progress(self.show_progress, conn, captured)
        build = self.source.build
        tables = [(db, t, self.schema.factory(db, t)) for db, t in captured]
        tables = [entry for entry in tables if entry[2] is not None]
        # source.server_id is 0 in the initial snapshot's events: Debezium's BinlogSourceInfo learns the
        # server id from binlog events only (a blocking snapshot, while streaming, has it)
        file, pos = position.file, position.pos
        server_id = 0 if position.snapshot else position.server_id or 0
        emit = hold = HoldLast(emit)
        try:
            for db, table, factory in tables:
                from_signal = self.selects.get(f"{db}.{table}")
                statement = from_signal or self.config.snapshot_select_statements.get(f"{db}.{table}") or \
                    f"SELECT * FROM {myconn.quote(db)}.{myconn.quote(table)}"
                ts_ms = int(time.time() * 1000)

                def source(marker: str, db: str = db, table: str = table, ts_ms: int = ts_ms) -> dict[str, Any]:
                    return build(db=db, table=table, ts_ms=ts_ms, server_id=server_id, file=file, pos=pos, row=0,
                                 snapshot=marker)

                middle = source("true")
                assert factory is not None  # every captured table has one
                read = factory.read
                parallel_rows = None
                if workers is not None and from_signal is None and f"{db}.{table}" not in \
                        self.config.snapshot_select_statements:
                    parallel_rows = workers.table_rows(conn, db, table, factory, middle, position)
                if parallel_rows is not None:
                    progress.table_started(db, table)
                    count = parallel.emit_table(emit, factory, parallel_rows, source, middle, position, total == 0,
                                               progress.advance, BATCH)
                    total += count
                    progress.table_done(db, table)
                    continue
                cur = conn.cursor(pymysql.cursors.SSCursor)
                table_rows = 0
                progress.table_started(db, table)
                try:
                    if from_signal is None:
                        cur.execute(statement)
                    else:
                        _execute_signal_select(cur, f"{db}.{table}", statement)
                    block = cur.fetchmany(BATCH)
                    while block:
                        following = cur.fetchmany(BATCH)
                        ts_ns = time.time_ns()
                        pending = [read(row, middle, position, ts_ns) for row in block]
                        if table_rows == 0:
                            first = total == 0
                            marker = snapshot_marker(True, first=first, first_in_table=True,
                                                     last_in_table=len(block) == 1 and not following)
                            pending[0] = read(block[0], source(marker), position, ts_ns)
                        if not following and (len(block) > 1 or table_rows > 0):
                            marker = snapshot_marker(True, last_in_table=True)
                            pending[-1] = read(block[-1], source(marker), position, ts_ns)
                        emit(pending)
                        table_rows += len(block)
                        total += len(block)
                        progress.advance(len(block))
                        block = following
                finally:
                    cur.close()
                progress.table_done(db, table)
            hold.finish()
        finally:
            progress.close()
        return total


def _execute_signal_select(cur: Any, table: str, statement: str) -> None:
    """A blocking snapshot's SELECT from its signal: a refusal names the table and the statement."""
    import pymysql

    try:
        cur.execute(statement)
    except pymysql.err.Error as exc:
        if myconn.is_connection_lost(exc) or isinstance(exc, pymysql.err.InterfaceError):
            raise
        raise BlockingSnapshotError(table, statement, str(exc.args[-1] if exc.args else exc)) from exc


class _Progress:
    """A rich progress bar on a terminal (table being read, rows read / estimated rows); silent
    otherwise. ``console`` is where it draws (default: rich's stderr console)."""

    def __init__(self, show: bool | None, conn: Any, captured: list[tuple[str, str]], console: Any = None) -> None:
        import sys

        self.bar = None
        if show is None:
            show = sys.stderr.isatty()
        if not show or not captured:
            return
        estimate = 0
        with conn.cursor() as cur:
            for db, table in captured:
                cur.execute("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
                            (db, table))
                row = cur.fetchone()
                estimate += int(row[0] or 0) if row else 0
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("snapshot {task.fields[table]}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), transient=True, console=console)
        self.task = self.bar.add_task("rows", total=max(estimate, 1), table="")
        self.bar.start()

    def table_started(self, db: str, table: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, table=f"{db}.{table}")

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def table_done(self, db: str, table: str) -> None:
        log.info("snapshot: table %s.%s done", db, table)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def schema_only_snapshot(config: Any, schema: DatabaseSchema, emit: Emit | None,
                         position: dict[str, Any] | None = None, show_progress: bool | None = None) -> dict[str, Any]:
    """Read the table structures only (``no_data``/``schema_only`` first start, ``recovery``).

    Without ``position``: locks, reads the binlog position and the structures, emits the schema
    change events, and returns the offset streaming starts from. With ``position`` (recovery): the
    current structures are recorded in the history as of that stored offset, nothing is emitted.
    """
    if position is None:
        source = MySqlSnapshotSource(config, schema, with_data=False, show_progress=show_progress)
        result = source.run(emit or (lambda records: None))
        return result.offset
    conn = myconn.connect(config)
    try:
        info = myconn.server_info(conn)
        databases = [d for d in myconn.list_databases(conn) if schema.is_database_captured(d)]
        tables = {db: myconn.list_tables(conn, db) for db in databases}
        record_at = {"file": position["file"], "pos": position["pos"], "server_id": info.server_id,
                     "gtids": position.get("gtids"), "snapshot": True}
        MySqlSnapshotSource(config, schema, with_data=False)._read_schema(conn, info, databases, tables, record_at)
        return position
    finally:
        conn.close()
