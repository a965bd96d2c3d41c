"""In-memory schema model: what the DDL parser knows about each table at a binlog position.

Immutable values: every DDL statement produces new ``TableDef`` objects, so a structure handed
to the event builders never changes under them.

``ColumnDef.type_name`` is the canonical upper-case MySQL type ("INT", "VARCHAR", "DATETIME",
"ENUM", "GEOMETRY", ...), after aliases are resolved (INTEGER -> INT, BOOL -> BOOLEAN,
DEC/NUMERIC/FIXED -> DECIMAL, NVARCHAR -> VARCHAR, ...). ``type_expression`` is what the user
wrote (Debezium's ``typeExpression``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class DefaultKind(Enum):
    NONE = "none"  # no DEFAULT clause
    NULL = "null"  # DEFAULT NULL
    LITERAL = "literal"  # a constant: text holds its value as written (unquoted)
    CURRENT_TIMESTAMP = "current_timestamp"  # CURRENT_TIMESTAMP / NOW() / LOCALTIME...
    EXPRESSION = "expression"  # any other expression: no default in the Connect schema


@dataclass(frozen=True, slots=True)
class ColumnDefault:
    kind: DefaultKind = DefaultKind.NONE
    text: str | None = None
    # b'..' / 0x.. literals carry their bits/hex digits; numbers and strings their text
    literal_kind: str = "string"  # string | number | bits | hex | bool


NO_DEFAULT = ColumnDefault()


@dataclass(frozen=True, slots=True)
class ColumnDef:
    name: str
    type_name: str
    type_expression: str
    length: int | None = None
    scale: int | None = None
    unsigned: bool = False
    zerofill: bool = False
    enum_values: tuple[str, ...] = ()
    charset: str | None = None
    collation: str | None = None
    optional: bool = True
    auto_increment: bool = False
    generated: bool = False
    default: ColumnDefault = NO_DEFAULT
    srid: int | None = None
    comment: str | None = None

    @property
    def is_binary_string(self) -> bool:
        """BINARY/VARBINARY/BLOB family (Debezium keeps CHAR ... CHARACTER SET binary a string)."""
        return self.type_name in BINARY_TYPES


BINARY_TYPES = frozenset({"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"})
CHARACTER_TYPES = frozenset(
    {"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON"}
)


@dataclass(frozen=True, slots=True)
class TableId:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def quoted(self) -> str:
        """Debezium's tableChanges id: ``"inventory"."customers"``."""
        return f'"{self.database}"."{self.table}"'


@dataclass(frozen=True, slots=True)
class TableDef:
    id: TableId
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    # unique keys (name, columns); the first fully NOT NULL one stands in for a missing PK
    unique_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()
    default_charset: str | None = None
    comment: str | None = None
    temporary: bool = False
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.clear()
        for i, col in enumerate(self.columns):
            self._index[col.name.lower()] = i

    def column(self, name: str) -> ColumnDef | None:
        i = self._index.get(name.lower())
        return None if i is None else self.columns[i]

    def column_position(self, name: str) -> int:
        """0-based index of ``name``; -1 when absent (MySQL column names are case-insensitive)."""
        return self._index.get(name.lower(), -1)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The PK, or else (as Debezium's parser does) the first unique key of NOT NULL columns."""
        if self.primary_key:
            return self.primary_key
        for _name, cols in self.unique_keys:
            resolved = [self.column(c) for c in cols]
            if all(c is not None and not c.optional for c in resolved):
                return tuple(c.name for c in resolved if c is not None)
        return ()

    def with_columns(self, columns: list[ColumnDef] | tuple[ColumnDef, ...], **changes: object) -> TableDef:
        return replace(self, columns=tuple(columns), _index={}, **changes)  # type: ignore[arg-type]

    def evolve(self, **changes: object) -> TableDef:
        return replace(self, _index={}, **changes)  # type: ignore[arg-type]
