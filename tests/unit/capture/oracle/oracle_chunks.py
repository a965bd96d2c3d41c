"""Answers an incremental snapshot's maximum-key and chunk statements from a recorded table, with
Oracle's semantics for the types a key can have (NUMBER, VARCHAR2, DATE, TIMESTAMP).

Recorded table rows hold NUMBER as int, VARCHAR2 as str, DATE as a ``datetime`` (whole seconds) and
TIMESTAMP as its value in ``YYYY-MM-DD HH:MM:SS.fffffffff`` text (nanoseconds, which no Python
type carries). What the database and python-oracledb do is followed where it decides the result:

- a bare ``"C"`` select item returns NUMBER and DATE as they are and TIMESTAMP as a ``datetime``
  (python-oracledb keeps microseconds; the nanoseconds are gone); ``TO_CHAR("C", fmt) AS "C"``
  returns the text in ``fmt``, and ORDER BY "C" then sorts that text (an alias wins over a column);
- a bind compared with a column: ``TO_DATE(:n, fmt)`` / ``TO_TIMESTAMP(:n, fmt)`` parse text in
  ``fmt`` (anything else fails as ORA-01858/ORA-01861 would); a bare ``:n`` holding text is converted
  to the column's type with the session's NLS formats (``connection.NLS_SETUP``); a bare ``:n``
  holding a ``datetime`` is bound as DATE, python-oracledb's default, which drops the fraction.

WHERE is ``(<key after last>) AND (NOT (<key after max>)) [AND (condition)]`` as ``key_after``
writes it: its binds are grouped per bound (n(n+1)/2 for an n-column key, the last n of a group
being the key values). The additional condition is not evaluated.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import oracledb
from oracle_recorded import Table
from oracle_replay import ReplayMismatchError, describe

STATEMENT = re.compile(r'SELECT (.+) FROM "([^"]+)"\."([^"]+)"( WHERE .*)? ORDER BY (.+) FETCH FIRST (\d+) ROWS ONLY')
_ITEM = re.compile(r'"(\w+)"|TO_CHAR\("(\w+)", \'([^\']*)\'\) AS "(\w+)"')
_BIND = re.compile(r"(TO_DATE|TO_TIMESTAMP)\(:(\d+), '([^']*)'\)|:(\d+)")
_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?")
NLS = {"DATE": "YYYY-MM-DD HH24:MI:SS", "TIMESTAMP": "YYYY-MM-DD HH24:MI:SS.FF9"}
Instant = tuple[dt.datetime, int]  #: whole seconds and nanoseconds


def kind(data_type: str) -> str:
    return "TIMESTAMP" if data_type.startswith("TIMESTAMP") else data_type


def parse(text: str, fmt: str) -> Instant:
    """TO_DATE / TO_TIMESTAMP of ``text`` in one of the two formats used here."""
    if fmt not in NLS.values() or not isinstance(text, str):
        raise ReplayMismatchError(f"no conversion of {text!r} with format {fmt!r} is recorded")
    m = _TEXT.fullmatch(text)
    if m is None or (m.group(2) and fmt == NLS["DATE"]):
        raise oracledb.DatabaseError(f"ORA-01861: literal does not match format string ({text!r}, {fmt!r})")
    return dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"), int((m.group(2) or "").ljust(9, "0"))


def stored(value: Any, data_type: str) -> Any:
    """A recorded column value as the database compares it."""
    k = kind(data_type)
    if k == "NUMBER":
        return decimal.Decimal(str(value))
    if k == "DATE":
        return value, 0
    if k == "TIMESTAMP":
        return parse(value, NLS["TIMESTAMP"])
    return value


def bound(value: Any, data_type: str, convert: tuple[str, str] | None) -> Any:
    """A bind value compared with a column of ``data_type``, as the database sees it."""
    k = kind(data_type)
    if convert is not None:
        function, fmt = convert
        if (function == "TO_DATE") != (k == "DATE") or fmt != NLS[k]:
            raise ReplayMismatchError(f"{function}(.., '{fmt}') compared with a {data_type} column")
        return parse(value, fmt)
    if k == "NUMBER":
        return decimal.Decimal(str(value))
    if k in NLS:
        if isinstance(value, dt.datetime):  # bound as DATE: the fraction is dropped
            return value.replace(microsecond=0), 0
        return parse(value, NLS[k])  # implicit conversion with the session's format
    return value


def selected(value: Any, data_type: str, fmt: str | None) -> Any:
    """A column value as a select item returns it."""
    k = kind(data_type)
    if fmt is not None:
        if k != "TIMESTAMP" or fmt != NLS["TIMESTAMP"]:
            raise ReplayMismatchError(f"TO_CHAR of a {data_type} column with {fmt!r} is not recorded")
        seconds, nanos = parse(value, fmt)
        return f"{seconds:%Y-%m-%d %H:%M:%S}.{nanos:09d}"
    if k == "TIMESTAMP":
        seconds, nanos = parse(value, NLS["TIMESTAMP"])
        return seconds.replace(microsecond=nanos // 1000)
    return value


def db_type(data_type: str, fmt: str | None) -> Any:
    k = kind(data_type)
    if fmt is not None:
        return oracledb.DB_TYPE_VARCHAR
    return {"NUMBER": oracledb.DB_TYPE_NUMBER, "DATE": oracledb.DB_TYPE_DATE,
            "TIMESTAMP": oracledb.DB_TYPE_TIMESTAMP}.get(k, oracledb.DB_TYPE_VARCHAR)


def answer(table: Table, statement: str, binds: dict[int, Any]) -> Any:
    """``(description, rows)`` of a maximum-key or chunk statement on ``table``."""
    match = STATEMENT.fullmatch(statement)
    if match is None:
        raise ReplayMismatchError(f"not a chunk statement: {statement}")
    types = {c[0]: c[1] for c in table.columns}
    names = [c[0] for c in table.columns]
    items = [(m.group(1) or m.group(2), m.group(3)) for m in _ITEM.finditer(match.group(1))]
    order = [c.strip().split()[0].strip('"') for c in match.group(5).split(",")]
    descending = "DESC" in match.group(5)
    formats = dict(items)

    def sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        # ORDER BY "C" names the TO_CHAR alias when there is one: the text is sorted then
        return tuple(selected(row[names.index(c)], types[c], formats[c]) if formats.get(c)
                     else stored(row[names.index(c)], types[c]) for c in order)

    def key_of(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(stored(row[names.index(c)], types[c]) for c in order)

    # the bind numbers in order of appearance, each with its conversion (None: a bare :n)
    marks = [(int(m.group(2) or m.group(4)), (m.group(1), m.group(3)) if m.group(1) else None)
             for m in _BIND.finditer(match.group(4) or "")]
    n = len(order)
    per = n * (n + 1) // 2
    if len(marks) % per:
        raise ReplayMismatchError(f"{len(marks)} binds do not make bounds of a {n}-column key: {statement}")
    bounds = []
    for start in range(0, len(marks), per):
        group = marks[start:start + per][per - n:]
        bounds.append(tuple(bound(binds[i], types[c], conv) for (i, conv), c in zip(group, order)))
    rows = sorted(table.rows, key=sort_key, reverse=descending)
    if len(bounds) == 2:
        rows = [r for r in rows if key_of(r) > bounds[0]]
    if bounds:
        rows = [r for r in rows if key_of(r) <= bounds[-1]]
    rows = rows[:int(match.group(6))]
    out = [tuple(selected(r[names.index(c)], types[c], fmt) for c, fmt in items) for r in rows]
    return describe(*[(c, db_type(types[c], fmt)) for c, fmt in items]), out
