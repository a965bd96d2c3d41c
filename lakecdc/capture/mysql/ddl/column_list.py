"""Edits of a table's column list and keys, shared by CREATE TABLE and ALTER TABLE.

Column names are case-insensitive in MySQL, so every lookup lowers both sides; the names keep
the case they were written with. Columns are immutable: each edit returns new ``ColumnDef``s.
"""

from __future__ import annotations

from dataclasses import replace

from lakecdc.capture.mysql.ddl.model import CHARACTER_TYPES, ColumnDef, ColumnDefault
from lakecdc.capture.mysql.ddl.options import charset_of_collation

# FIRST, or AFTER <column>, as written after an added or changed column; None: at the end
Placement = tuple[str, str | None] | None
UniqueKeys = list[tuple[str, tuple[str, ...]]]


def find(columns: list[ColumnDef], name: str) -> int:
    """Index of column ``name``, or -1."""
    lowered = name.lower()
    for i, c in enumerate(columns):
        if c.name.lower() == lowered:
            return i
    return -1


def place(columns: list[ColumnDef], col: ColumnDef, placement: Placement) -> list[ColumnDef]:
    if placement is None:
        return columns + [col]
    if placement[0] == "FIRST":
        return [col] + columns
    idx = find(columns, placement[1] or "")
    return columns[: idx + 1] + [col] + columns[idx + 1 :] if idx >= 0 else columns + [col]


def add_column(columns: list[ColumnDef], col: ColumnDef, placement: Placement, if_not_exists: bool) -> list[ColumnDef]:
    if find(columns, col.name) >= 0:
        if if_not_exists:
            return columns
        columns = without(columns, col.name)
    return place(columns, col, placement)


def without(columns: list[ColumnDef], name: str) -> list[ColumnDef]:
    lowered = name.lower()
    return [c for c in columns if c.name.lower() != lowered]


def replace_column(
    columns: list[ColumnDef], idx: int, col: ColumnDef, placement: Placement
) -> list[ColumnDef]:
    """Put ``col`` in place of ``columns[idx]`` (MODIFY/CHANGE); it keeps the old character set
    when it names none, as MySQL keeps the column's charset."""
    old = columns[idx]
    if col.charset is None and col.type_name in CHARACTER_TYPES:
        col = replace(col, charset=old.charset)
    if placement is None:
        return columns[:idx] + [col] + columns[idx + 1 :]
    return place(columns[:idx] + columns[idx + 1 :], col, placement)


def renamed_in(names: tuple[str, ...], old: str, new: str) -> tuple[str, ...]:
    """A key's column names with ``old`` renamed to ``new``."""
    lowered = old.lower()
    return tuple(new if c.lower() == lowered else c for c in names)


def renamed_in_uniques(uniques: UniqueKeys, old: str, new: str) -> UniqueKeys:
    return [(n, renamed_in(cols, old, new)) for n, cols in uniques]


def renamed(col: ColumnDef, name: str) -> ColumnDef:
    return replace(col, name=name)


def with_default(col: ColumnDef, default: ColumnDefault) -> ColumnDef:
    return replace(col, default=default)


def convert_charset(col: ColumnDef, charset: str) -> ColumnDef:
    """CONVERT TO CHARACTER SET: every character column except binary-charset ones changes."""
    if col.type_name in CHARACTER_TYPES and (col.charset or "").lower() != "binary":
        return replace(col, charset=charset)
    return col


def resolve_charset(col: ColumnDef, table_charset: str | None) -> ColumnDef:
    """A character column without a charset gets the table's (or its collation's)."""
    if col.type_name in CHARACTER_TYPES and col.charset is None:
        charset = table_charset
        if charset is None and col.collation:
            charset = charset_of_collation(col.collation)
        return replace(col, charset=charset)
    return col


def apply_pk_not_null(columns: list[ColumnDef], pk: tuple[str, ...]) -> list[ColumnDef]:
    """Primary key columns are NOT NULL whether or not the DDL says so."""
    if not pk:
        return list(columns)
    keys = {c.lower() for c in pk}
    return [replace(c, optional=False) if c.name.lower() in keys and c.optional else c for c in columns]


def canonical_names(columns: list[ColumnDef], names: tuple[str, ...]) -> tuple[str, ...]:
    """Key column names spelled as the columns are (KEY (ID) on column `id` -> ("id",))."""
    out = []
    for n in names:
        idx = find(columns, n)
        out.append(columns[idx].name if idx >= 0 else n)
    return tuple(out)
