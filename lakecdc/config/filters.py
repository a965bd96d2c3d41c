"""Table, column and key selection from Debezium's regex list properties.

Debezium semantics, kept exactly:

- a list property is comma-separated regular expressions (``\\,`` keeps a literal comma inside one
  expression, e.g. ``public.t_\\d{1\\,3}``);
- each expression must match the *whole* identifier (anchored), case-insensitively;
- tables are identified as ``<schema>.<table>`` (PostgreSQL, SQL Server, Oracle) or
  ``<database>.<table>`` (MySQL); columns as ``<table id>.<column>``;
- an include list and the matching exclude list are mutually exclusive;
- ``message.key.columns`` is ``<table regex>:<col>,<col>;<table regex>:<col>`` and overrides the
  primary key used for the record key.

>>> f = TableFilter(table_include=compile_regex_list("public\\\\.orders.*", "table.include.list"))
>>> f.matches("public", "orders_2024"), f.matches("public", "customers")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lakecdc.errors import ConfigError

Patterns = tuple[re.Pattern[str], ...]


def split_list(value: str | None, separator: str = ",") -> list[str]:
    """Split on unescaped ``separator``; ``\\<sep>`` stays as a literal separator; items trimmed."""
    if not value:
        return []
    items: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value) and value[i + 1] == separator:
            current.append(separator)
            i += 2
            continue
        if ch == separator:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    items.append("".join(current).strip())
    return [item for item in items if item]


def compile_regex_list(value: str | None, property_name: str) -> Patterns:
    """Compile a Debezium regex list; a bad expression is a ``ConfigError`` naming the property."""
    patterns = []
    for expression in split_list(value):
        try:
            patterns.append(re.compile(expression, re.IGNORECASE))
        except re.error as exc:
            raise ConfigError(
                f"property '{property_name}': '{expression}' is not a valid regular expression ({exc})",
                property_name,
            ) from None
    return tuple(patterns)


def any_full_match(patterns: Patterns, text: str) -> bool:
    return any(p.fullmatch(text) for p in patterns)


@dataclass(frozen=True)
class TableFilter:
    """Which tables a connector captures.

    ``matches(schema, table)`` checks ``schema``/``database`` lists on the first part and the table
    lists on ``"<schema>.<table>"``; ``excluded_schemas`` are always skipped (system catalogs).
    """

    table_include: Patterns = ()
    table_exclude: Patterns = ()
    schema_include: Patterns = ()
    schema_exclude: Patterns = ()
    excluded_schemas: frozenset[str] = frozenset()

    def matches(self, schema: str, table: str) -> bool:
        if schema in self.excluded_schemas:
            return False
        if self.schema_include and not any_full_match(self.schema_include, schema):
            return False
        if self.schema_exclude and any_full_match(self.schema_exclude, schema):
            return False
        qualified = f"{schema}.{table}"
        if self.table_include:
            return any_full_match(self.table_include, qualified)
        return not any_full_match(self.table_exclude, qualified)

    def matches_schema(self, schema: str) -> bool:
        """True when some table of ``schema`` could be captured (for schema-level pruning)."""
        if schema in self.excluded_schemas:
            return False
        if self.schema_include:
            return any_full_match(self.schema_include, schema)
        return not any_full_match(self.schema_exclude, schema)


@dataclass(frozen=True)
class ColumnFilter:
    """``column.include.list`` / ``column.exclude.list`` on ``"<schema>.<table>.<column>"``."""

    include: Patterns = ()
    exclude: Patterns = ()

    def matches(self, schema: str, table: str, column: str) -> bool:
        qualified = f"{schema}.{table}.{column}"
        if self.include:
            return any_full_match(self.include, qualified)
        return not any_full_match(self.exclude, qualified)

    @property
    def is_trivial(self) -> bool:
        """No column is ever dropped: callers skip per-column checks entirely."""
        return not self.include and not self.exclude


@dataclass(frozen=True)
class KeyColumns:
    """Parsed ``message.key.columns``, with Debezium's ``Key.CustomKeyMapper`` semantics.

    Each ``<table regex>:<col>,<col>`` entry becomes the regexes ``<table regex>.<col>`` (the
    column part is a regex too), matched case-insensitively against ``<schema>.<table>.<column>``.
    The key is, for each regex in order, the table's columns it matches in table order, each
    column once; no match at all means the primary key (``None``).

    >>> k = KeyColumns.parse("inventory.customers:pk1,pk2;(.*).purchaseorders:pk3")
    >>> k.for_table("inventory", "customers", ["pk2", "x", "pk1"]), k.for_table("a", "b", ["id"])
    (['pk1', 'pk2'], None)
    """

    rules: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = field(default_factory=tuple)
    column_patterns: tuple[re.Pattern[str], ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, value: str | None, property_name: str = "message.key.columns") -> KeyColumns:
        rules = []
        column_patterns = []
        for entry in split_list(value, ";"):
            table_regex, sep, columns = entry.rpartition(":")
            names = tuple(split_list(columns))
            if not sep or not table_regex.strip() or not names:
                raise ConfigError(
                    f"property '{property_name}': '{entry}' is not '<table regex>:<column>[,<column>...]'",
                    property_name,
                )
            table_part = table_regex.strip()
            (pattern,) = compile_regex_list(table_part.replace(",", "\\,"), property_name)
            rules.append((pattern, names))
            for name in names:
                (column_pattern,) = compile_regex_list(f"{table_part}.{name}".replace(",", "\\,"), property_name)
                column_patterns.append(column_pattern)
        return cls(tuple(rules), tuple(column_patterns))

    def for_table(self, schema: str, table: str, columns: Sequence[str] | None = None) -> list[str] | None:
        """Key columns of ``schema.table`` or None (use the primary key).

        Pass the table's ``columns`` (in table order) for Debezium's exact result; without them
        the configured names of the entries whose table regex matches are returned as written.
        """
        if columns is None:
            qualified = f"{schema}.{table}"
            named = [n for pattern, names in self.rules if pattern.fullmatch(qualified) for n in names]
            return list(dict.fromkeys(named)) or None
        prefix = f"{schema}.{table}."
        chosen: list[str] = []
        for pattern in self.column_patterns:
            for column in columns:
                if column not in chosen and pattern.fullmatch(prefix + column):
                    chosen.append(column)
        return chosen or None

    def __bool__(self) -> bool:
        return bool(self.rules)


def check_exclusive(pairs: Iterable[tuple[str, str | None, str, str | None]]) -> None:
    """Raise when both members of an include/exclude pair are set (Debezium refuses that too)."""
    for include_name, include, exclude_name, exclude in pairs:
        if include and exclude:
            raise ConfigError(
                f"properties '{include_name}' and '{exclude_name}' cannot both be set; use one of them",
                include_name,
            )


def parse_table_list(value: str | None) -> Sequence[str]:
    """A plain comma list of fully qualified table names (no regex)."""
    return split_list(value)
