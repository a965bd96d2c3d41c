"""Incremental (ad hoc) snapshots: Debezium's watermark algorithm (DBLog), run inside streaming.

``execute-snapshot`` (``type: incremental``) queues tables; each is read in chunks of
``incremental.snapshot.chunk.size`` rows ordered by primary key (or ``surrogate-key``), from the
first key up to the table's maximum key read when the table starts. Per chunk:

1. insert ``<uuid>-open`` (``snapshot-window-open``) into the signal table (autocommit);
2. read the chunk: ``SELECT ... WHERE (key) > (last) AND NOT (key) > (max) [AND (condition)]
   ORDER BY key LIMIT n``; its rows go to a buffer keyed by the record key;
3. insert ``<uuid>-close`` (``snapshot-window-close``).

Streaming meets the two watermark rows in the WAL. Between them (the window) a streamed change of
the chunk's table removes the buffered row with the same key: the change is newer than, or as
new as, the chunk's read. At the close watermark the remaining rows are emitted as ``op "r"``
events with ``source.snapshot = "incremental"`` (before the close row's own event, as Debezium),
and the next chunk is read. A chunk that returns no row finishes its table (Debezium reads until
an empty chunk, so the last window of a table is empty).

The progress is kept in the streaming offset under Debezium's keys: ``incremental_snapshot_collections``
(the queue, Debezium's JSON), ``incremental_snapshot_primary_key`` (last key emitted),
``incremental_snapshot_maximum_key`` and ``incremental_snapshot_correlation_id``. Debezium stores the
two keys as hex Java serialization; lakecdc stores JSON lists of the keys' text values (an offset
Debezium wrote mid-snapshot restarts that table from its first chunk). After a restart the
snapshot goes on with a new window from the last emitted key: a chunk in flight is read again,
nothing emitted is lost.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg import sql

from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.connection import primary_key_columns
from lakecdc.capture.postgres.table_schema import TableSchema, TableSchemas, key_columns_for
from lakecdc.capture.signals import Signal, parse_table_id
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.source import PostgresSourceBuilder
from lakecdc.events.topics import TableId

log = logging.getLogger(__name__)

OPEN, CLOSE = "snapshot-window-open", "snapshot-window-close"
K_COLLECTIONS = "incremental_snapshot_collections"
K_PRIMARY_KEY = "incremental_snapshot_primary_key"
K_MAXIMUM_KEY = "incremental_snapshot_maximum_key"
K_CORRELATION = "incremental_snapshot_correlation_id"
OFFSET_KEYS = (K_COLLECTIONS, K_PRIMARY_KEY, K_MAXIMUM_KEY, K_CORRELATION)


@dataclass
class Collection:
    id: str  #: "<schema>.<table>"
    condition: str | None = None
    surrogate_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"incremental_snapshot_collections_id": self.id,
                "incremental_snapshot_collections_additional_condition": self.condition,
                "incremental_snapshot_collections_surrogate_key": self.surrogate_key}


def _instant() -> str:
    """Java ``Instant.toString()`` of now (nanosecond digits), as Debezium writes watermarks."""
    ns = time.time_ns()
    base = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns % 1_000_000_000:09d}Z"


class IncrementalSnapshot:
    def __init__(self, conn: Any, schemas: TableSchemas, config: PostgresConnectorConfig,
                 source: PostgresSourceBuilder, headers: list[tuple[str, bytes]], signal_table: TableId) -> None:
        self._conn = conn
        self._schemas = schemas
        self._config = config
        self._source = source
        self._headers = headers
        self._signal_table = signal_table
        self._chunk_size = config.incremental_snapshot_chunk_size
        self.collections: list[Collection] = []
        self.correlation_id: str | None = None
        self.last_key: list[Any] | None = None  #: chunk-key text values of the last row emitted
        self.max_key: list[Any] | None = None
        self.paused = False
        self.window_open = False
        self._chunk_id: str | None = None  #: window written, its close not yet streamed
        self._open_ts = ""
        self._chunk_last_key: list[Any] | None = None
        self._table: TableId | None = None  #: table of the buffered chunk
        self._schema: TableSchema | None = None
        self._chunk_columns: list[str] = []
        self._buffer: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {}

    @property
    def running(self) -> bool:
        return bool(self.collections)

    # -- actions ----------------------------------------------------------------------------
    def execute(self, signal: Signal) -> None:
        data = signal.data
        requested = data.get("data-collections")
        if not isinstance(requested, list) or not requested:
            log.warning("signal '%s': execute-snapshot without data-collections; nothing to snapshot", signal.id)
            return
        conditions = self._conditions(data)
        surrogate = data.get("surrogate-key") or None
        added: list[Collection] = []
        for table in self.expand(signal):
            if any(c.id == table for c in self.collections + added):
                continue
            condition = next((c for p, c in conditions if p.fullmatch(table)), None)
            added.append(Collection(table, condition, surrogate))
        log.info("Requested 'INCREMENTAL' snapshot of data collections %s with additional conditions %s and "
                 "surrogate key '%s' (signal '%s')", [c.id for c in added],
                 {c.id: c.condition for c in added if c.condition}, surrogate or "PK of table will be used", signal.id)
        if not added:
            return
        was_running = self.running
        self.collections.extend(added)
        if not was_running:
            self.correlation_id = signal.id
            self.read_chunk()

    def expand(self, signal: Signal) -> list[str]:
        """The captured tables (``schema.table``) that ``data-collections`` regexes name, in order."""
        captured = [t for t in pgconn.captured_tables(self._conn, self._config) if t != self._signal_table]
        out: list[str] = []
        for pattern in signal.data.get("data-collections") or []:
            regex = _compile(str(pattern))
            matched = [str(t) for t in captured if regex.fullmatch(str(t))]
            if not matched:
                log.warning("signal '%s': no captured table matches '%s'; known tables %s", signal.id, pattern,
                            [str(t) for t in captured])
            out.extend(t for t in matched if t not in out)
        return out

    @staticmethod
    def _conditions(data: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
        """``additional-conditions`` ([{"data-collection": regex, "filter": sql}]), or the older
        ``additional-condition`` string for every requested table."""
        out: list[tuple[re.Pattern[str], str]] = []
        for entry in data.get("additional-conditions") or []:
            if isinstance(entry, dict) and entry.get("data-collection") and entry.get("filter"):
                out.append((_compile(str(entry["data-collection"])), str(entry["filter"])))
        legacy = data.get("additional-condition")
        if legacy:
            out.append((re.compile(".*"), str(legacy)))
        return out

    def stop(self, signal: Signal) -> None:
        data = signal.data
        if str(data.get("type") or "").lower() != "incremental":
            log.warning("signal '%s': stop-snapshot needs \"type\": \"incremental\"; ignored", signal.id)
            return
        names = data.get("data-collections")
        if not names:
            log.info("stopping the incremental snapshot (signal '%s')", signal.id)
            self.collections.clear()
            self._reset_table()
            return
        patterns = [_compile(str(n)) for n in names]
        removed = [c.id for c in self.collections if any(p.fullmatch(c.id) for p in patterns)]
        log.info("removing %s from the incremental snapshot (signal '%s')", removed, signal.id)
        if self.collections and self.collections[0].id in removed:
            self._reset_table()
        self.collections = [c for c in self.collections if c.id not in removed]

    def pause(self, signal: Signal) -> None:
        log.info("incremental snapshot paused (signal '%s')", signal.id)
        self.paused = True

    def resume(self, signal: Signal) -> None:
        log.info("incremental snapshot resumed (signal '%s')", signal.id)
        self.paused = False
        if self._chunk_id is None:
            self.read_chunk()

    # -- streaming hooks ----------------------------------------------------------------------
    def on_watermark(self, kind: str, watermark_id: str, position: PostgresPosition, out: list[Any]) -> None:
        """A window row of the signal table met in the WAL (before its own event is emitted)."""
        if self._chunk_id is None or not watermark_id.startswith(self._chunk_id):
            log.info("watermark '%s' is not the expected window (%s); ignored", watermark_id, self._chunk_id)
            return
        if kind == OPEN:
            self.window_open = True
            return
        self.window_open = False
        self._chunk_id = None
        self._emit_window(position, out)
        if self.paused:
            log.info("incremental snapshot is paused; the next chunk waits for resume-snapshot")
            return
        self.read_chunk()

    def seen(self, table: TableId, key: dict[str, Any] | None) -> None:
        """A streamed change while the window is open supersedes the buffered row with its key."""
        if table == self._table and key is not None:
            self._buffer.pop(_key_text(key), None)

    def start(self) -> None:
        """After (re)connecting: a snapshot restored from the offset continues with a new window."""
        if self.running and not self.paused:
            log.info("incremental snapshot in progress (%s); reading the next chunk", [c.id for c in self.collections])
            self.read_chunk()

    # -- chunks ------------------------------------------------------------------------------
    def read_chunk(self) -> None:
        if not self.running:
            log.info("Skipping read chunk because snapshot is not running")
            return
        self._chunk_id = str(uuid.uuid4())
        self._open_ts = _instant()
        self._watermark(f"{self._chunk_id}-open", OPEN, {"openWindowTimestamp": self._open_ts})
        while self.running:
            try:
                # the table's shape is read again per chunk: a column dropped meanwhile must not
                # break the chunk query (schema changes during a snapshot are unsupported, as in Debezium)
                if not self._start_table():
                    self._next_table()
                    continue
                rows = self._read_rows()
            except psycopg.OperationalError:
                raise  # connection lost: streaming reconnects and resumes from the offset
            except psycopg.Error as exc:  # e.g. an additional condition that is not valid SQL
                log.error("incremental snapshot of table '%s' failed and is skipped: %s", self.collections[0].id,
                          str(exc).strip())
                self._next_table()
                continue
            if rows:
                self._fill_buffer(rows)
                break
            log.info("No data returned by the query, incremental snapshotting of table '%s' finished",
                     self.collections[0].id)
            self._next_table()
        if not self.running:
            log.info("incremental snapshot completed")
        self._watermark(f"{self._chunk_id}-close", CLOSE,
                        {"openWindowTimestamp": self._open_ts, "closeWindowTimestamp": _instant()})

    def _start_table(self) -> bool:
        current = self.collections[0]
        table = parse_table_id(current.id)
        self._reset_table(keep_keys=True)
        try:
            schema = self._schemas.for_table(table, snapshot=True)
        except Exception as exc:  # dropped since the signal: skip it, as Debezium does
            log.warning("incremental snapshot of '%s' skipped: %s", current.id, exc)
            return False
        columns = [current.surrogate_key] if current.surrogate_key else key_columns_for(
            self._config, table, primary_key_columns(self._conn, table))
        if not columns or any(c not in schema.column_names for c in columns):
            log.warning("Incremental snapshot for table '%s' skipped cause the table has no primary keys", current.id)
            return False
        self._table, self._schema, self._chunk_columns = table, schema, columns
        if self.max_key is None:
            order = sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(c)) for c in columns)
            query = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT 1").format(
                sql.SQL(", ").join(sql.Identifier(c) for c in columns), pgconn.quoted(table),
                self._where([]), order)
            found = list(self._copy(query))
            if not found:
                log.info("No maximum key returned by the query, incremental snapshotting of table '%s' finished "
                         "as it is empty", current.id)
                return False
            self.max_key = list(found[0])
            log.info("Incremental snapshot for table '%s' will end at position %s", current.id, self.max_key)
        return True

    def _read_rows(self) -> list[tuple[Any, ...]]:
        assert self._schema is not None and self._table is not None and self.max_key is not None
        keys = self._row(self._chunk_columns)
        bounds = [sql.SQL("NOT ({} > {})").format(keys, self._row_literal(self.max_key))]
        if self.last_key is not None:
            bounds.insert(0, sql.SQL("{} > {}").format(keys, self._row_literal(self.last_key)))
        query = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in self._schema.column_names), pgconn.quoted(self._table),
            self._where(bounds), sql.SQL(", ").join(sql.Identifier(c) for c in self._chunk_columns),
            sql.Literal(self._chunk_size))
        return list(self._copy(query))

    def _fill_buffer(self, rows: list[tuple[Any, ...]]) -> None:
        schema = self._schema
        assert schema is not None
        index = [schema.column_names.index(c) for c in self._chunk_columns]
        self._buffer.clear()
        for values in rows:
            key = schema.key(values)
            self._buffer[_key_text(key) if key is not None else str(len(self._buffer))] = (key, schema.row(values))
        self._chunk_last_key = [rows[-1][i] for i in index]

    def _emit_window(self, position: PostgresPosition, out: list[Any]) -> None:
        schema, table = self._schema, self._table
        if schema is not None and table is not None and self._buffer:
            lsn, commit = position.lsn, position.commit_lsn
            sequence = f'[{"null" if commit is None else json.dumps(str(commit))},"{lsn}"]'
            for key, row in self._buffer.values():
                now = time.time_ns()
                source = self._source.build(schema=table.schema or "public", table=table.table, ts_us=now // 1000,
                                            lsn=None, last_commit_lsn=None, tx_id=None, snapshot="incremental")
                source["sequence"] = sequence
                value = {"before": None, "after": row, "source": source, "transaction": None, "op": "r",
                         "ts_ms": now // 1_000_000, "ts_us": now // 1000, "ts_ns": now}
                out.append(ChangeRecord(schema.topic, schema.key_schema, key, schema.envelope, value, self._headers,
                                        position))
        self._buffer.clear()
        if self._chunk_last_key is not None and self.running:
            self.last_key = self._chunk_last_key
        self._chunk_last_key = None

    def _next_table(self) -> None:
        if self.collections:
            self.collections.pop(0)
        self._reset_table()
        if not self.running:
            self.correlation_id = None

    def _reset_table(self, keep_keys: bool = False) -> None:
        if not keep_keys:
            self.last_key = None
            self.max_key = None
        self._table, self._schema, self._chunk_columns = None, None, []
        self._buffer.clear()
        self._chunk_last_key = None

    # -- SQL ---------------------------------------------------------------------------------
    def _watermark(self, watermark_id: str, kind: str, data: dict[str, str]) -> None:
        self._conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(pgconn.quoted(self._signal_table)),
                           (watermark_id, kind, json.dumps(data)))

    def _where(self, bounds: list[sql.Composable]) -> sql.Composable:
        condition = self.collections[0].condition
        parts = list(bounds) + ([sql.SQL("({})").format(sql.SQL(condition))] if condition else [])
        return sql.SQL(" WHERE ").join([sql.SQL(""), sql.SQL(" AND ").join(parts)]) if parts else sql.SQL("")

    @staticmethod
    def _row(columns: list[str]) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in columns))

    @staticmethod
    def _row_literal(values: list[Any]) -> sql.Composable:
        # untyped text literals: PostgreSQL reads each as its column's type, so the order is the column's
        return sql.SQL("({})").format(sql.SQL(", ").join(sql.Literal(v) for v in values))

    def _copy(self, query: sql.Composable) -> Any:
        with self._conn.cursor() as cur:
            with cur.copy(sql.SQL("COPY ({}) TO STDOUT").format(query)) as copy:
                yield from copy.rows()

    # -- offset ------------------------------------------------------------------------------
    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        if self.running:
            offset[K_COLLECTIONS] = json.dumps([c.to_json() for c in self.collections])
            offset[K_PRIMARY_KEY] = json.dumps(self.last_key) if self.last_key is not None else None
            offset[K_MAXIMUM_KEY] = json.dumps(self.max_key) if self.max_key is not None else None
            offset[K_CORRELATION] = self.correlation_id
        return offset

    def restore(self, offset: dict[str, Any] | None) -> None:
        self.collections, self.last_key, self.max_key = [], None, None
        if not offset or not offset.get(K_COLLECTIONS):
            return
        try:
            self.collections = [Collection(c["incremental_snapshot_collections_id"],
                                           c.get("incremental_snapshot_collections_additional_condition"),
                                           c.get("incremental_snapshot_collections_surrogate_key"))
                                for c in json.loads(offset[K_COLLECTIONS])]
        except (TypeError, ValueError, KeyError) as exc:
            log.warning("stored incremental snapshot state is unreadable (%s); not resumed", exc)
            return
        self.correlation_id = offset.get(K_CORRELATION)
        try:
            self.last_key = _json_list(offset.get(K_PRIMARY_KEY))
            self.max_key = _json_list(offset.get(K_MAXIMUM_KEY))
        except ValueError:
            log.warning("stored incremental snapshot keys are not lakecdc's (Debezium's Java serialization?); "
                        "table %s restarts from its first chunk", self.collections[0].id)
            self.last_key = self.max_key = None
        log.info("restored incremental snapshot of %s from the offset (last key %s)",
                 [c.id for c in self.collections], self.last_key)


def _json_list(text: Any) -> list[Any] | None:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError(text)
    return value


def _key_text(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, default=str)


def _compile(pattern: str) -> re.Pattern[str]:
    """A data-collections entry: a regex on ``<schema>.<table>``; a quoted id is matched literally."""
    if '"' in pattern:
        table = parse_table_id(pattern)
        return re.compile(re.escape(f"{table.schema}.{table.table}"))
    return re.compile(pattern, re.IGNORECASE)
