"""Incremental snapshots on Oracle: the shared watermark algorithm (``capture/incremental.py``) with
Oracle's SQL, as Debezium's Oracle connector runs it.

The signal table (``signal.data.collection`` = ``<database>.<schema>.<table>``, e.g.
``ORCLPDB1.DEBEZIUM.DEBEZIUM_SIGNAL``) is captured: the watermark rows written here come back
through LogMiner at their COMMIT, in commit order with the captured tables' transactions, and a
change of the chunk's table committed between the open and the close row removes the buffered row
with its key. Statements (``capture/chunk_query.py`` in Oracle's dialect, python-oracledb's
positional binds ``:1``, ``:2``...)::

    SELECT "K1", "K2" FROM "S"."T" [WHERE (condition)] ORDER BY "K1" DESC, "K2" DESC FETCH FIRST 1 ROWS ONLY
    SELECT <select list> FROM "S"."T"
        WHERE (("K1" > :1) OR ("K1" = :2 AND "K2" > :3)) AND (NOT (<same, max key>)) [AND (condition)]
        ORDER BY "K1", "K2" FETCH FIRST <chunk> ROWS ONLY
    INSERT INTO "S"."SIGNAL" (ID, TYPE, DATA) VALUES (:1, :2, :3)          committed at once

They run on a connection of their own, in the PDB (the mining connection stays in CDB$ROOT with
its LogMiner session). The select list is the snapshot's (``snapshot.select_list``), so values
convert as in the initial snapshot. Read events carry the close watermark's SCN and commit SCN and
``snapshot: "incremental"``; ids in ``data-collections`` are ``<database>.<schema>.<table>``
regexes (Debezium's Oracle table ids, the database being ``database.pdb.name`` or
``database.dbname``).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.chunk_query import DATETIME_TEXT, ChunkDialect, SqlChunkSnapshot
from lakecdc.capture.incremental import ChunkQueryError
from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.change_records import RecordFactory
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.errors import OracleConnectionLostError
from lakecdc.capture.oracle.snapshot import select_list
from lakecdc.capture.oracle.table_schema import TableSchema
from lakecdc.capture.oracle.types import TIMESTAMP_FORMAT, needs_text_select
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import OraclePosition
from lakecdc.events.source import OracleSourceBuilder
from lakecdc.events.topics import TableId

_MARKER = re.compile(r"%s")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


DATE_FORMAT = "YYYY-MM-DD HH24:MI:SS"  #: the session's NLS_DATE_FORMAT (``connection.NLS_SETUP``)


def _temporal(col: ColumnInfo) -> tuple[str, str] | None:
    """``(conversion function, format)`` of a DATE or TIMESTAMP key column, else None."""
    if col.data_type.upper() == "DATE":
        return "TO_DATE", DATE_FORMAT
    if needs_text_select(col) == TIMESTAMP_FORMAT:
        return "TO_TIMESTAMP", TIMESTAMP_FORMAT
    return None


class OracleDialect(ChunkDialect):
    """Double-quoted identifiers, ``FETCH FIRST n ROWS ONLY``, positional binds ``:1``, ``:2``...;
    nothing is %-interpolated, so the user's condition stays as written.

    DATE and TIMESTAMP keys are bound as text in the snapshot's formats through ``TO_DATE`` /
    ``TO_TIMESTAMP``: python-oracledb binds a ``datetime`` as DATE (a TIMESTAMP bound loses its
    fraction) and reads a TIMESTAMP into a ``datetime`` (nanoseconds lost), either of which would
    end a chunk or the snapshot short of rows. The maximum key is read as the chunk query reads
    the column (TIMESTAMP as ``TO_CHAR`` text), and keys kept in the offset are that text."""

    def __init__(self, table: TableSchema | None = None) -> None:
        self._temporal = {c.name: t for c in table.columns if (t := _temporal(c))} if table is not None else {}

    def quote(self, name: str) -> str:
        return quote(name)

    def limited(self, select: str, rest: str, rows: int) -> str:
        return f"SELECT {select} {rest} FETCH FIRST {rows} ROWS ONLY"

    def key_column(self, name: str) -> str:
        temporal = self._temporal.get(name)
        if temporal is None or temporal[1] == DATE_FORMAT:  # DATE has no fraction: read as it is
            return quote(name)
        return f"TO_CHAR({quote(name)}, '{temporal[1]}') AS {quote(name)}"

    def marker(self, name: str) -> str:
        temporal = self._temporal.get(name)
        return f"{temporal[0]}(%s, '{temporal[1]}')" if temporal else "%s"

    def param(self, name: str, value: Any) -> Any:
        temporal = self._temporal.get(name)
        if temporal is None:
            return value
        if isinstance(value, dt.datetime):  # a DATE read from the table
            seconds, fraction = value.strftime("%Y-%m-%d %H:%M:%S"), f"{value.microsecond:06d}"
        else:  # the TO_CHAR text, or a key restored from the offset (also an older str(datetime))
            m = DATETIME_TEXT.fullmatch(str(value).strip())
            if m is None:
                return value  # the database names what it cannot convert; the table is skipped
            seconds, fraction = f"{m.group(1)} {m.group(2)}", m.group(3) or ""
        return seconds if temporal[1] == DATE_FORMAT else f"{seconds}.{fraction.ljust(9, '0')}"

    def numbered(self, text: str) -> str:
        counter = iter(range(1, 10_000))
        return _MARKER.sub(lambda _: f":{next(counter)}", text)

    def condition(self, text: str, with_params: bool) -> str:
        return text


@dataclass(frozen=True)
class ChunkSchema:
    """A table's event structure seen as the shared algorithm reads it: the chunk query's column
    names and the key of a row tuple."""

    table: TableSchema

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.table.columns]

    def key(self, values: tuple[Any, ...]) -> dict[str, Any] | None:
        return self.table.key(self.table.row_from_tuple(self.column_names, values))


class OracleIncrementalSnapshot(SqlChunkSnapshot):
    dialect = OracleDialect()

    def __init__(self, config: OracleConnectorConfig, schemas: Any, source: OracleSourceBuilder,
                 headers: list[tuple[str, bytes]]) -> None:
        assert config.signal_table is not None
        super().__init__(config.incremental_snapshot_chunk_size, config.signal_table)
        self._config = config
        self._schemas = schemas  #: OracleDatabaseSchema of the streaming source
        self._source = source
        self._headers = headers
        self._conn: oraconn.OracleConnection | None = None

    def captured_tables(self) -> list[str]:
        signal_table = self.signal_table()
        signal = (signal_table.schema, signal_table.table)
        db = self._config.source_db
        return [f"{db}.{o}.{t}" for o, t in self._connection().list_tables()
                if (o, t) != signal and self._schemas.is_captured(o, t)]

    def table_schema(self, table: TableId) -> ChunkSchema:
        return ChunkSchema(self._schemas.get(table.schema or "", table.table))

    def primary_key(self, table: TableId, schema: ChunkSchema) -> list[str]:
        return list(schema.table.key_names)

    def read_record(self, key: dict[str, Any] | None, values: tuple[Any, ...], position: Any) -> ChangeRecord:
        assert isinstance(position, OraclePosition) and self._schema is not None
        schema = self._schema.table
        source = self._source.build(db=self._config.source_db, schema=schema.owner, table=schema.table,
                                    ts_ms=int(time.time() * 1000), scn=position.scn,
                                    commit_scn=position.commit_scn, snapshot="incremental", ssn=None)
        row = schema.row_from_tuple(self._schema.column_names, values)
        factory = RecordFactory(schema, self._config.tombstones_on_delete, self._headers)
        return factory.read(row, source, OraclePosition(scn=position.scn, commit_scn=position.commit_scn),
                            time.time_ns())

    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        signal = self.signal_table()
        table = f"{quote(signal.schema or '')}.{quote(signal.table)}"
        self._run(f"INSERT INTO {table} (ID, TYPE, DATA) VALUES (:1, :2, :3)", [watermark_id, kind, data],
                  fetch=False)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- SQL ---------------------------------------------------------------------------------
    def _connection(self) -> oraconn.OracleConnection:
        if self._conn is None:
            self._conn = oraconn.connect(self._config)
            self._conn.use_pdb()
        return self._conn

    def chunk_dialect(self) -> ChunkDialect:
        return OracleDialect(self._schema.table) if self._schema is not None else self.dialect

    def select_list(self) -> str:
        assert self._schema is not None
        return select_list(self._schema.table)

    def run_query(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._run(statement, list(params), fetch=True)

    def _run(self, statement: str, params: list[Any], fetch: bool) -> list[tuple[Any, ...]]:
        import oracledb

        try:
            conn = self._connection()
            cur = conn.raw.cursor()
            try:
                cur.execute(statement, params)
                rows = [tuple(r) for r in cur.fetchall()] if fetch else []
            finally:
                cur.close()
            conn.raw.commit()  # a watermark reaches the redo (and LogMiner) once committed
            return rows
        except oracledb.Error as exc:
            if isinstance(exc, oracledb.InterfaceError) or isinstance(oraconn.translated(exc),
                                                                       OracleConnectionLostError):
                self.close()
                raise OracleConnectionLostError(f"the connection for incremental snapshots was lost: {exc}") from exc
            # e.g. ORA-00904 from an additional condition naming an unknown column: the table is skipped
            raise ChunkQueryError(str(exc)) from exc
