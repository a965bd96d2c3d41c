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

The Arrow filters here (``arrow_ranges_filter``, ``arrow_in_filter``) compare a stored column with
values from the batch, and the two sides need not share an Arrow type: Spark hands over ``string``
(``large_string`` with ``spark.sql.execution.arrow.useLargeVarTypes``, Spark 4's default) while a
table may read back ``string_view``, ``binary_view``, ``large_binary``, an extension ``uuid``, a
``date64`` or a timestamp of another unit, and Arrow refuses to compare mixed types ("Array type
doesn't match type of values set: string vs string_view"). The values are converted to the stored
column's type first; where no exact conversion exists the filter is left out (it only prunes: the
callers match exactly afterwards). Arrow's kernels lack view types altogether (pyarrow 26 cannot
even apply a filter's mask to a ``string_view`` column), so ``arrow_read`` reads such a dataset
unfiltered, as plain types, and filters in memory: slower, never wrong.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

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
    if _is_text(kind):
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


def arrow_ranges_filter(column: str, ranges: KeyRanges, stored: pa.DataType | None = None) -> pc.Expression | None:
    """The same bound as a filter for ``arrow_read`` (statistics prune Parquet row groups with it);
    ``stored``: the column's type in the dataset. None when the bounds cannot be typed so."""
    field, kind = pc.field(column), (None if stored is None else _plain_type(stored))
    expression = None
    for lo, hi in ranges:
        if kind is not None:
            typed = arrow_values_as(pa.array([lo, hi]), kind)
            if typed is None:
                return None
            lo_value, hi_value = typed[0], typed[1]
        else:
            lo_value, hi_value = pa.scalar(lo), pa.scalar(hi)
        term = (field == lo_value) if lo == hi else ((field >= lo_value) & (field <= hi_value))
        expression = term if expression is None else expression | term
    assert expression is not None, "no key ranges"
    return expression


def arrow_in_filter(schema: pa.Schema, column: str, values: pa.Array | pa.ChunkedArray) -> pc.Expression | None:
    """``column IN values`` as a filter for ``arrow_read`` over a dataset of ``schema``, nulls
    dropped; None when ``values`` cannot be converted exactly to the stored column's type."""
    typed = arrow_values_as(pc.drop_null(_plain(values)), _plain_type(schema.field(column).type))
    return None if typed is None else pc.field(column).isin(typed)


def arrow_read(dataset: ds.Dataset, where: pc.Expression | None = None,
               columns: list[str] | None = None) -> pa.Table:
    """``dataset.to_table(columns, filter=where)``, with view-typed and extension-typed columns read
    back as their plain or storage types (filtered in memory: Arrow's kernels lack those types), also
    where only some files store a column as a view type."""
    if all(_plain_type(f.type) == f.type for f in dataset.schema):
        try:
            return dataset.to_table(columns=columns, filter=where)
        except pa.ArrowNotImplementedError:
            # A file may store a column as a view type although the dataset's schema says plain (delta-rs
            # writes string_view): pruning by its statistics then needs kernels Arrow lacks.
            pass
    table = dataset.to_table()
    table = pa.table([_plain(table[name]) for name in table.column_names], names=table.column_names)
    if where is not None:
        table = table.filter(where)
    return table if columns is None else table.select(columns)


def _plain_type(kind: pa.DataType) -> pa.DataType:
    if isinstance(kind, pa.BaseExtensionType):
        return _plain_type(kind.storage_type)
    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    return kind


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Values of a view or extension type as their plain or storage type."""
    if isinstance(values.type, pa.BaseExtensionType):
        storage = (pa.chunked_array([c.storage for c in values.chunks], values.type.storage_type)
                   if isinstance(values, pa.ChunkedArray) else values.storage)
        return _plain(storage)
    plain = _plain_type(values.type)
    return values if plain == values.type else values.cast(plain)


def arrow_values_as(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | None:
    """``values`` in Arrow type ``target`` (a stored column's), or None without an exact conversion."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type == target:
        return values
    if isinstance(target, pa.BaseExtensionType):
        storage = arrow_values_as(values, target.storage_type) if not _is_text(values.type) else None
        if storage is None and _is_text(values.type) and target.extension_name == "arrow.uuid":
            storage = _uuid_bytes(values, target.storage_type)
        return None if storage is None else pa.ExtensionArray.from_storage(target, storage)
    if isinstance(values.type, pa.BaseExtensionType):
        return arrow_values_as(values.storage, target)
    if _is_text(values.type) and pa.types.is_fixed_size_binary(target) and target.byte_width == 16:
        return _uuid_bytes(values, target)
    try:
        converted = values.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    # ``safe`` refuses lossy numbers and truncated times; text and bytes must not cross over
    if _is_text(values.type) != _is_text(target) or _is_bytes(values.type) != _is_bytes(target):
        return None
    return converted


def _uuid_bytes(values: pa.Array, target: pa.DataType) -> pa.Array | None:
    """UUID text (how keys of type ``io.debezium.data.Uuid`` reach the batch) as 16 bytes."""
    try:
        return pa.array([None if v is None else uuid.UUID(v).bytes for v in values.to_pylist()], target)
    except ValueError:
        return None


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _is_bytes(kind: pa.DataType) -> bool:
    return (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind)
            or pa.types.is_fixed_size_binary(kind))


def ranges_predicate(column: str, ranges: KeyRanges, string_literal: Callable[[str], str]) -> str:
    """``(col BETWEEN a AND b OR col = c ...)`` over already-quoted ``column``."""
    def lit(value: KeyValue) -> str:
        return literal(value, string_literal)

    terms = [f"{column} = {lit(lo)}" if lo == hi else f"{column} BETWEEN {lit(lo)} AND {lit(hi)}" for lo, hi in ranges]
    return "(" + " OR ".join(terms) + ")"
