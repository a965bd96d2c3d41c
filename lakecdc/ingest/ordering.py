"""Order of events within a micro-batch: source position first, then the transaction's order.

``_seq`` (from ``lakecdc.events.positions``) is the numeric source position: PostgreSQL
``(commit LSN, event LSN, phase, index)``, MySQL ``(binlog file, position, row, phase)``, ...
Events are sorted by its four numbers, then by ``transaction.total_order`` (events of one
transaction sharing a position), then by Kafka partition and offset (a primary-key change emits
a delete and a create at one position; the topic keeps them in emit order). Positions are
compared as numbers, never as text or timestamps.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.ingest.batch import SEQ_LENGTH

Seq = tuple[int, ...]
_SEQ_PARTS = [f"__seq{i}" for i in range(SEQ_LENGTH)]


def order_rows(rows: pa.Table) -> pa.Table:
    """``rows`` (a table with the metadata columns) sorted into apply order."""
    if rows.num_rows <= 1:
        return rows
    seq = rows.column("_seq")
    keyed = rows
    for i, name in enumerate(_SEQ_PARTS):
        keyed = keyed.append_column(name, pc.list_element(seq, i))
    names = [*_SEQ_PARTS, "_tx_total_order", "_partition", "_offset"]
    try:  # pyarrow >= 25: null placement per key
        indices = pc.sort_indices(keyed, sort_keys=[(n, "ascending", "at_start") for n in names])
    except (TypeError, ValueError):
        indices = pc.sort_indices(keyed, sort_keys=[(n, "ascending") for n in names], null_placement="at_start")
    return rows.take(indices)


def max_seq(rows: pa.Table) -> Seq | None:
    """The largest ``_seq`` in ``rows`` (rows already in apply order: the last one), or None."""
    if rows.num_rows == 0:
        return None
    return tuple(rows.column("_seq")[rows.num_rows - 1].as_py())


def min_seq(rows: pa.Table) -> Seq | None:
    """The smallest ``_seq`` in ``rows`` in any order."""
    if rows.num_rows == 0:
        return None
    return min(tuple(s) for s in rows.column("_seq").to_pylist())
