"""Incremental snapshots on PostgreSQL: the shared watermark algorithm (``capture/incremental.py``)
with PostgreSQL's SQL.

Chunks are read with ``COPY (SELECT ... WHERE (key) > (last) AND NOT (key) > (max) [AND (condition)]
ORDER BY key LIMIT n) TO STDOUT``: text values, the same converters as pgoutput, and the keys kept
as text (PostgreSQL reads an untyped literal as its column's type). Read events carry
``lsn``/``txId`` null and the close watermark's ``sequence``, as Debezium's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from lakecdc.capture.incremental import ChunkQueryError, IncrementalSnapshot
from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.connection import primary_key_columns
from lakecdc.capture.postgres.source_info import PostgresSourceBuilder
from lakecdc.capture.postgres.table_schema import TableSchema, TableSchemas, key_columns_for
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.topics import TableId


class PostgresIncrementalSnapshot(IncrementalSnapshot):
    def __init__(self, conn: Any, schemas: TableSchemas, config: PostgresConnectorConfig,
                 source: PostgresSourceBuilder, headers: list[tuple[str, bytes]], signal_table: TableId) -> None:
        super().__init__(config.incremental_snapshot_chunk_size, signal_table)
        self._conn = conn
        self._schemas = schemas
        self._config = config
        self._source = source
        self._headers = headers

    def captured_tables(self) -> list[str]:
        return [str(t) for t in pgconn.captured_tables(self._conn, self._config) if t != self._signal_table]

    def table_schema(self, table: TableId) -> TableSchema:
        return self._schemas.for_table(table, snapshot=True)

    def primary_key(self, table: TableId, schema: TableSchema) -> list[str]:
        return key_columns_for(self._config, table, primary_key_columns(self._conn, table))

    def query_max_key(self) -> list[Any] | None:
        assert self._table is not None
        columns = self._chunk_columns
        order = sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(c)) for c in columns)
        query = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT 1").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in columns), pgconn.quoted(self._table), self._where([]), order)
        found = self._copy(query)
        return list(found[0]) if found else None

    def query_chunk(self) -> list[tuple[Any, ...]]:
        assert self._table is not None and self.max_key is not None
        keys = self._row(self._chunk_columns)
        bounds = [sql.SQL("NOT ({} > {})").format(keys, self._row_literal(self.max_key))]
        if self.last_key is not None:
            bounds.insert(0, sql.SQL("{} > {}").format(keys, self._row_literal(self.last_key)))
        query = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in self._schema.column_names), pgconn.quoted(self._table),
            self._where(bounds), sql.SQL(", ").join(sql.Identifier(c) for c in self._chunk_columns),
            sql.Literal(self._chunk_size))
        return self._copy(query)

    def read_record(self, key: dict[str, Any] | None, values: tuple[Any, ...], position: Any) -> ChangeRecord:
        schema, table = self._schema, self._table
        assert table is not None and isinstance(position, PostgresPosition)
        commit = position.commit_lsn
        now = time.time_ns()
        source = self._source.build(schema=table.schema or "public", table=table.table, ts_us=now // 1000,
                                    lsn=None, last_commit_lsn=None, tx_id=None, snapshot="incremental")
        source["sequence"] = f'[{"null" if commit is None else json.dumps(str(commit))},"{position.lsn}"]'
        value = {"before": None, "after": schema.row(values), "source": source, "transaction": None, "op": "r",
                 "ts_ms": now // 1_000_000, "ts_us": now // 1000, "ts_ns": now}
        return ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value, self._headers, position)

    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        self._conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(pgconn.quoted(self.signal_table())),
                           (watermark_id, kind, data))

    def _where(self, bounds: Sequence[sql.Composable]) -> sql.Composable:
        condition = self.condition()
        parts = list(bounds) + ([sql.SQL("({})").format(sql.SQL(condition))] if condition else [])
        return sql.SQL(" WHERE ").join([sql.SQL(""), sql.SQL(" AND ").join(parts)]) if parts else sql.SQL("")

    @staticmethod
    def _row(columns: list[str]) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in columns))

    @staticmethod
    def _row_literal(values: list[Any]) -> sql.Composable:
        # untyped text literals: PostgreSQL reads each as its column's type, so the order is the column's
        return sql.SQL("({})").format(sql.SQL(", ").join(sql.Literal(v) for v in values))

    def _copy(self, query: sql.Composable) -> list[tuple[Any, ...]]:
        try:
            with self._conn.cursor() as cur:
                with cur.copy(sql.SQL("COPY ({}) TO STDOUT").format(query)) as copy:
                    return list(copy.rows())
        except psycopg.OperationalError:
            raise  # connection lost: streaming reconnects and resumes from the offset
        except psycopg.Error as exc:
            raise ChunkQueryError(str(exc)) from exc
