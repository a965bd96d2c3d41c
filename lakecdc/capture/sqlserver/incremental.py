"""Incremental snapshots on SQL Server: the shared watermark algorithm (``capture/incremental.py``)
with SQL Server's SQL, as Debezium's SQL Server connector runs it.

The signal table (``signal.data.collection`` = ``<database>.<schema>.<table>``) must be CDC-enabled:
the watermark rows written here come back through its change table, merged in commit order with
the captured tables' changes, and a change of the chunk's table between the open and the close
row removes the buffered row with its key. Statements (``capture/chunk_query.py`` in SQL Server's
dialect, pymssql's ``%s`` markers)::

    SELECT TOP 1 [k1], [k2] FROM [db].[s].[t] [WHERE (condition)] ORDER BY [k1] DESC, [k2] DESC
    SELECT TOP <chunk> <captured columns> FROM [db].[s].[t]
        WHERE ([k1] > %s) OR ([k1] = %s AND [k2] > %s) AND NOT (<same, max key>) [AND (condition)]
        ORDER BY [k1], [k2]
    INSERT INTO [db].[s].[signal] VALUES (%s, %s, %s)                       committed at once

They run on a connection of their own (pymssql has one active result set per connection; the
streaming connection holds the change-table cursors while a watermark is handled). Read events
carry the close watermark's ``commit_lsn``/``change_lsn``/``event_serial_no`` and
``snapshot: "incremental"``; ids in ``data-collections`` are ``<database>.<schema>.<table>``
regexes, as Debezium's SQL Server table ids.

A ``datetime2`` key is bound as its text to the microsecond (pymssql writes a ``datetime`` to the
millisecond). pymssql reads no seventh fractional digit: a ``datetime2(7)`` key whose seventh digit
is not 0 cannot bound a chunk exactly (its row may be read twice, or missed as the maximum key).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import Any

from lakecdc.capture.chunk_query import DATETIME_TEXT, ChunkDialect, SqlChunkSnapshot
from lakecdc.capture.incremental import ChunkQueryError
from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.connection import ColumnDef
from lakecdc.capture.sqlserver.database_schema import DatabaseSchema
from lakecdc.capture.sqlserver.errors import SqlServerConnectionLostError
from lakecdc.capture.sqlserver.table_schema import InstanceSchema, with_headers
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import SqlServerPosition
from lakecdc.events.source import SqlServerSourceBuilder
from lakecdc.events.topics import TableId


class SqlServerDialect(ChunkDialect):
    """Bracketed identifiers, ``TOP n``; pymssql %-interpolates a statement only when it has parameters.

    pymssql writes a ``datetime`` parameter to the millisecond (``datetime``'s precision): a
    ``datetime2`` key is bound as its text to the microsecond instead, which SQL Server converts to
    the column's type, so that a chunk neither repeats nor skips rows of one millisecond. A
    ``datetime`` / ``smalldatetime`` key restored from the offset (``str`` of the value, six
    fractional digits, which those types do not convert) is cut back to milliseconds."""

    def __init__(self, columns: Sequence[ColumnDef] = ()) -> None:
        self._types = {c.name: c.type_name for c in columns}

    def quote(self, name: str) -> str:
        return sq.quote(name)

    def limited(self, select: str, rest: str, rows: int) -> str:
        return f"SELECT TOP {rows} {select} {rest}"

    def param(self, name: str, value: Any) -> Any:
        kind = self._types.get(name)
        if kind == "datetime2" and isinstance(value, dt.datetime):
            return value.isoformat(sep=" ", timespec="microseconds")
        if kind in ("datetime", "smalldatetime") and isinstance(value, str):
            m = DATETIME_TEXT.fullmatch(value.strip())
            if m is not None:
                return f"{m.group(1)} {m.group(2)}.{(m.group(3) or '').ljust(3, '0')[:3]}"
        return value

    def condition(self, text: str, with_params: bool) -> str:
        return text.replace("%", "%%") if with_params else text


class SqlServerIncrementalSnapshot(SqlChunkSnapshot):
    dialect = SqlServerDialect()

    def __init__(self, connect: Callable[[], Any], schema: DatabaseSchema, config: Any,
                 source: SqlServerSourceBuilder, headers: list[tuple[str, bytes]]) -> None:
        super().__init__(config.incremental_snapshot_chunk_size, config.signal_table)
        self._connect = connect
        self._conn: Any = None
        self._database_schema = schema
        self._source = source
        self._headers = headers

    def captured_tables(self) -> list[str]:
        signal_table = self.signal_table()
        signal = (signal_table.schema, signal_table.table)
        db = self._database_schema.database
        return [f"{db}.{s}.{t}" for s, t in self._database_schema.tables() if (s, t) != signal]

    def table_schema(self, table: TableId) -> InstanceSchema:
        instances = self._database_schema.instances.get((table.schema or "", table.table))
        if not instances:
            raise LookupError(f"table {table} is not captured")
        return self._database_schema.schema(instances[-1])  # the current capture instance

    def primary_key(self, table: TableId, schema: InstanceSchema) -> list[str]:
        return list(self._database_schema.primary_key(schema.instance)) or list(schema.instance.index_columns)

    def read_record(self, key: dict[str, Any] | None, values: tuple[Any, ...], position: Any) -> ChangeRecord:
        schema = self._schema
        assert isinstance(position, SqlServerPosition) and schema is not None
        inst = schema.instance
        source = self._source.build(db=self._database_schema.database, schema=inst.source_schema,
                                    table=inst.source_table, ts_ms=int(time.time() * 1000),
                                    commit_lsn=sq.lsn_text(position.commit_lsn),
                                    change_lsn=sq.lsn_text(position.change_lsn),
                                    event_serial_no=position.event_serial_no, snapshot="incremental")
        record = self._database_schema.factory(inst).read(values, source, position, time.time_ns())
        return with_headers([record], self._headers)[0]

    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        signal = self.signal_table()
        table = ".".join(sq.quote(p) for p in (self._database_schema.database, signal.schema or "dbo", signal.table))
        self._run(f"INSERT INTO {table} VALUES (%s, %s, %s)", (watermark_id, kind, data), fetch=False)

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already gone with the server
                pass
            self._conn = None

    # -- SQL ---------------------------------------------------------------------------------
    def chunk_dialect(self) -> ChunkDialect:
        return SqlServerDialect(self._schema.columns) if self._schema is not None else self.dialect

    def chunk_table(self) -> tuple[str, str, str]:
        assert self._table is not None
        return self._database_schema.database, self._table.schema or "dbo", self._table.table

    def run_query(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._run(statement, tuple(params) if params else None, fetch=True)

    def _run(self, statement: str, params: tuple[Any, ...] | None, fetch: bool) -> list[tuple[Any, ...]]:
        import pymssql

        try:
            if self._conn is None:
                self._conn = self._connect()
            cur = self._conn.cursor()
            try:
                cur.execute(statement, params)
                rows = list(cur.fetchall()) if fetch else []
            finally:
                cur.close()
            self._conn.commit()  # a watermark is visible to CDC once committed; a read ends its transaction
            return rows
        except (pymssql.ProgrammingError, pymssql.DataError, pymssql.IntegrityError) as exc:
            # e.g. an additional condition naming an unknown column: the table is skipped
            raise ChunkQueryError(str(exc)) from exc
        except (pymssql.OperationalError, pymssql.InterfaceError, OSError) as exc:
            self.close()
            raise SqlServerConnectionLostError(f"the connection for incremental snapshots was lost: {exc}") from exc

