"""Incremental (ad hoc) snapshots: Debezium's watermark algorithm (DBLog), run inside streaming.

Shared by the connectors; each subclass supplies its SQL (``postgres/incremental.py``; MySQL, SQL
Server and Oracle through ``chunk_query.py``) and how a read event looks.

``execute-snapshot`` (``type: incremental``) queues tables; each is read in chunks of
``incremental.snapshot.chunk.size`` rows ordered by primary key (or ``surrogate-key``), from the
first key up to the table's maximum key read when the table starts. Per chunk:

1. insert ``<uuid>-open`` (``snapshot-window-open``) into the signal table (autocommit);
2. read the chunk: rows with key > last and key <= max [AND (condition)] ordered by key, at most
   chunk size; its rows go to a buffer keyed by the record key;
3. insert ``<uuid>-close`` (``snapshot-window-close``).

Streaming meets the two watermark rows in the change stream (WAL, binlog). Between them (the
window) a streamed change of the chunk's table removes the buffered row with the same key: the
change is newer than, or as new as, the chunk's read. At the close watermark the remaining rows are
emitted as ``op "r"`` events with ``source.snapshot = "incremental"`` (before the close row's own
event, as Debezium), and the next chunk is read. A chunk that returns no row finishes its table
(Debezium reads until an empty chunk, so the last window of a table is empty).

The progress is kept in the streaming offset under Debezium's keys: ``incremental_snapshot_collections``
(the queue, Debezium's JSON), ``incremental_snapshot_primary_key`` (last key emitted),
``incremental_snapshot_maximum_key`` and ``incremental_snapshot_correlation_id``. Debezium stores the
two keys as hex Java serialization; lakecdc stores JSON lists of the keys' values (an offset
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
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from lakecdc.capture.signals import Signal, parse_table_id
from lakecdc.errors import ConfigError
from lakecdc.events.envelope import ChangeRecord
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
    id: str  #: "<schema>.<table>" (MySQL: "<database>.<table>")
    condition: str | None = None
    surrogate_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"incremental_snapshot_collections_id": self.id,
                "incremental_snapshot_collections_additional_condition": self.condition,
                "incremental_snapshot_collections_surrogate_key": self.surrogate_key}


@dataclass(frozen=True)
class AdditionalCondition:
    """One filter of an ``execute-snapshot`` signal. ``collection`` is the ``data-collection`` as
    written (a regex for incremental snapshots, a table name for blocking ones); None for the older
    ``additional-condition`` string, which applies to every requested table."""

    collection: str | None
    filter: str


def additional_conditions(data: dict[str, Any]) -> list[AdditionalCondition]:
    """``additional-conditions`` ([{"data-collection": ..., "filter": ...}]), then the older
    ``additional-condition`` string, of an ``execute-snapshot`` signal's data (both snapshot types)."""
    out: list[AdditionalCondition] = []
    for entry in data.get("additional-conditions") or []:
        if isinstance(entry, dict) and entry.get("data-collection") and entry.get("filter"):
            out.append(AdditionalCondition(str(entry["data-collection"]), str(entry["filter"])))
    legacy = data.get("additional-condition")
    if legacy:
        out.append(AdditionalCondition(None, str(legacy)))
    return out


def instant() -> str:
    """Java ``Instant.toString()`` of now (nanosecond digits), as Debezium writes watermarks."""
    ns = time.time_ns()
    base = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{ns % 1_000_000_000:09d}Z"


class ChunkQueryError(Exception):
    """A chunk query the database refused (e.g. an additional condition that is not valid SQL):
    the table is skipped. Connection losses are not wrapped: streaming reconnects on them."""


class IncrementalSnapshot(ABC):
    def __init__(self, chunk_size: int, signal_table: TableId | None) -> None:
        self._signal_table = signal_table
        self._chunk_size = chunk_size
        self.collections: list[Collection] = []
        self.correlation_id: str | None = None
        self.last_key: list[Any] | None = None  #: chunk-key values of the last row emitted
        self.max_key: list[Any] | None = None
        self.paused = False
        self.window_open = False
        self._chunk_id: str | None = None  #: window written, its close not yet streamed
        self._open_ts = ""
        self._chunk_last_key: list[Any] | None = None
        self._table: TableId | None = None  #: table of the buffered chunk
        self._schema: Any = None
        self._chunk_columns: list[str] = []
        self._buffer: dict[str, tuple[dict[str, Any] | None, tuple[Any, ...]]] = {}

    def signal_table(self) -> TableId:
        """The signal table, for connectors whose watermarks are rows in it (they are built with one)."""
        if self._signal_table is None:
            raise ConfigError("incremental snapshot watermarks are rows of the signal table: set "
                              "signal.data.collection", "signal.data.collection")
        return self._signal_table

    # -- what a connector supplies --------------------------------------------------------------
    @abstractmethod
    def captured_tables(self) -> list[str]:
        """The captured tables' ids (``schema.table``), the signal table left out."""

    @abstractmethod
    def table_schema(self, table: TableId) -> Any:
        """The table's current schema (``column_names``, ``key(values)``); raises when it is gone."""

    @abstractmethod
    def primary_key(self, table: TableId, schema: Any) -> list[str]:
        """The chunk-key columns when no surrogate key is given (the message key columns)."""

    @abstractmethod
    def query_max_key(self) -> list[Any] | None:
        """The largest chunk key of the current table (with its condition); None when empty."""

    @abstractmethod
    def query_chunk(self) -> list[tuple[Any, ...]]:
        """The next chunk's rows (every column, in ``column_names`` order), ordered by the chunk key.
        Raises :class:`ChunkQueryError` when the database refuses the query."""

    @abstractmethod
    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        """Insert ``(id, type, data)`` into the signal table, committed at once."""

    @abstractmethod
    def read_record(self, key: dict[str, Any] | None, values: tuple[Any, ...], position: Any) -> ChangeRecord:
        """One buffered row as an ``op "r"`` record at the close watermark's ``position``."""

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
        """The captured tables that ``data-collections`` regexes name, in order."""
        captured = self.captured_tables()
        out: list[str] = []
        for pattern in signal.data.get("data-collections") or []:
            regex = compile_collection(str(pattern))
            matched = [t for t in captured if regex.fullmatch(t)]
            if not matched:
                log.warning("signal '%s': no captured table matches '%s'; known tables %s", signal.id, pattern,
                            captured)
            out.extend(t for t in matched if t not in out)
        return out

    @staticmethod
    def _conditions(data: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
        """Each condition's ``data-collection`` as a regex (the older string: every table) and its
        WHERE fragment."""
        return [(compile_collection(c.collection) if c.collection is not None else re.compile(".*"), c.filter)
                for c in additional_conditions(data)]

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
        patterns = [compile_collection(str(n)) for n in names]
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
    def on_watermark(self, kind: str, watermark_id: str, position: Any, out: list[Any]) -> None:
        """A window row of the signal table met in the change stream (before its own event is emitted)."""
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

    def in_window(self, table: TableId) -> bool:
        """True when a change of ``table`` now may supersede a buffered row (a window is open on it)."""
        return self.window_open and table == self._table

    def seen(self, table: TableId, key: dict[str, Any] | None) -> None:
        """A streamed change while the window is open supersedes the buffered row with its key."""
        if table == self._table and key is not None:
            self._buffer.pop(_key_text(key), None)

    def close(self) -> None:
        """Release what the snapshot holds of its own (a connection for chunk reads); none here."""

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
        self._open_ts = instant()
        self.write_watermark(f"{self._chunk_id}-open", OPEN, json.dumps({"openWindowTimestamp": self._open_ts}))
        while self.running:
            try:
                # the table's shape is read again per chunk: a column dropped meanwhile must not
                # break the chunk query (schema changes during a snapshot are unsupported, as in Debezium)
                if not self._start_table():
                    self._next_table()
                    continue
                rows = self.query_chunk()
            except ChunkQueryError as exc:  # e.g. an additional condition that is not valid SQL
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
        self.write_watermark(f"{self._chunk_id}-close", CLOSE, json.dumps(
            {"openWindowTimestamp": self._open_ts, "closeWindowTimestamp": instant()}))

    def _start_table(self) -> bool:
        current = self.collections[0]
        table = parse_table_id(current.id)
        self._reset_table(keep_keys=True)
        try:
            schema = self.table_schema(table)
        except Exception as exc:  # dropped since the signal: skip it, as Debezium does
            log.warning("incremental snapshot of '%s' skipped: %s", current.id, exc)
            return False
        columns = [current.surrogate_key] if current.surrogate_key else self.primary_key(table, schema)
        if not columns or any(c not in schema.column_names for c in columns):
            log.warning("Incremental snapshot for table '%s' skipped cause the table has no primary keys", current.id)
            return False
        self._table, self._schema, self._chunk_columns = table, schema, columns
        if self.max_key is None:
            self.max_key = self.query_max_key()
            if self.max_key is None:
                log.info("No maximum key returned by the query, incremental snapshotting of table '%s' finished "
                         "as it is empty", current.id)
                return False
            log.info("Incremental snapshot for table '%s' will end at position %s", current.id, self.max_key)
        return True

    def _fill_buffer(self, rows: list[tuple[Any, ...]]) -> None:
        schema = self._schema
        index = [schema.column_names.index(c) for c in self._chunk_columns]
        self._buffer.clear()
        for values in rows:
            key = schema.key(values)
            self._buffer[_key_text(key) if key is not None else str(len(self._buffer))] = (key, values)
        self._chunk_last_key = [rows[-1][i] for i in index]

    def _emit_window(self, position: Any, out: list[Any]) -> None:
        if self._schema is not None and self._table is not None:
            for key, values in self._buffer.values():
                out.append(self.read_record(key, values, position))
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

    def condition(self) -> str | None:
        """The current table's additional condition."""
        return self.collections[0].condition if self.collections else None

    # -- offset ------------------------------------------------------------------------------
    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        if self.running:
            offset[K_COLLECTIONS] = json.dumps([c.to_json() for c in self.collections])
            offset[K_PRIMARY_KEY] = _json_key(self.last_key)
            offset[K_MAXIMUM_KEY] = _json_key(self.max_key)
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


def _json_key(values: list[Any] | None) -> str | None:
    # keys read as Decimal, date or time values are stored as their text, which the database
    # reads back as the column's type in the chunk query
    return json.dumps(values, default=str) if values is not None else None


def _json_list(text: Any) -> list[Any] | None:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError(text)
    return value


def _key_text(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True, default=str)


def compile_collection(pattern: str) -> re.Pattern[str]:
    """A data-collections entry: a regex on ``<schema>.<table>``; a quoted id is matched literally."""
    if '"' in pattern:
        table = parse_table_id(pattern)
        return re.compile(re.escape(f"{table.schema}.{table.table}"))
    return re.compile(pattern, re.IGNORECASE)
