"""The Oracle connector's table structures as the DDL in the schema history leaves them.

Immutable values: each statement produces new ``OracleTable`` objects, so a structure handed to
the event builders never changes under them. Columns are ``ColumnInfo`` (ALL_TAB_COLUMNS' shape),
so a structure from the dictionary and one from parsed DDL feed the same type mapping.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from lakecdc.capture.oracle.connection import ColumnInfo


@dataclass(frozen=True)
class OracleTable:
    owner: str
    name: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...] = ()
    primary_key_name: str | None = None
    #: the first UNIQUE constraint: the event key when there is no primary key (as the dictionary read)
    unique_key: tuple[str, ...] = ()

    @property
    def key_columns(self) -> tuple[str, ...]:
        return self.primary_key or self.unique_key

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name == name), None)

    def with_columns(self, columns: list[ColumnInfo]) -> OracleTable:
        """Columns renumbered 1..n (COLUMN_ID order)."""
        return replace(self, columns=tuple(replace(c, position=i) for i, c in enumerate(columns, 1)))


@dataclass(frozen=True)
class TableChange:
    type: str  # CREATE | ALTER | DROP
    table: OracleTable
    previous: tuple[str, str] | None = None  # (owner, name) before a RENAME


class OracleTables:
    """``(owner, table) -> OracleTable``; names as Oracle stores them (unquoted names upper case)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], OracleTable] = {}

    def get(self, owner: str, name: str) -> OracleTable | None:
        return self._tables.get((owner, name))

    def put(self, table: OracleTable) -> None:
        self._tables[(table.owner, table.name)] = table

    def remove(self, owner: str, name: str) -> OracleTable | None:
        return self._tables.pop((owner, name), None)

    def __iter__(self) -> Iterator[OracleTable]:
        return iter(list(self._tables.values()))

    def __len__(self) -> int:
        return len(self._tables)
