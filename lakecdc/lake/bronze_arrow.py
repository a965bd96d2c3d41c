"""Bronze identity in Arrow: ``lakecdc.lake.bronze.spark_new_rows`` for a batch the driver holds.

The delta-rs writer appends Arrow. When the driver decoded the batch it has its rows as Arrow
already; sending every row through Spark for the identity and collecting them back cost a
delta-rs drain a third of its time. Only the row hash (``lakecdc.lake.bronze.row_hash``: Spark's
``xxhash64`` of Spark's JSON, which must stay one definition for every writer and release) is
computed by Spark, and comes back as one column beside each row's Kafka position (the writer checks
the order with it); the rest is here, the same rules:

1. one row per event within the batch: the first delivery (Kafka partition, offset) of each
   ``(position, op, key, row hash)``, and of each Kafka record for the counted events;
2. without the Kafka records bronze holds (replays), in the stored window;
3. positioned events (``_occurrence`` 0) without those whose ``(position, op, key, row hash)`` is
   stored, or ``(position, op, key)`` for stored rows from before the hash;
4. counted events (snapshot reads without a key) numbered per ``(position, op, row hash)`` in
   delivery order, from one above the highest number stored.

``position`` is ``_seq`` (PostgreSQL: without its rank, ``_seq[1:]``). Rows come back positioned
first, then counted, each group in the batch's order; bronze is a set, so the order is not part of
the contract (``tests/integration/ingest/test_bronze_arrow.py`` holds the result equal to Spark's).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.lake.bronze import KAFKA_POSITION
from lakecdc.lake.layout import OCCURRENCE, ROW_HASH, SEQ_LENGTH

_ROW = "__row"


def positions_comparable(*tables: pa.Table) -> bool:
    """Whether every ``_seq`` has ``SEQ_LENGTH`` numbers (what the flat comparison here needs)."""
    for table in tables:
        lengths = pc.list_value_length(table["_seq"])
        if table.num_rows and (lengths.null_count or pc.min_max(lengths).as_py() != {"min": SEQ_LENGTH,
                                                                                       "max": SEQ_LENGTH}):
            return False
    return True


def _identity(table: pa.Table, connector: str) -> pa.Table:
    """The comparison columns of ``table``: ``__p<i>`` (the position), ``_op``, ``__key``, and the
    rest of what the rules use, plus ``__row`` (the row's index)."""
    first = 1 if connector == "postgres" else 0
    seq = table["_seq"]
    columns = {f"__p{i}": pc.list_element(seq, i) for i in range(first, SEQ_LENGTH)}
    key_json, op = table["_key_json"].cast(pa.string()), table["_op"].cast(pa.string())
    columns.update({
        "_op": op,
        "__key": pc.fill_null(key_json, ""),
        "__counted": pc.and_(pc.equal(op, "r"), pc.is_null(key_json)),
        _ROW: pa.array(np.arange(table.num_rows, dtype=np.int64)),
    })
    for name in (ROW_HASH, OCCURRENCE, *KAFKA_POSITION):
        if name in table.column_names:
            columns[name] = table[name]
    return pa.table(columns)


def _anti(rows: pa.Table, stored: pa.Table, keys: list[str]) -> pa.Table:
    if stored.num_rows == 0 or rows.num_rows == 0:
        return rows
    stored = stored.select(keys).cast(rows.select(keys).schema)
    return rows.join(stored, keys=keys, join_type="left anti")


def arrow_new_rows(batch: pa.Table, stored: pa.Table | None, connector: str = "") -> pa.Table:
    """The rows of ``batch`` (bronze layout with ``_row_hash``; ``_occurrence`` is set here) that bronze
    does not hold, from ``stored`` (its ``STORED_IDENTITY`` rows of the batch's source-time window; None
    when none can repeat the batch, ``lakecdc.lake.bronze.stored_window``)."""
    ident = _identity(batch, connector)
    pos = [n for n in ident.column_names if n.startswith("__p")]
    # 1. the first delivery of each event: sorted by (partition, offset), the lowest rank per group
    order = pc.sort_indices(ident, [("_kafka_partition", "ascending"), ("_offset", "ascending")])
    ranked = ident.take(order).append_column("__rank", pa.array(np.arange(ident.num_rows, dtype=np.int64)))
    delivery = pc.if_else(ranked["__counted"], pc.binary_join_element_wise(
        ranked["_topic"].cast(pa.string()), ranked["_kafka_partition"].cast(pa.string()),
        ranked["_offset"].cast(pa.string()), ":"), pa.scalar(None, pa.string()))
    ranked = ranked.append_column("__delivery", delivery)
    group = [*pos, "_op", "__key", ROW_HASH, "__delivery"]
    kept_ranks = ranked.group_by(group, use_threads=False).aggregate([("__rank", "min")])["__rank_min"]
    rows = ranked.take(pc.take(kept_ranks, pc.array_sort_indices(kept_ranks)))  # in delivery order
    window = _identity(stored, connector) if stored is not None else None
    if window is not None:  # 2. replays
        rows = _anti(rows, window, list(KAFKA_POSITION))
    counted = pc.fill_null(rows["__counted"], False)
    positioned = rows.filter(pc.invert(counted))
    if window is not None:  # 3. re-sends
        hashed = pc.is_valid(window[ROW_HASH])
        positioned = _anti(positioned, window.filter(hashed), [*pos, "_op", "__key", ROW_HASH])
        positioned = _anti(positioned, window.filter(pc.invert(hashed)), [*pos, "_op", "__key"])
    numbered = rows.filter(counted).sort_by("__rank")  # a join keeps no order: delivery order again
    occurrence = _numbers(numbered, window, pos) if numbered.num_rows else pa.array([], pa.int64())
    out_rows = pa.concat_arrays([positioned[_ROW].combine_chunks(), numbered[_ROW].combine_chunks()]) \
        if positioned.num_rows + numbered.num_rows else pa.array([], pa.int64())
    occurrences = pa.concat_arrays([pa.array(np.zeros(positioned.num_rows, dtype=np.int64)), occurrence])
    out = batch.take(out_rows)
    index = out.column_names.index(OCCURRENCE)
    return out.set_column(index, out.schema.field(OCCURRENCE), occurrences.cast(out.schema.field(OCCURRENCE).type))


def _numbers(numbered: pa.Table, window: pa.Table | None, pos: list[str]) -> pa.Array:
    """``_occurrence`` of the counted rows: per ``(position, op, row hash)``, one above the highest
    stored, then in delivery order (``numbered`` is in delivery order)."""
    group = [*pos, "_op", ROW_HASH]
    start: dict[tuple[object, ...], int] = {}
    if window is not None and window.num_rows:
        stored = window.filter(pc.and_(pc.fill_null(window["__counted"], False),
                                       pc.and_(pc.is_valid(window[ROW_HASH]), pc.is_valid(window[OCCURRENCE]))))
        if stored.num_rows:
            top = stored.group_by(group, use_threads=False).aggregate([(OCCURRENCE, "max")])
            for values in zip(*(top[c].to_pylist() for c in group), top[f"{OCCURRENCE}_max"].to_pylist()):
                start[tuple(values[:-1])] = values[-1] + 1
    seen: dict[tuple[object, ...], int] = defaultdict(int)
    out = []
    for values in zip(*(numbered[c].to_pylist() for c in group)):
        out.append(start.get(values, 0) + seen[values])
        seen[values] += 1
    return pa.array(out, pa.int64())
