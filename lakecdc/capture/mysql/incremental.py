"""Incremental snapshots on MySQL/MariaDB: the shared watermark algorithm (``capture/incremental.py``)
with MySQL's SQL, as Debezium's MySQL connector runs it with a writable signal table.

A chunk is ``SELECT <columns> FROM db.t WHERE <after last key> AND NOT <after max key> [AND (condition)]
ORDER BY <key> LIMIT n`` on an autocommit connection (the statements of ``capture/chunk_query.py``
in MySQL's dialect). The watermark rows are inserted into ``signal.data.collection``
(``<database>.<table>``) on the same connection and come back through the binlog (with
``read.only=true``, ``read_only.py`` bounds the windows with GTID sets instead and writes nothing).

Read events carry the close watermark's (read-only: the closing transaction's) binlog coordinates
(``file``, ``pos``, ``row``, ``gtid``) in ``source``, with the snapshotted table's ``db``/``table``,
``snapshot: "incremental"`` and the time of emission. Keys are stored in the offset as JSON values: a
binary (``BINARY``/``VARBINARY``/``BLOB``) key column is not supported across a restart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from lakecdc.capture.chunk_query import ChunkDialect, SqlChunkSnapshot
from lakecdc.capture.incremental import ChunkQueryError
from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.errors import MySqlConnectionLostError
from lakecdc.capture.mysql.table_schema import TableSchema
from lakecdc.events.envelope import ChangeRecord, envelope_payload
from lakecdc.events.positions import MySqlPosition
from lakecdc.events.source import BinlogSourceBuilder
from lakecdc.events.topics import TableId


class MySqlDialect(ChunkDialect):
    """Backquoted identifiers, ``LIMIT``; PyMySQL %-interpolates every statement."""

    def quote(self, name: str) -> str:
        return myconn.quote(name)


class MySqlIncrementalSnapshot(SqlChunkSnapshot):
    dialect = MySqlDialect()

    def __init__(self, conn: Any, schema: DatabaseSchema, config: Any, source: BinlogSourceBuilder,
                 signal_table: TableId | None) -> None:
        super().__init__(config.incremental_snapshot_chunk_size, signal_table)
        self._conn = conn
        self._database_schema = schema
        self._source = source

    def captured_tables(self) -> list[str]:
        table = self._signal_table
        signal = (table.schema, table.table) if table is not None else None
        return [f"{t.id.database}.{t.id.table}" for t in self._database_schema.captured_tables()
                if (t.id.database, t.id.table) != signal]

    def table_schema(self, table: TableId) -> TableSchema:
        factory = self._database_schema.factory(table.schema or "", table.table)
        if factory is None:
            raise LookupError(f"table {table} is not captured or its structure is unknown")
        return factory.schema

    def primary_key(self, table: TableId, schema: TableSchema) -> list[str]:
        return [name for name, _ in schema.key_columns]

    def read_record(self, key: dict[str, Any] | None, values: tuple[Any, ...], position: Any) -> ChangeRecord:
        schema, table = self._schema, self._table
        assert table is not None and isinstance(position, MySqlPosition)
        now = time.time_ns()
        source = self._source.build(db=table.schema or "", table=table.table, ts_ms=now // 1_000_000,
                                    server_id=position.server_id or 0, file=position.file, pos=position.pos,
                                    row=position.row, gtid=position.gtid, snapshot="incremental",
                                    ts_us=now // 1000)
        return ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope_schema,
                            envelope_payload("r", None, schema.row(values), source, now),
                            self._database_schema.headers, position)

    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        signal = self._signal_table
        assert signal is not None, "watermarks are written only when a signal table is configured"
        table = f"{myconn.quote(signal.schema or '')}.{myconn.quote(signal.table)}"
        self.run_query(f"INSERT INTO {table} VALUES (%s, %s, %s)", (watermark_id, kind, data))

    # -- SQL ---------------------------------------------------------------------------------
    def run_query(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        import pymysql

        try:
            with self._conn.cursor() as cur:
                cur.execute(statement, tuple(params))
                return list(cur.fetchall())
        except pymysql.err.Error as exc:
            if myconn.is_connection_lost(exc) or isinstance(exc, pymysql.err.InterfaceError):
                raise MySqlConnectionLostError(f"the connection for incremental snapshots was lost: {exc}") from exc
            raise ChunkQueryError(str(exc.args[-1] if exc.args else exc)) from exc
        except OSError as exc:
            raise MySqlConnectionLostError(f"the connection for incremental snapshots was lost: {exc}") from exc

