"""Silver preparation in Arrow, for writers whose engine takes Arrow (delta-rs).

``silver_source`` and ``ledger_rows`` (``lakecdc.lake.silver``) build the MERGE source and the
delete-ledger rows as Spark plans; a delta-rs MERGE then collects that plan into Arrow, which
costs a Spark job per batch on top of the collect (half the MERGE step of a 10k-change batch).
Converting the batch's rows once and preparing them here gives the same rows without that job.

Only batches without placeholders take this path: carrying values forward from earlier events
(``_unavailable``) and key changes that take them from the old key stay in Spark, in one place.
The equivalence with the Spark rendering is tested on the same batches
(``tests/integration/ingest/test_silver_arrow.py``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.lake.layout import SEQ_LENGTH, SILVER_META_COLUMNS
from lakecdc.lake.silver import BatchStats


def arrow_input_columns(keys: tuple[str, ...], columns: list[str]) -> list[str]:
    """The batch columns ``arrow_silver_source`` and ``arrow_ledger_rows`` read."""
    return list(dict.fromkeys([*keys, *columns, *SILVER_META_COLUMNS, "_offset", "_unavailable"]))


def arrow_silver_source(rows: pa.Table, keys: tuple[str, ...], columns: list[str], stats: BatchStats) -> pa.Table:
    """``silver_source`` of a batch without placeholders: one row per key, the newest by
    (``_seq``, ``_offset``), truncates and the events they supersede left out; sorted by key.

    Output columns: ``columns`` + ``_seq``, ``_op``, ``_source_ts_ms``, ``_tx_id``, ``_unavailable``.
    """
    if stats.has_placeholders:
        raise ValueError("a batch with placeholders is prepared in Spark (silver_source)")
    rows = rows.filter(pc.not_equal(rows["_op"], "t"))
    if stats.truncate_seq is not None:
        rows = rows.filter(_seq_not_older_than(rows["_seq"], stats.truncate_seq))
    rows = rows.select([*columns, *SILVER_META_COLUMNS, "_offset", "_unavailable"])
    if rows.num_rows == 0:
        return rows.drop_columns(["_offset"])
    seq = {f"__s{i}": pc.list_element(rows["_seq"], i) for i in range(SEQ_LENGTH)}
    order = pa.table({**{f"__k{i}": rows[k] for i, k in enumerate(keys)}, **seq, "__o": rows["_offset"]})
    # Spark's window groups null keys together; Arrow's sort puts them together at the end
    sort_keys = [*((f"__k{i}", "ascending") for i in range(len(keys))),
                 *((name, "descending") for name in seq), ("__o", "descending")]
    ordered = rows.take(pc.sort_indices(order, sort_keys=sort_keys))
    return ordered.filter(_first_of_each_key(ordered, keys)).drop_columns(["_offset"])


def arrow_ledger_rows(rows: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    """``ledger_rows``: every delete (key + ``_seq``) and truncate (null keys) of the batch."""
    removals = rows.filter(pc.is_in(rows["_op"], pa.array(["d", "t"])))
    return removals.select([*keys, "_seq", "_op", "_source_ts_ms"])


def _seq_not_older_than(seq: pa.ChunkedArray, bound: tuple[int, ...]) -> pa.ChunkedArray:
    """``_seq >= bound``, element by element as Spark compares arrays (``silver._seq_not_older_than``)."""
    result = pa.scalar(True)  # equal in every element: not older
    for i in reversed(range(SEQ_LENGTH)):
        value = pc.list_element(seq, i)
        result = pc.or_(pc.greater(value, bound[i]), pc.and_(pc.equal(value, bound[i]), result))
    return result


def _first_of_each_key(rows: pa.Table, keys: tuple[str, ...]) -> pa.Array:
    """True on the first row of each run of equal keys (nulls equal to nulls) in sorted ``rows``."""
    n = rows.num_rows
    differs = None
    for key in keys:
        column = rows[key].combine_chunks()
        previous, current = column.slice(0, n - 1), column.slice(1)
        same = pc.or_(pc.fill_null(pc.equal(previous, current), False),
                      pc.and_(pc.is_null(previous), pc.is_null(current)))
        differs = pc.invert(same) if differs is None else pc.or_(differs, pc.invert(same))
    assert differs is not None
    return pa.concat_arrays([pa.array([True]), differs])
