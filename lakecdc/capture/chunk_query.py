"""The statements an incremental snapshot reads a table with, written once for the SQL connectors.

Debezium's chunk query (``AbstractChunkQueryBuilder``) has one shape in every database::

    SELECT <key> FROM <table> [WHERE (condition)] ORDER BY <key DESC> <one row>        the maximum key
    SELECT <columns> FROM <table>
        WHERE (<key after last>) AND (NOT (<key after max>)) [AND (condition)]
        ORDER BY <key> <chunk size rows>                                                 a chunk

the key comparison written out (``k1 > ? OR (k1 = ? AND k2 > ?) ...``) so that the key's index
serves it. A database differs only in its :class:`ChunkDialect`: how it quotes identifiers, limits
the rows (``LIMIT`` / ``TOP`` / ``FETCH FIRST``), marks and converts bind values, and whether its
driver %-interpolates the statement (a ``%`` in the user's condition doubled then).
:class:`SqlChunkSnapshot` runs them for MySQL, SQL Server and Oracle. PostgreSQL reads its chunks
through ``COPY`` with row-value comparisons and text literals (``postgres/incremental.py``).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from lakecdc.capture.incremental import IncrementalSnapshot

#: A date-time key as text (``str(datetime)``, ISO, or a database's ``TO_CHAR``): date, time to the
#: second, fraction digits; how a dialect binds a temporal key it restored from the offset
DATETIME_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?")


class ChunkDialect(ABC):
    """What a database writes its own way. The defaults are those of a driver with ``%s`` markers
    that %-interpolates every statement, and ``LIMIT``."""

    @abstractmethod
    def quote(self, name: str) -> str:
        """A delimited identifier."""

    def limited(self, select: str, rest: str, rows: int) -> str:
        """``SELECT <select> <rest>`` returning at most ``rows`` rows (``rest`` from FROM to ORDER BY)."""
        return f"SELECT {select} {rest} LIMIT {rows}"

    def key_column(self, name: str) -> str:
        """A key column as the maximum-key query selects it: read as the chunk query reads it."""
        return self.quote(name)

    def marker(self, name: str) -> str:
        """The bind marker a value compared with key column ``name`` takes (``%s`` based)."""
        return "%s"

    def param(self, name: str, value: Any) -> Any:
        """A key value (read from the table or restored from the offset) as bound for ``name``."""
        return value

    def numbered(self, text: str) -> str:
        """The key bounds' ``%s`` markers as the driver wants them (before the condition is added)."""
        return text

    def condition(self, text: str, with_params: bool) -> str:
        """The additional condition as written into the statement."""
        return text.replace("%", "%%")  # the driver %-interpolates the statement


def key_after(columns: list[str], values: list[Any], quote: Callable[[str], str],
              marker: Callable[[str], str] = lambda _: "%s") -> tuple[str, list[Any]]:
    """``key > values`` in key order, as Debezium writes it (``k1 > ? OR (k1 = ? AND k2 > ?) ...``,
    so that the key's index serves it), with ``marker(column)`` markers and the parameters in order."""
    terms: list[str] = []
    params: list[Any] = []
    for i, column in enumerate(columns):
        equal = [f"{quote(c)} = {marker(c)}" for c in columns[:i]]
        terms.append("(" + " AND ".join(equal + [f"{quote(column)} > {marker(column)}"]) + ")")
        params.extend(values[:i + 1])
    return " OR ".join(terms), params


@dataclass(frozen=True)
class ChunkQueries:
    """The statements of one table: ``(statement, parameters)`` pairs."""

    dialect: ChunkDialect
    table: Sequence[str]  #: the table name's parts (database, schema, table), unquoted
    key: list[str]
    condition: str | None

    def max_key(self) -> tuple[str, list[Any]]:
        d = self.dialect
        select = ", ".join(d.key_column(c) for c in self.key)
        return self._statement(select, [], ", ".join(f"{d.quote(c)} DESC" for c in self.key), 1)

    def chunk(self, select: str, last: list[Any] | None, maximum: list[Any], rows: int) -> tuple[str, list[Any]]:
        after_max, max_params = self._after(maximum)
        bounds = [(f"NOT ({after_max})", max_params)]
        if last is not None:
            bounds.insert(0, self._after(last))
        return self._statement(select, bounds, ", ".join(self.dialect.quote(c) for c in self.key), int(rows))

    def _after(self, values: list[Any]) -> tuple[str, list[Any]]:
        d = self.dialect
        return key_after(self.key, [d.param(c, v) for c, v in zip(self.key, values)], d.quote, d.marker)

    def _statement(self, select: str, bounds: list[tuple[str, list[Any]]], order: str,
                   rows: int) -> tuple[str, list[Any]]:
        d = self.dialect
        params = [p for _, values in bounds for p in values]
        where = d.numbered(" AND ".join(f"({text})" for text, _ in bounds))
        if self.condition:
            condition = f"({d.condition(self.condition, bool(params))})"
            where = f"{where} AND {condition}" if where else condition
        table = ".".join(d.quote(part) for part in self.table)
        rest = f"FROM {table}{' WHERE ' + where if where else ''} ORDER BY {order}"
        return d.limited(select, rest, rows), params


class SqlChunkSnapshot(IncrementalSnapshot):
    """An incremental snapshot that reads its chunks with :class:`ChunkQueries`."""

    dialect: ClassVar[ChunkDialect]

    def chunk_dialect(self) -> ChunkDialect:
        """The dialect for the current table (``self._schema``)."""
        return self.dialect

    def chunk_table(self) -> Sequence[str]:
        """The current table's name parts, unquoted (``<schema>.<table>``; MySQL's database is its schema)."""
        assert self._table is not None
        return self._table.schema or "", self._table.table

    @abstractmethod
    def run_query(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The statement's rows; raises ``ChunkQueryError`` when the database refuses it."""

    def select_list(self) -> str:
        """The chunk query's columns, in ``column_names`` order."""
        return ", ".join(self.chunk_dialect().quote(c) for c in self._schema.column_names)

    def query_max_key(self) -> list[Any] | None:
        rows = self.run_query(*self._queries().max_key())
        return list(rows[0]) if rows else None

    def query_chunk(self) -> list[tuple[Any, ...]]:
        assert self.max_key is not None
        return self.run_query(*self._queries().chunk(self.select_list(), self.last_key, self.max_key,
                                                     self._chunk_size))

    def _queries(self) -> ChunkQueries:
        return ChunkQueries(self.chunk_dialect(), self.chunk_table(), self._chunk_columns, self.condition())
