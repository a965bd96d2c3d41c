"""A large snapshot table read and encoded by worker processes in block ranges, sent in table order.

Debezium's ``snapshot.max.threads`` reads that many tables at once, each on its own connection in
the snapshot's transaction (``RelationalSnapshotChangeEventSource``). lakecdc applies the setting
inside a table too, because one Python process converts and encodes rows on one core only: a
table of at least :data:`MIN_ROWS` rows is cut into ranges of heap blocks (``ctid`` ranges, which
PostgreSQL 14+ reads with a TID range scan), and ``snapshot.max.threads`` worker processes each
read ranges on their own connection. A worker imports the snapshot transaction's snapshot
(``pg_export_snapshot`` / ``SET TRANSACTION SNAPSHOT``, as Debezium's snapshot threads share the
exported one), so it sees exactly the rows the serial read sees; it converts its rows and encodes
their key and value payloads (``RecordSerializer.payload_bytes``: the sink adds each record's schema
part, so a worker does not send kilobytes of schema text per row). The capture process takes the ranges back in
block order, so records leave in the order of the serial sequential scan (block order).

The first and last row of each range come back unconverted and go through the serial path: which
row is the table's (and the snapshot's) first and last is known only in order, and those rows carry
the snapshot markers (``first``, ``first_in_data_collection``, ``last_in_data_collection``,
``last``); every row between them is ``true``. So does a row the worker fails to convert or encode
(:func:`encode_range`): the capture process converts it and hands it to the sink as the serial read
does, so Kafka Connect's error handling of the converter stage (``errors.tolerance``,
``errors.log.*``: the coordinator's ``_send``) applies to it exactly as to the serial read's row. At
most ``threads + 1`` ranges of about :data:`RANGE_ROWS` rows are in flight, so memory stays bounded
however large the table.

Pre-encoded payloads (``EncodedPayload``) pass through the sinks' ``RecordSerializer``; the
parallel read is therefore used only where nothing between the snapshot and the
sink reads record values: no ``transforms`` and no metrics exporter (``metrics.port``).
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from psycopg import sql

from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.table_schema import TableSchema
from lakecdc.capture.worker_process import default_signals
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.topics import TableId

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: smaller tables are read serially: starting workers costs more than it saves
MIN_ROWS = 50_000
#: rows per block range (by the table's rows per block): a range's encoded records are held in memory
RANGE_ROWS = 10_000
#: the TID range scan that reads a block range without scanning the whole table
MIN_SERVER_VERSION = 140000


@dataclass(slots=True)
class EncodedRows:
    """A run of rows between a range's first and last, as encoded (key payload, value payload)."""

    pairs: list[tuple[bytes | None, bytes]]


def encode_range(rows: Iterable[Any], encode: Callable[[Any], tuple[bytes | None, bytes]]) -> list[Any]:
    """A worker's answer for one range, in row order: its first row's values, then the rows between
    as :class:`EncodedRows` runs (``encode`` gives a row's key and value payloads), then its last
    row's values. A row between that ``encode`` fails on comes back as values in its place: the
    capture process converts it and sends it as the serial read would, so the converter's failure
    meets the same ``errors.tolerance`` handling, and anything else the same error, as serially."""
    items: list[Any] = []
    pairs: list[tuple[bytes | None, bytes]] = []
    held: Any = None
    for values in rows:
        if not items:
            items.append(values)
            continue
        if held is not None:
            try:
                pairs.append(encode(held))
            except Exception:  # noqa: BLE001 - the capture process meets it again, under the error handler
                if pairs:
                    items.append(EncodedRows(pairs))
                    pairs = []
                items.append(held)
        held = values
    if pairs:
        items.append(EncodedRows(pairs))
    if held is not None:
        items.append(held)
    return items


def portable_errors(read: Callable[P, T]) -> Callable[P, T]:
    """A worker's task whose errors reach the capture process: an exception the parent cannot
    rebuild from its pickle (one whose constructor takes more than its message, such as
    ``RecordConversionError``) kills ``multiprocessing.Pool``'s result thread, and the snapshot then
    waits forever (``ProcessPoolExecutor`` breaks, saying only that a process ended). Such an error
    is raised as a ``RuntimeError`` with its type and text instead (the traceback sent with it
    shows the original)."""

    @functools.wraps(read)
    def task(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return read(*args, **kwargs)
        except Exception as exc:
            try:
                pickle.loads(pickle.dumps(exc))
            except Exception:  # noqa: BLE001 - whatever stops the round trip
                raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
            raise

    return task


def parallel_allowed(config: PostgresConnectorConfig) -> bool:
    """True when ``snapshot.max.threads`` asks for workers and nothing before the sink reads values."""
    return config.snapshot_max_threads > 1 and values_unread(config)


def values_unread(config: Any) -> bool:
    """True when nothing between the source and the sink reads record values (no ``transforms``,
    no metrics exporter): only then may workers hand the sink payloads they encoded."""
    return not config.transform_chain and not (config.passthrough or {}).get("metrics.port")


def block_ranges(conn: Any, table: TableId, threads: int) -> list[tuple[int, int | None]] | None:
    """Block ranges covering ``table`` (the last open-ended: the file may grow after the snapshot
    began; those rows are not visible to it), or None when the table is read serially."""
    if conn.info.server_version < MIN_SERVER_VERSION:
        return None
    pages, rows = conn.execute(
        "SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint, greatest(c.reltuples, 0)::bigint "
        "FROM pg_class c WHERE c.oid = %s::regclass AND c.relkind = 'r'", (pgconn.regclass_text(table),),
    ).fetchone() or (0, 0)
    if rows <= 0 and pages > 0:  # never analysed (reltuples -1): guess from the size, ~50 rows a block
        rows = pages * 50
    if rows < MIN_ROWS or pages < 2 * threads:
        return None
    step = max(1, -(-pages * RANGE_ROWS // rows))
    starts = list(range(0, pages, step))
    return [(lo, hi) for lo, hi in zip(starts, starts[1:])] + [(starts[-1], None)]


@dataclass
class _WorkerState:
    config: PostgresConnectorConfig
    schema: TableSchema
    table: TableId
    snapshot_name: str
    source: dict[str, Any]


_state: _WorkerState | None = None
_conn: Any = None
_serializer: Any = None
_start_error: Exception | None = None


def _start_worker(state: _WorkerState) -> None:
    """In each worker (forked): a connection inside the snapshot's transaction, kept for its ranges."""
    global _state, _conn, _serializer
    from multiprocessing.util import Finalize

    from lakecdc.transport.sink import RecordSerializer

    default_signals()
    global _start_error
    _state = state
    _serializer = RecordSerializer()  # payloads only: the sink adds the schema part with its own settings
    # An initializer that raises makes the pool start another worker, forever: the error is kept
    # and raised by the worker's first range instead, which reaches the capture process.
    try:
        _conn = pgconn.connect(state.config)
        Finalize(None, _conn.close, exitpriority=10)
        _conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        _conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(state.snapshot_name)))
    except Exception as exc:  # noqa: BLE001 - re-raised in _read_range
        _start_error = exc


@portable_errors
def _read_range(lo: int, hi: int | None) -> list[Any]:
    """One block range as :func:`encode_range` answers it."""
    if _start_error is not None:
        raise _start_error
    state = _state
    assert state is not None and _conn is not None, "worker not started"
    schema = state.schema
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in schema.column_names)
    where = sql.SQL("ctid >= {}::tid").format(sql.Literal(f"({lo},0)"))
    if hi is not None:
        where = sql.SQL("{} AND ctid < {}::tid").format(where, sql.Literal(f"({hi},0)"))
    query = sql.SQL("COPY (SELECT {} FROM {} WHERE {}) TO STDOUT").format(columns, pgconn.quoted(state.table), where)
    topic, key_schema, envelope, key_of, row_of = (schema.topic, schema.key_schema, schema.envelope, schema.key,
                                                   schema.row)
    payload_bytes, source = _serializer.payload_bytes, state.source

    def encode(values: Any) -> tuple[bytes | None, bytes]:
        now = time.time_ns()
        record = ChangeRecord(topic, key_schema, key_of(values), envelope, {
            "before": None, "after": row_of(values), "source": source, "transaction": None, "op": "r",
            "ts_ms": now // 1_000_000, "ts_us": now // 1000, "ts_ns": now})
        value = payload_bytes(record, "value")
        assert value is not None  # a read always has a value
        return payload_bytes(record, "key"), value

    with _conn.cursor() as cur, cur.copy(query) as copy:
        return encode_range(copy.rows(), encode)


def parallel_rows(conn: Any, config: PostgresConnectorConfig, schema: TableSchema, table: TableId,
                  ranges: list[tuple[int, int | None]], source: dict[str, Any]) -> Iterator[Any]:
    """The table's rows in block order: each range's first and last row as values, the rows between
    as :class:`EncodedRows` runs (and as values where a worker could not encode one). ``conn`` holds
    the snapshot transaction; ``source`` is the source block of a row marked ``true``."""
    threads = config.snapshot_max_threads
    snapshot_name = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
    state = _WorkerState(config, schema, table, snapshot_name, source)
    log.info("snapshot of %s: %d block ranges read by %d worker processes (snapshot.max.threads)", table,
             len(ranges), threads)
    # fork: the workers inherit the table's compiled converters; they open their own connections
    pool = multiprocessing.get_context("fork").Pool(threads, _start_worker, (state,))
    try:
        todo = iter(ranges)
        # range() first: zip stops on it before taking a range it would drop
        pending = deque(pool.apply_async(_read_range, r) for _, r in zip(range(threads + 1), todo))
        while pending:
            items = pending.popleft().get()
            following = next(todo, None)
            if following is not None:
                pending.append(pool.apply_async(_read_range, following))
            yield from items
        pool.close()
        pool.join()
    finally:
        pool.terminate()
