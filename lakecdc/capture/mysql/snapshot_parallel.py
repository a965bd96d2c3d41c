"""A large MySQL/MariaDB snapshot table read and encoded by worker processes in key ranges, sent in key order.

Debezium's MySQL snapshot with ``snapshot.max.threads`` > 1 opens that many connections while the
snapshot's lock is held, each starting ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` then, so all
of them read the same data, and reads several tables at once. lakecdc applies the setting inside
a table as well, because one Python process reads, converts and encodes rows on one core only (the
PostgreSQL snapshot does the same with block ranges, ``capture/postgres/snapshot_parallel.py``): an
InnoDB table of at least :data:`MIN_ROWS` rows with a one-column integer primary key is cut into
ranges of about :data:`RANGE_ROWS` keys (boundaries from one ``ROW_NUMBER()`` pass over the key in
the snapshot's own transaction), and ``snapshot.max.threads`` worker processes read the ranges
(``WHERE pk >= lo AND pk < hi ORDER BY pk``), convert the rows and encode each record's key and
value payloads (``RecordSerializer.payload_bytes``). The capture process takes the ranges back in
key order: the order of the serial ``SELECT *``, which InnoDB answers from its clustered index.

The workers begin their transactions before the snapshot releases its lock (global read lock: step
5; table locks are held to the end), so they see what the serial read sees; with
``snapshot.locking.mode=none`` nothing holds writers back and the read stays serial. A worker that
dies breaks the pool (``BrokenProcessPool``; no replacement could see the snapshot's data): the
snapshot fails, and the restart snapshots again, as after any crash mid-snapshot.

Each range's first and last row come back unconverted and go through the serial path (they may be
a table's first or last row, which carry the snapshot markers); the rows between are always
``true``. A row between that a worker fails to convert or encode comes back unconverted as well
(``encode_range``), so the converter's failure meets ``errors.tolerance`` in the capture process as
in the serial read. At most ``threads + 1`` ranges are in flight, so memory stays bounded. Pre-encoded payloads
need a sink that encodes with ``RecordSerializer``: as for PostgreSQL, the parallel read is used only
when no transform and no metrics exporter reads record values (``parallel_allowed``).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.postgres.snapshot_parallel import EncodedRows, encode_range, parallel_allowed, portable_errors
from lakecdc.capture.worker_process import default_signals
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import MySqlPosition
from lakecdc.events.source import snapshot_marker
from lakecdc.transport.sink import EncodedPayload

log = logging.getLogger(__name__)

__all__ = ["EncodedRows", "SnapshotWorkers", "emit_table", "parallel_allowed"]

#: smaller tables are read serially: handing rows over costs more than it saves
MIN_ROWS = 50_000
#: keys per range: a range's encoded records are held in memory until sent
RANGE_ROWS = 10_000
#: how long the snapshot waits for its workers to open their transactions (its lock is held meanwhile)
START_TIMEOUT_S = 60.0
INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT"})
FETCH = 2000

_conn: Any = None
_serializer: Any = None
_factories: dict[tuple[str, str], Any] = {}
_start_error: BaseException | None = None


def _start_worker(config: Any, factories: dict[tuple[str, str], Any], barrier: Any) -> None:
    """In each worker (forked, inheriting the tables' compiled converters): a connection whose
    consistent-snapshot transaction starts while the snapshot's lock is held."""
    global _conn, _serializer, _factories, _start_error
    from multiprocessing.util import Finalize

    from lakecdc.transport.sink import RecordSerializer

    default_signals()
    _factories = factories
    _serializer = RecordSerializer()  # payloads only: the sink adds the schema part with its own settings
    # An initializer that raises breaks the whole pool with a generic error: the error is kept and
    # raised by the worker's first range instead, which reaches the capture process.
    try:
        _conn = myconn.connect(config, conv=myconn.row_decoders())
        Finalize(None, _conn.close, exitpriority=10)
        with _conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    except Exception as exc:  # noqa: BLE001 - re-raised in _read_range
        _start_error = exc
    finally:
        try:
            barrier.wait(START_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass


def _started() -> None:
    """A task that makes the pool start its workers (it forks them all at the first task)."""


@portable_errors
def _read_range(db: str, table: str, key: str, lo: Any, hi: Any, source: dict[str, Any],
                position: MySqlPosition) -> list[Any]:
    """One key range as ``encode_range`` answers it."""
    import pymysql.cursors

    if _start_error is not None:
        raise _start_error
    assert _conn is not None, "worker not started"
    factory = _factories[(db, table)]
    read, payload_bytes = factory.read, _serializer.payload_bytes
    column = myconn.quote(key)
    bounds = [f"{column} >= %s" if lo is not None else "", f"{column} < %s" if hi is not None else ""]
    where = " AND ".join(b for b in bounds if b)
    query = (f"SELECT * FROM {myconn.quote(db)}.{myconn.quote(table)}" + (f" WHERE {where}" if where else "")
             + f" ORDER BY {column}")

    def encode(values: Any) -> tuple[bytes | None, bytes]:
        record = read(values, source, position, time.time_ns())
        value = payload_bytes(record, "value")
        assert value is not None  # a read record's value is never null (None: a null payload)
        return payload_bytes(record, "key"), value

    def rows(cur: Any) -> Iterator[Any]:
        block = cur.fetchmany(FETCH)
        while block:
            yield from block
            block = cur.fetchmany(FETCH)

    cur = _conn.cursor(pymysql.cursors.SSCursor)
    try:
        cur.execute(query, [b for b in (lo, hi) if b is not None])
        return encode_range(rows(cur), encode)
    finally:
        cur.close()


class SnapshotWorkers:
    """``snapshot.max.threads`` worker processes holding transactions on the snapshot's data.

    Create them while the snapshot's lock is held: the constructor returns once every worker's
    transaction has begun. :meth:`table_rows` reads one table through them, or returns None when
    the table is read serially."""

    def __init__(self, config: Any, factories: dict[tuple[str, str], Any]) -> None:
        self.threads = config.snapshot_max_threads
        context = multiprocessing.get_context("fork")
        barrier = context.Barrier(self.threads + 1)
        # fork: the workers inherit the factories (compiled converters); each opens its own connection
        self._pool = ProcessPoolExecutor(self.threads, context, _start_worker, (config, factories, barrier))
        self._pool.submit(_started)
        try:
            barrier.wait(START_TIMEOUT_S)
        except threading.BrokenBarrierError:
            self.close()
            raise RuntimeError(f"the snapshot's {self.threads} worker processes did not start within "
                               f"{START_TIMEOUT_S:.0f} s") from None

    def table_rows(self, conn: Any, db: str, table: str, factory: Any, source: dict[str, Any],
                   position: MySqlPosition) -> Iterator[Any] | None:
        """The table's rows in key order: each range's first and last row as values, the rows
        between as :class:`EncodedRows` runs (as values where a worker could not encode one); None
        when the table is read serially. ``conn`` holds the snapshot's transaction; ``source`` is
        the source block of a row marked ``true``."""
        ranges = key_ranges(conn, db, table, factory.schema.table)
        if ranges is None:
            return None
        key = factory.schema.table.primary_key[0]
        log.info("snapshot of %s.%s: %d key ranges read by %d worker processes (snapshot.max.threads)", db, table,
                 len(ranges), self.threads)
        return self._rows(db, table, key, ranges, source, position)

    def _rows(self, db: str, table: str, key: str, ranges: list[tuple[Any, Any]], source: dict[str, Any],
              position: MySqlPosition) -> Iterator[Any]:
        pool = self._pool
        todo = iter(ranges)
        # range() first: zip stops on it before taking a range it would drop
        pending = deque(pool.submit(_read_range, db, table, key, lo, hi, source, position)
                        for _, (lo, hi) in zip(range(self.threads + 1), todo))
        while pending:
            items = pending.popleft().result()  # BrokenProcessPool when a worker died
            following = next(todo, None)
            if following is not None:
                pending.append(pool.submit(_read_range, db, table, key, *following, source, position))
            yield from items

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def emit_table(emit: Callable[[list[ChangeRecord]], None], factory: Any, rows: Iterator[Any], source: Any,
               middle: dict[str, Any], position: MySqlPosition, first_table: bool, advance: Callable[[int], None],
               batch_size: int) -> int:
    """Emit a table read by the workers (values rows, and ``EncodedRows`` runs between them) with
    the serial read's markers (``MySqlSnapshotSource.scan``); returns its row count. ``source``
    builds the source block of a marker, ``middle`` is the one of ``true``. A values row is held
    until the next item shows whether it is the table's last; encoded runs never hold a table's
    first or last row."""
    read = factory.read
    s = factory.schema
    topic, key_schema, envelope, headers = s.topic, s.key_schema, s.envelope_schema, factory.headers
    batch: list[ChangeRecord] = []
    held: Any = None
    count = 0

    def held_record(last: bool) -> ChangeRecord:
        # count is the held row's number in the table (1 = its first row)
        marker = snapshot_marker(True, first=first_table and count == 1, first_in_table=count == 1,
                                 last_in_table=last)
        return read(held, middle if marker == "true" else source(marker), position, time.time_ns())

    for item in rows:
        if held is not None:
            batch.append(held_record(False))
            held = None
        if type(item) is EncodedRows:
            batch.extend(ChangeRecord(topic, key_schema, None if key is None else EncodedPayload(key), envelope,
                                      EncodedPayload(value), headers, position)
                         for key, value in item.pairs)
            count += len(item.pairs)
        else:
            held = item
            count += 1
        if len(batch) >= batch_size:
            emit(batch)
            advance(len(batch))
            batch = []
    if held is not None:
        batch.append(held_record(True))
    if batch:
        emit(batch)
        advance(len(batch))
    return count


def key_ranges(conn: Any, db: str, table: str, structure: Any) -> list[tuple[Any, Any]] | None:
    """Key ranges ``[lo, hi)`` covering the table (the first open below, the last above), or None
    when it is read serially: not InnoDB, no one-column integer primary key, or fewer than
    :data:`MIN_ROWS` rows (the server's estimate)."""
    if len(structure.primary_key) != 1:
        return None
    column = structure.column(structure.primary_key[0])
    if column is None or column.type_name.upper() not in INTEGER_TYPES:
        return None
    with conn.cursor() as cur:
        cur.execute("SELECT ENGINE, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME = %s", (db, table))
        row = cur.fetchone()
        if row is None or str(row[0] or "").lower() != "innodb" or int(row[1] or 0) < MIN_ROWS:
            return None
        key = myconn.quote(column.name)
        # every RANGE_ROWS-th key, in one pass over the primary key (MariaDB 10.2+, MySQL 8)
        cur.execute(f"SELECT k FROM (SELECT {key} AS k, ROW_NUMBER() OVER (ORDER BY {key}) AS n "
                    f"FROM {myconn.quote(db)}.{myconn.quote(table)}) AS b WHERE n %% %s = 1 ORDER BY k",
                    (RANGE_ROWS,))
        starts = [r[0] for r in cur.fetchall()]
    if len(starts) < 2:
        return None
    bounds: list[Any] = [None, *starts[1:], None]
    return list(zip(bounds, bounds[1:]))
