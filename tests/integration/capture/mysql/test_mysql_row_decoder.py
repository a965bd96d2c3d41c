"""lakecdc's binlog row decoder against mysql-replication's, on a real MariaDB's binlog.

Hypothesis draws a table (a key and 1-8 columns of every binlog column type, with their lengths,
precisions, fractional seconds, character sets and members), rows for it (NULLs, zero dates,
extremes, negative times, empty SETs, multi-byte text, JSON documents), whether the session logs
FULL or MINIMAL row images, and the temporal formats from before MySQL 5.6 or after; the rows are
inserted, updated and deleted. Every rows event is then decoded both ways: ``row_decoder.row_images``
must take the event (no fallback) and give exactly what ``library_images`` (``RowsEvent.rows`` and
``row_values``) gives, value types included, with and without the empty-SET and negative-TIME fixes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from itertools import count
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mysql_capture_support import fresh_database

from lakecdc.capture.mysql.row_decoder import library_images, row_images

pytestmark = pytest.mark.integration

DB = "it_row_decoder"
TABLES = count()
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)
# MariaDB's latin1 is cp1252; the five bytes cp1252 leaves undefined are read as U+FFFD, where the
# library raises (tests/conformance/test_mariadb_debezium.py checks them against Debezium)
LATIN1 = st.text(st.characters(codec="cp1252", exclude_characters="\x00"), max_size=12)


def _integer(name: str, bits: int) -> st.SearchStrategy[tuple[str, st.SearchStrategy[Any]]]:
    def pick(unsigned: bool) -> tuple[str, st.SearchStrategy[Any]]:
        low, high = (0, 2 ** bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return f"{name}{' UNSIGNED' if unsigned else ''}", st.integers(low, high)
    return st.booleans().map(pick)


def _decimal(precision: int, scale: int) -> tuple[str, st.SearchStrategy[Any]]:
    digits = st.integers(-(10 ** precision - 1), 10 ** precision - 1)
    return f"DECIMAL({precision},{scale})", digits.map(lambda n: decimal.Decimal(n).scaleb(-scale))


def _time(fsp: int) -> tuple[str, st.SearchStrategy[Any]]:
    limit = (838 * 3600 + 59 * 60 + 59) * 10 ** fsp

    def text(units: int) -> str:
        sign, units = ("-" if units < 0 else ""), abs(units)
        seconds, fraction = divmod(units, 10 ** fsp)
        h, rest = divmod(seconds, 3600)
        return f"{sign}{h}:{rest // 60:02d}:{rest % 60:02d}" + (f".{fraction:0{fsp}d}" if fsp else "")
    return f"TIME({fsp})", st.integers(-limit, limit).map(text)


def _datetime(kind: str, fsp: int) -> tuple[str, st.SearchStrategy[Any]]:
    low, high = ((dt.datetime(1970, 1, 2), dt.datetime(2038, 1, 18)) if kind == "TIMESTAMP"
                 else (dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)))
    values = st.datetimes(low, high).map(lambda v: v.isoformat(" ", "microseconds")[:20 + fsp - (fsp == 0)])
    if kind == "DATETIME":
        values = st.one_of(values, st.just("0000-00-00 00:00:00"))
    return f"{kind}({fsp})", values


def _bit(width: int) -> tuple[str, st.SearchStrategy[Any]]:
    return f"BIT({width})", st.integers(0, 2 ** width - 1)


def _sized_text(kind: str, length: int, charset: str) -> tuple[str, st.SearchStrategy[Any]]:
    chars = LATIN1 if charset == "latin1" else TEXT
    return f"{kind}({length}) CHARACTER SET {charset}", chars.map(lambda s: s[:length])


JSON_DOC = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | TEXT,
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                        max_leaves=6).map(json.dumps)

COLUMN = st.one_of(
    _integer("TINYINT", 8), _integer("SMALLINT", 16), _integer("MEDIUMINT", 24), _integer("INT", 32),
    _integer("BIGINT", 64),
    st.just(("FLOAT", st.floats(-2.0 ** 100, 2.0 ** 100, width=32, allow_subnormal=False))),
    st.just(("DOUBLE", st.floats(allow_nan=False, allow_infinity=False))),
    st.integers(1, 65).flatmap(lambda p: st.integers(0, min(p, 30)).map(lambda s: _decimal(p, s))),
    st.tuples(st.sampled_from([("CHAR", 1), ("CHAR", 20), ("CHAR", 255), ("VARCHAR", 20), ("VARCHAR", 300)]),
              st.sampled_from(["utf8mb4", "latin1"])).map(lambda a: _sized_text(*a[0], a[1])),
    st.sampled_from([1, 16, 300]).map(lambda n: (f"VARBINARY({n})", st.binary(max_size=min(n, 40)))),
    st.just(("BINARY(4)", st.binary(max_size=4))),
    st.sampled_from(["TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT"]).map(lambda t: (t, TEXT)),
    st.sampled_from(["TINYBLOB", "BLOB", "MEDIUMBLOB"]).map(lambda t: (t, st.binary(max_size=40))),
    st.just(("DATE", st.one_of(st.dates(dt.date(1000, 1, 1)).map(str), st.just("0000-00-00")))),
    st.integers(0, 6).map(_time),
    st.tuples(st.sampled_from(["DATETIME", "TIMESTAMP"]), st.integers(0, 6)).map(lambda a: _datetime(*a)),
    st.just(("YEAR", st.integers(1901, 2155))),
    st.just(("ENUM('a','bb','ccc')", st.sampled_from(["a", "bb", "ccc"]))),
    st.just(("SET('x','y','z')", st.sets(st.sampled_from("xyz")).map(lambda s: ",".join(sorted(s))))),
    st.integers(1, 64).map(_bit),
    st.just(("JSON", JSON_DOC)),
    st.just(("POINT", st.tuples(st.integers(-180, 180), st.integers(-90, 90)))),
)


def _literal(sql_type: str, value: Any) -> tuple[str, Any]:
    """The placeholder and parameter of a value (a point is built by the server)."""
    if sql_type == "POINT" and value is not None:
        return "ST_GeomFromText(%s)", f"POINT({value[0]} {value[1]})"
    return "%s", value


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[str], list[list[Any]], list[list[Any]], bool, bool]:
    columns = draw(st.lists(COLUMN, min_size=1, max_size=8))
    types = [t for t, _ in columns]

    def row() -> list[Any]:
        return [draw(st.none() | values) for _, values in columns]
    rows = [row() for _ in range(draw(st.integers(1, 6)))]
    updates = [row() for _ in rows]
    old_temporal = draw(st.booleans())
    if old_temporal:  # MariaDB's own fractional formats before 5.6 are read by neither decoder
        types = [re.sub(r"^(DATETIME|TIME|TIMESTAMP)\(\d\)", r"\1(0)", t) for t in types]
    return types, rows, updates, draw(st.booleans()), old_temporal


def _sql(conn: pymysql.Connection, statement: str, params: Any = None) -> int:
    """The rows the statement changed (an UPDATE to the same values logs no row)."""
    with conn.cursor() as cur:
        return cur.execute(statement, params)


def _comparable(value: Any) -> Any:
    """Exact: the type and repr (Decimal('1.0') differs from Decimal('1.00')), sets as sorted tuples."""
    if isinstance(value, tuple):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(value)))
    return (type(value).__name__, repr(value))


@pytest.fixture(scope="module")
def connection(mariadb):  # type: ignore[no-untyped-def]
    fresh_database(mariadb, DB)
    conn = pymysql.connect(**mariadb.connect_kwargs(DB), autocommit=True)
    _sql(conn, "SET SESSION sql_mode = ''")  # zero dates are stored as they come
    yield conn
    conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(workloads())
def test_row_images_equal_mysql_replications_rows(mariadb, connection, workload) -> None:  # type: ignore[no-untyped-def]
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    types, rows, updates, minimal, old_temporal = workload
    table = f"t{next(TABLES)}"
    names = [f"c{i}" for i in range(len(types))]
    # tables created with mysql56_temporal_format=OFF log DATETIME, TIME and TIMESTAMP in the formats
    # before MySQL 5.6 (each worker has a server of its own)
    _sql(connection, f"SET GLOBAL mysql56_temporal_format = {'OFF' if old_temporal else 'ON'}")
    try:
        _sql(connection, f"CREATE TABLE {table} (id INT PRIMARY KEY, "
                         + ", ".join(f"{n} {t}" for n, t in zip(names, types)) + ")")
    finally:
        _sql(connection, "SET GLOBAL mysql56_temporal_format = ON")
    with connection.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        log_file, log_pos = cur.fetchone()[:2]
    _sql(connection, f"SET SESSION binlog_row_image = '{'MINIMAL' if minimal else 'FULL'}'")
    for key, values in enumerate(rows):
        marks, params = zip(*(_literal(t, v) for t, v in zip(types, values)))
        _sql(connection, f"INSERT INTO {table} VALUES (%s, {', '.join(marks)})", (key, *params))
    changed = len(rows)
    for key, values in enumerate(updates):
        sets, params = zip(*((f"{n} = {mark}", p) for n, t, v in zip(names, types, values)
                             for mark, p in [_literal(t, v)]))
        changed += _sql(connection, f"UPDATE {table} SET {', '.join(sets)} WHERE id = %s", (*params, key))
    changed += _sql(connection, f"DELETE FROM {table} WHERE id % 2 = 0")
    _sql(connection, "SET SESSION binlog_row_image = 'FULL'")

    stream = BinLogStreamReader(
        connection_settings={"host": mariadb.host, "port": mariadb.port, "user": mariadb.user,
                             "password": mariadb.password},
        server_id=9931, log_file=log_file, log_pos=log_pos, resume_stream=True, blocking=False,
        freeze_schema=True, only_tables=[table], only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    # the capture's schema-history names of fractional TIME columns
    fractional = frozenset(n for n, t in zip(names, types) if t.startswith("TIME(") and t != "TIME(0)")
    decoded = 0
    try:
        for event in stream:
            width = len(names) + 1
            ours = {fixes: row_images(event, fixes, fractional, width) for fixes in (False, True)}
            assert ours[False] is not None and ours[True] is not None, f"{types}: the event was left to the library"
            for fixes, images in ours.items():
                theirs = library_images(event, fixes, fractional)
                assert [_comparable(i) for i in images] == [_comparable(i) for i in theirs], (types, fixes)
            decoded += len(ours[True])
    finally:
        stream.close()
    assert decoded == changed
    _sql(connection, f"DROP TABLE {table}")

