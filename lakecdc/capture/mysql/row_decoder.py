"""Binlog row images read straight from a rows event's bytes, with one reader per column compiled once
per table map.

mysql-replication decodes a rows event's rows on first access (``RowsEvent.rows``): per row a dict,
per column a chain of type tests, a packet read (a slice and a buffer shuffle) and a ``struct``
call, plus a "why is this None" dict. A py-spy profile of a binlog backlog put that at about half of
the capture's CPU (``bench/bench_mysql_capture.py``). The binlog's row format is fixed per table map
(column types and metadata), so each column gets one reader (``column_readers``) over the event's
buffer, and the streaming loop gets what it used, by position: a tuple per row image, with an empty
SET as ``''`` and a negative fractional TIME as the server stored it (:func:`row_values`).

The values are mysql-replication's own, bit for bit, except text bytes a character set does not
define, which the library cannot decode (``column_readers._text``): the property test
``tests/integration/capture/mysql/test_mysql_row_decoder.py`` decodes random rows of every column type
on a real server both ways. Anything else stays with the library: MySQL's binary JSON (MariaDB's
JSON is text; no MySQL server runs here to test a reader against) and partial JSON updates, a column
type without a reader, and any event a reader fails on (``RowsEvent.rows`` then decodes it, or
raises what it raises, as before).
"""

from __future__ import annotations

import datetime
from typing import Any

from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import UpdateRowsEvent

from lakecdc.capture.mysql.column_readers import Reader, column_reader

# the row images of one event: a tuple per write/delete row, a (before, after) pair per update row
Images = list[Any]

EMPTY_SET = "empty set"  # mysql-replication's NONE_SOURCE.EMPTY_SET


def negative_time(value: Any) -> Any:
    """A negative TIME(1-6) with a fraction as the server stored it. MySQL packs a TIME2 value's
    seconds and fraction as one signed number, so a negative value with a fraction is stored as
    -(seconds + 1) and (1 - fraction); mysql-replication negates the two parts separately and
    reads -01:02:03.000004 as -01:02:03.999996. Debezium (mysql-binlog-connector-java) reads the
    stored value. Recovers seconds + fraction: whole seconds are right, the fraction is 1 - read."""
    if not isinstance(value, datetime.timedelta) or value >= datetime.timedelta(0):
        return value
    magnitude = -value
    whole = datetime.timedelta(days=magnitude.days, seconds=magnitude.seconds)
    fraction = magnitude.microseconds
    return value if fraction == 0 else -(whole + datetime.timedelta(microseconds=1_000_000 - fraction))


def row_values(values: dict[str, Any], none_sources: dict[str, str],
               fractional_times: frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """A library row image's values by position, with an empty SET as '' as Debezium emits it:
    mysql-replication reports an empty SET as None and says why in the row's ``none_sources``
    (``{"tags": "empty set"}``), which tells it apart from NULL. Negative TIME(1-6) values are
    corrected (:func:`negative_time`)."""
    if fractional_times:
        values = {k: negative_time(v) if k in fractional_times else v for k, v in values.items()}
    if not none_sources:
        return tuple(values.values())
    return tuple("" if v is None and none_sources.get(k) == EMPTY_SET else v for k, v in values.items())


class _Plan:
    """One table map's readers, and which of its columns get :func:`negative_time`."""

    __slots__ = ("readers", "times")

    def __init__(self, readers: list[Reader], times: tuple[int, ...]) -> None:
        self.readers = readers
        self.times = times


def _plan(table: Any, fixes: bool, fractional_times: frozenset[str], ignore_errors: bool) -> _Plan | None:
    """Compiled once per table map and kept on it (mysql-replication makes a new ``Table`` per
    table map event, so a table altered in between gets a new plan)."""
    key = (fixes, fractional_times, ignore_errors)
    cached = getattr(table, "_lakecdc_plans", None)
    if cached is not None and key in cached:
        return cached[key]
    columns = table.columns
    # the library keys a row's values by the binlog's column names (UNKNOWN_COLn when it has none)
    names = [c.name or f"UNKNOWN_COL{i}" for i, c in enumerate(columns)]
    readers = [column_reader(c, "" if fixes else None, ignore_errors) for c in columns]
    plan = None
    if len(set(names)) == len(names) and all(r is not None for r in readers):
        times = tuple(i for i, (c, name) in enumerate(zip(columns, names))
                      if fixes and fractional_times and c.type == FIELD_TYPE.TIME2 and name in fractional_times)
        plan = _Plan([r for r in readers if r is not None], times)
    if cached is None:
        cached = {}
        table._lakecdc_plans = cached
    cached[key] = plan
    return plan


def _image(buf: bytes, pos: int, readers: list[Reader], present: list[bool] | None, size: int,
           times: tuple[int, ...]) -> tuple[tuple[Any, ...], int]:
    """One row image: the null bitmap (``size`` bytes, one bit per present column), then the
    non-null values."""
    nulls = int.from_bytes(buf[pos:pos + size], "little")
    pos += size
    values: list[Any] = []
    append = values.append
    if present is None and not nulls:
        for read in readers:
            value, pos = read(buf, pos)
            append(value)
    else:
        bit = 1
        for i, read in enumerate(readers):
            if present is not None and not present[i]:
                append(None)  # binlog_row_image=MINIMAL: not in this image
                continue
            if nulls & bit:
                append(None)
            else:
                value, pos = read(buf, pos)
                append(value)
            bit <<= 1
    for i in times:
        values[i] = negative_time(values[i])
    return tuple(values), pos


def _present(bitmap: bytes, width: int) -> tuple[list[bool] | None, int]:
    """Which columns an image holds (None: all of them) and the size of its null bitmap."""
    flags = [bool(bitmap[i >> 3] & (1 << (i & 7))) for i in range(width)]
    return (None if all(flags) else flags), (sum(flags) + 7) // 8


def row_images(ev: Any, fixes: bool, fractional_times: frozenset[str], width: int) -> Images | None:
    """The event's row images as the streaming loop takes them: a tuple per row of a write or
    delete, a (before, after) pair per row of an update; ``fixes`` as :func:`row_values` (empty SET
    as '', ``fractional_times`` corrected). None leaves the event to ``RowsEvent.rows``: the table
    map is not ``width`` columns wide, a column has no reader, MySQL 8's partial JSON update, or a
    reader failed on the bytes (the library then decodes them, or raises what it raises)."""
    if ev.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT or not ev.complete:
        return None
    wrapper = ev.packet
    table = ev.table_map.get(ev.table_id)
    if table is None or len(table.columns) != width or wrapper._BinLogPacketWrapper__data_buffer:
        return None
    plan = _plan(table, fixes, fractional_times, ev._ignore_decode_errors)
    if plan is None:
        return None
    packet = wrapper.packet
    buf, pos = packet._data, packet._position
    end = pos + ev.event_size - wrapper.read_bytes
    readers, times = plan.readers, plan.times
    images: Images = []
    try:
        first, first_nulls = _present(ev.columns_present_bitmap, width)
        if isinstance(ev, UpdateRowsEvent):
            second, second_nulls = _present(ev.columns_present_bitmap2, width)
            while pos < end:
                before, pos = _image(buf, pos, readers, first, first_nulls, times)
                after, pos = _image(buf, pos, readers, second, second_nulls, times)
                images.append((before, after))
        else:
            while pos < end:
                image, pos = _image(buf, pos, readers, first, first_nulls, times)
                images.append(image)
    except Exception:  # noqa: BLE001 - the library decodes the event and reports what is wrong with it
        return None
    return images if pos == end else None


def library_images(ev: Any, fixes: bool, fractional_times: frozenset[str]) -> Images:
    """The same images from ``RowsEvent.rows`` (decodes the event if nothing has yet)."""
    convert = ((lambda values, sources: row_values(values, sources, fractional_times)) if fixes
               else (lambda values, _: tuple(values.values())))
    if isinstance(ev, UpdateRowsEvent):
        return [(convert(r["before_values"], r["before_none_sources"]),
                 convert(r["after_values"], r["after_none_sources"])) for r in ev.rows]
    return [convert(r["values"], r["none_sources"]) for r in ev.rows]
