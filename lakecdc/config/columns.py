"""Column masking rules: ``column.truncate.to.<n>.chars``, ``column.mask.with.<n>.chars`` and
``column.mask.hash.<algorithm>.with.salt.<salt>`` (each a regex list on ``<table id>.<column>``).

>>> rules = parse_column_rules({"20.chars": "public.t.note"}, {}, {"SHA-256.with.salt.x1": "public.t.email"})
>>> [(r.kind, r.length, r.algorithm, r.salt) for r in rules]
[('truncate', 20, None, None), ('hash', None, 'SHA-256', 'x1')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lakecdc.config.filters import compile_regex_list
from lakecdc.errors import ConfigError


class ColumnRule:
    """One ``column.mask.with.<n>.chars`` / ``column.truncate.to.<n>.chars`` /
    ``column.mask.hash.<algorithm>.with.salt.<salt>`` entry, its regexes on ``<table id>.<column>``."""

    __slots__ = ("kind", "length", "algorithm", "salt", "patterns", "property_name")

    def __init__(self, kind: str, property_name: str, patterns: tuple[re.Pattern[str], ...], *,
                 length: int | None = None, algorithm: str | None = None, salt: str | None = None) -> None:
        self.kind, self.property_name, self.patterns = kind, property_name, patterns
        self.length, self.algorithm, self.salt = length, algorithm, salt

    def applies_to(self, table_id: str, column: str) -> bool:
        qualified = f"{table_id}.{column}"
        return any(p.fullmatch(qualified) for p in self.patterns)

    def __repr__(self) -> str:
        return f"ColumnRule({self.property_name!r})"


def parse_column_rules(truncate_to: Mapping[str, str], mask_with: Mapping[str, str],
                       mask_hash: Mapping[str, str]) -> tuple[ColumnRule, ...]:
    """Rules in a stable order: truncations, then masks, then hashes (Debezium applies them so)."""
    rules: list[ColumnRule] = []
    for suffix, value in sorted(truncate_to.items()):
        name = f"column.truncate.to.{suffix}"
        rules.append(ColumnRule("truncate", name, compile_regex_list(value, name), length=_chars(suffix, name)))
    for suffix, value in sorted(mask_with.items()):
        name = f"column.mask.with.{suffix}"
        rules.append(ColumnRule("mask", name, compile_regex_list(value, name), length=_chars(suffix, name)))
    for suffix, value in sorted(mask_hash.items()):
        name = f"column.mask.hash.{suffix}"
        match = re.fullmatch(r"(?:(v1|v2)\.)?([^.]+(?:\.[^.]+)*?)\.with\.salt\.(.+)", suffix)
        if not match:
            raise ConfigError(f"property '{name}' is not 'column.mask.hash.<algorithm>.with.salt.<salt>'", name)
        rules.append(ColumnRule("hash", name, compile_regex_list(value, name),
                                algorithm=match.group(2), salt=match.group(3)))
    return tuple(rules)


def _chars(suffix: str, name: str) -> int:
    match = re.fullmatch(r"(\d+)\.chars", suffix)
    if not match:
        raise ConfigError(f"property '{name}' must end with '.<number>.chars'", name)
    return int(match.group(1))
