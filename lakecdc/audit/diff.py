"""What changed in a silver table between two versions, by key.

``diff_versions(silver, v1, v2)`` compares the rows of version ``v1`` with those of ``v2``:

- ``added``: keys present in v2 only (rows as in v2);
- ``removed``: keys present in v1 only (rows as in v1);
- ``changed``: keys in both whose source columns differ, one row per changed cell::

    {"id": 1001, "column": "email", "before": "s@old.example", "after": "sally@example.com"}

lakecdc's own columns (``_seq``, ``_tx_id``...) are not compared unless ``include_metadata``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakecdc.audit.as_of import read_as_of
from lakecdc.audit.tables import AuditError, LakeTable, describe_value, key_columns, row_columns

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class VersionDiff:
    v1: int
    v2: int
    keys: tuple[str, ...]
    added: pd.DataFrame
    removed: pd.DataFrame
    changed: pd.DataFrame  # key columns + column, before, after

    @property
    def changed_keys(self) -> int:
        return 0 if self.changed.empty else len(self.changed[list(self.keys)].drop_duplicates())

    def summary(self) -> str:
        return (f"{len(self.added)} added, {len(self.removed)} removed, {self.changed_keys} changed "
                f"between versions {self.v1} and {self.v2}")


def same_value(a: Any, b: Any) -> bool:
    """Equality for table cells: nulls and NaNs equal each other, arrays compare by content."""
    a, b = describe_value(a), describe_value(b)
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return repr(a) == repr(b)


def _key_tuple(row: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(describe_value(row[k]) for k in keys)


def diff_frames(before: pd.DataFrame, after: pd.DataFrame, keys: tuple[str, ...],
                columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(added, removed, changed) between two row sets with the same key columns."""
    import pandas as pd

    old = {_key_tuple(r, keys): r for r in before.to_dict("records")}
    new = {_key_tuple(r, keys): r for r in after.to_dict("records")}
    added = after[[k not in old for k in new]] if len(after) else after
    removed = before[[k not in new for k in old]] if len(before) else before
    cells = []
    for key, row in new.items():
        previous = old.get(key)
        if previous is None:
            continue
        for column in columns:
            if column in keys:
                continue
            if not same_value(previous.get(column), row.get(column)):
                cells.append({**dict(zip(keys, key)), "column": column,
                              "before": describe_value(previous.get(column)), "after": describe_value(row.get(column))})
    changed = pd.DataFrame(cells, columns=[*keys, "column", "before", "after"])
    return added.reset_index(drop=True), removed.reset_index(drop=True), changed


def diff_versions(table: LakeTable, v1: int, v2: int, keys: tuple[str, ...] | list[str] | None = None,
                  include_metadata: bool = False) -> VersionDiff:
    """Rows added, removed and changed by key between versions ``v1`` and ``v2`` of a silver table.

    Key columns default to those of the table's delete ledger. Example::

        d = diff_versions(LakeTable.delta("/lake", "silver.customers"), 2, 5)
        print(d.summary()); d.changed
    """
    key_names = key_columns(table, keys)
    before, after = read_as_of(table, version=v1), read_as_of(table, version=v2)
    if "_is_deleted" in after.columns:  # soft-delete mode: a flagged row is gone for the reader
        before = before[before["_is_deleted"] != True]  # noqa: E712 - pandas element-wise
        after = after[after["_is_deleted"] != True]  # noqa: E712
    missing = [k for k in key_names if k not in after.columns]
    if missing:
        raise AuditError(f"{table}: key column(s) {missing} not in the table")
    names = list(after.columns) if include_metadata else row_columns(list(after.columns))
    added, removed, changed = diff_frames(before, after, key_names, names)
    return VersionDiff(v1, v2, key_names, added, removed, changed)
