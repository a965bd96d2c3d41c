"""A DB-API 2.0 connection that replays recorded Oracle result sets (no Oracle runs here).

It has the shape of a python-oracledb connection as the connector uses it: ``cursor()`` with
``execute(sql, parameters)``, ``description`` (7-item entries whose type code is an ``oracledb``
``DB_TYPE_*``), ``arraysize``, ``fetchone/fetchmany/fetchall``, ``var()``; the connection's
``outputtypehandler`` is honoured the way oracledb honours it (the handler is called per column
with the cursor and the column's metadata; a ``cursor.var(decimal.Decimal)`` it returns makes the
column's values ``Decimal``).

Each statement the connector may issue is *recorded*: normalised SQL text -> a handler
``handler(binds) -> (description, rows)``. An unrecorded statement raises ``ReplayMismatchError``
at once, naming the statement, so a change in the SQL the connector issues fails loudly.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import oracledb

Description = list[tuple[str, Any, None, None, None, None, bool]]
Handler = Callable[[dict[str, Any]], tuple[Description | None, list[tuple[Any, ...]]]]

_WS = re.compile(r"\s+")


class ReplayMismatchError(AssertionError):
    """The connector issued a statement with no recording."""


def normalize(sql: str) -> str:
    return _WS.sub(" ", sql.strip())


def describe(*columns: tuple[str, Any]) -> Description:
    """``describe(("SCN", oracledb.DB_TYPE_NUMBER), ...)`` -> a cursor.description."""
    return [(name, type_code, None, None, None, None, True) for name, type_code in columns]


@dataclass
class _FetchInfo:
    """What oracledb passes an output type handler (the fields the connector's handler reads)."""

    name: str
    type_code: Any


@dataclass
class _Var:
    type: Any
    arraysize: int


class ReplayCursor:
    def __init__(self, conn: ReplayConnection) -> None:
        self.conn = conn
        self.arraysize = 100
        self.description: Description | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._at = 0
        self.closed = False

    def var(self, typ: Any, arraysize: int = 1, **_: Any) -> _Var:
        return _Var(typ, arraysize)

    def execute(self, statement: str, parameters: Any = None) -> None:
        if self.closed or self.conn.closed:
            raise oracledb.InterfaceError("DPY-1006: cursor is not open")
        # positional binds (:1, :2 ...) come as a sequence, named ones as a mapping
        binds = dict(enumerate(parameters, 1)) if isinstance(parameters, (list, tuple)) else dict(parameters or {})
        key = normalize(statement)
        self.conn.executed.append((key, binds))
        handler = self.conn.handlers.get(key)
        if handler is None:
            for pattern, h in self.conn.pattern_handlers:
                if pattern.fullmatch(key):
                    handler = h
                    break
        if handler is None:
            raise ReplayMismatchError(f"unrecorded statement: {key}  binds={binds}")
        description, rows = handler(binds)
        self.description = description
        # typed as fetched, as python-oracledb converts each fetched block (a recorded result set is not
        # copied whole: tests measure what the connector itself holds)
        self._rows = rows if description else []
        self._at = 0

    def _typed(self, row: Sequence[Any]) -> tuple[Any, ...]:
        assert self.description is not None
        if len(row) != len(self.description):
            raise ReplayMismatchError(f"recorded row {row!r} does not fit {self.description!r}")
        handler = self.conn.outputtypehandler
        if handler is None:
            return tuple(row)
        out = []
        for value, (name, type_code, *_rest) in zip(row, self.description):
            var = handler(self, _FetchInfo(name, type_code))
            if var is not None and var.type is decimal.Decimal and value is not None:
                value = decimal.Decimal(str(value))
            out.append(value)
        return tuple(out)

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._typed(self._rows[self._at - 1])

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = size or self.arraysize
        block = self._rows[self._at:self._at + n]
        self._at += len(block)
        return [self._typed(row) for row in block]

    def fetchall(self) -> list[tuple[Any, ...]]:
        block = self._rows[self._at:]
        self._at = len(self._rows)
        return [self._typed(row) for row in block]

    def __iter__(self) -> Any:
        return iter(self.fetchone, None)

    def close(self) -> None:
        self.closed = True


class ReplayConnection:
    def __init__(self, handlers: dict[str, Handler] | None = None,
                 pattern_handlers: list[tuple[re.Pattern[str], Handler]] | None = None) -> None:
        self.handlers = {normalize(k): v for k, v in (handlers or {}).items()}
        self.pattern_handlers = pattern_handlers or []
        self.outputtypehandler: Any = None
        self.executed: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    def cursor(self) -> ReplayCursor:
        if self.closed:
            raise oracledb.InterfaceError("DPY-1001: not connected to database")
        return ReplayCursor(self)

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
