"""Key ranges of a batch: what lets a silver MERGE skip the files and row groups it cannot touch.

A MERGE must find the stored row of every key in the batch. Without a hint the engine reads the
key column of the whole table; with the batch's keys summed up as a few ranges on the first key
column, added to the MERGE's ON condition as ``t.k BETWEEN lo AND hi OR ...``, Iceberg and
delta-rs prune every data file (and Iceberg every Parquet row group) whose key statistics fall
outside them. Silver tables are written sorted by key, so their files and row groups cover
narrow key ranges.

This pays off where changes cluster: inserts of new keys, and updates and deletes of recent rows
(orders, events, sessions: most CDC tables). Changes spread uniformly over an old table cover its
whole key range, and the ranges then prune nothing (and cost nothing either).

Ranges are built for integer and string keys; other key types (and batches without keys) get
none, which means "no pruning", never a wrong result: every key of the batch lies inside its
ranges by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KeyValue = Union[int, str]
KeyRanges = tuple[tuple[KeyValue, KeyValue], ...]

#: At most this many ranges per batch: enough to cut out a few stray old keys, few enough that
#: the predicate stays cheap to evaluate per file and row group.
MAX_RANGES = 8


def arrow_key_ranges(values: pa.ChunkedArray | pa.Array, max_ranges: int = MAX_RANGES) -> KeyRanges | None:
    """Ranges covering every non-null value of ``values`` (a key column), or None for no pruning.

    Integer keys are split at the ``max_ranges - 1`` widest gaps between consecutive distinct
    values; string keys (no gap to measure) get one ``[min, max]`` range.
    """
    values = pc.drop_null(values)
    if len(values) == 0:
        return None
    kind = values.type
    if pa.types.is_integer(kind):
        return integer_ranges(np.unique(values.to_numpy()), max_ranges)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        bounds = pc.min_max(values)
        return ((bounds["min"].as_py(), bounds["max"].as_py()),)
    return None


def integer_ranges(distinct_sorted: np.ndarray, max_ranges: int = MAX_RANGES) -> KeyRanges:
    """Split sorted distinct integers into at most ``max_ranges`` ranges at the widest gaps
    (adjacent integers are never split: no stored key can lie between them)."""
    # int64 differences of sorted distinct values are positive; the float view only ranks them
    gaps = np.diff(distinct_sorted).astype(np.float64)
    candidates = np.flatnonzero(gaps > 1)
    cut_count = min(max_ranges - 1, len(candidates))
    cuts = np.sort(candidates[np.argsort(gaps[candidates], kind="stable")[len(candidates) - cut_count:]])
    starts = np.concatenate(([0], cuts + 1))
    ends = np.concatenate((cuts, [len(distinct_sorted) - 1]))
    return tuple((int(distinct_sorted[s]), int(distinct_sorted[e])) for s, e in zip(starts, ends))


def literal(value: KeyValue, string_literal: Callable[[str], str]) -> str:
    """A SQL literal of a key bound; strings spelled by the dialect's ``string_literal``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"key range bound {value!r} is neither an integer nor a string")
    return str(value) if isinstance(value, int) else string_literal(value)


def arrow_ranges_filter(column: str, ranges: KeyRanges) -> pc.Expression:
    """The same bound as a pyarrow dataset filter (statistics prune Parquet row groups with it)."""
    field = pc.field(column)
    expression = None
    for lo, hi in ranges:
        term = (field == lo) if lo == hi else ((field >= lo) & (field <= hi))
        expression = term if expression is None else expression | term
    assert expression is not None, "no key ranges"
    return expression


def ranges_predicate(column: str, ranges: KeyRanges, string_literal: Callable[[str], str]) -> str:
    """``(col BETWEEN a AND b OR col = c ...)`` over already-quoted ``column``."""
    def lit(value: KeyValue) -> str:
        return literal(value, string_literal)

    terms = [f"{column} = {lit(lo)}" if lo == hi else f"{column} BETWEEN {lit(lo)} AND {lit(hi)}" for lo, hi in ranges]
    return "(" + " OR ".join(terms) + ")"
