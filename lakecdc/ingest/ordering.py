"""Order of events within a micro-batch: source position first, then the transaction's order.

``_seq`` (from ``lakecdc.events.positions``) is the numeric source position: PostgreSQL
``(commit LSN, event LSN, phase, index)``, MySQL ``(binlog file, position, row, phase)``, ...
Events are sorted by its four numbers, then by ``transaction.total_order`` (events of one
transaction sharing a position), then by Kafka partition and offset (a primary-key change emits
a delete and a create at one position; the topic keeps them in emit order). Positions are
compared as numbers, never as text or timestamps.

A transaction ranks at its own commit. SQL Server (``commit_lsn``) and Oracle (``commit_scn``)
events carry it, and MySQL's binlog holds a transaction's events at its commit. A PostgreSQL event
carries the commit LSN of the transaction *before* it (Debezium's ``source.sequence[0]``, null for
the first transaction after the connector started), so ``rank_by_commit`` replaces that first
number with the transaction's own commit LSN, known from its END marker once the transaction is
released. Without it, a transaction that began before the snapshot's consistent point and commits
after it would rank below the snapshot rows (its event LSNs are below the snapshot position), and
a table's recorded position would be one transaction behind what it holds. The event itself is
left exactly as Debezium wrote it; only the ingest's ``_seq`` changes.

Without transaction metadata (``provide.transaction.metadata=false``, Debezium's default) there is
no END marker, so that transaction is ranked by ``rank_after_snapshot`` instead: ``event_seq``
marks a streamed PostgreSQL event whose ``source.sequence[0]`` is null (``_seq[2]`` =
``FIRST_TRANSACTION_PHASE``: no commit was known when it was emitted, so it belongs to the first
transaction after the connector started without an offset), and such an event ranks at
``snapshot LSN + 1`` when its own LSN is not above the snapshot's (the highest snapshot-row position
the job has seen, kept in the job state). That lies after every snapshot row and at or before its
real commit: the slot streams only transactions that commit after its consistent point, and
Debezium's commit LSN (the commit record's end) is above it; the next transaction's events carry
that commit as ``sequence[0]`` and so rank after it. Inside the transaction the event LSNs keep
their order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.events.positions import SNAPSHOT_PHASE, Position, PostgresPosition
from lakecdc.lake.layout import SEQ_LENGTH

Seq = tuple[int, ...]
_SEQ_PARTS = [f"__seq{i}" for i in range(SEQ_LENGTH)]
#: ``_seq[2]`` of a streamed PostgreSQL event emitted before any commit was known (module docstring)
FIRST_TRANSACTION_PHASE = 2


def event_seq(position: Position) -> Seq:
    """``position.seq()``, with a PostgreSQL event of the first transaction marked (module docstring)."""
    seq = position.seq()
    if isinstance(position, PostgresPosition) and position.commit_lsn is None and not position.snapshot:
        return (seq[0], seq[1], FIRST_TRANSACTION_PHASE, seq[3])
    return seq


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
    bounds = seq_bounds(rows.column("_seq"))
    return bounds[0] if bounds else None


def seq_bounds(seqs: pa.Array | pa.ChunkedArray) -> tuple[Seq, Seq] | None:
    """The smallest and the largest of ``seqs`` (``_seq`` values in any order), or None when empty.

    Compared in Arrow and numpy, not as Python tuples: a batch's 100,000 positions took a quarter of
    a second per question as lists of Python ints, and a batch asks several.

    >>> seq_bounds(pa.array([[7, 2, 1, 0], [7, 1, 9, 9], [3, 5, 0, 0]]))
    ((3, 5, 0, 0), (7, 2, 1, 0))
    """
    if len(seqs) == 0:
        return None
    matrix = _seq_matrix(seqs)
    if matrix is None:  # a position of another length: Python's tuple order says the same
        values = [tuple(s) for s in seqs.to_pylist()]
        return min(values), max(values)
    order = np.lexsort(matrix.T[::-1])  # the last key is the primary one
    return tuple(int(v) for v in matrix[order[0]]), tuple(int(v) for v in matrix[order[-1]])


def _seq_matrix(seqs: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """``seqs`` as an (n, SEQ_LENGTH) matrix, or None unless every one is SEQ_LENGTH numbers."""
    flat = pc.list_flatten(seqs)
    if seqs.null_count or flat.null_count or not pc.all(pc.equal(pc.list_value_length(seqs), SEQ_LENGTH)).as_py():
        return None
    return np.asarray(flat.to_numpy(), dtype=np.int64).reshape(-1, SEQ_LENGTH)


def rank_by_commit(rows: pa.Table, commit_of: Callable[[str], int | None]) -> pa.Table:
    """PostgreSQL rows with ``_seq[0]`` raised to their transaction's commit LSN (``commit_of``:
    transaction id -> commit LSN from the END marker, None when unknown: the row keeps its rank)."""
    tx_ids = rows.column("_tx_id").to_pylist()
    if not any(tx_ids):
        return rows
    seqs = rows.column("_seq").to_pylist()
    changed = False
    for i, tx_id in enumerate(tx_ids):
        commit = commit_of(tx_id) if tx_id else None
        if commit is not None and commit > seqs[i][0]:
            seqs[i] = [commit, *seqs[i][1:]]
            changed = True
    if not changed:
        return rows
    index = rows.schema.get_field_index("_seq")
    return rows.set_column(index, rows.schema.field(index), pa.array(seqs, rows.schema.field(index).type))


def snapshot_lsn(rows: pa.Table) -> int | None:
    """The highest position of the snapshot rows among PostgreSQL ``rows`` (``_seq[0]``), or None."""
    matrix = _seq_matrix(rows.column("_seq")) if rows.num_rows else None
    if matrix is None:
        seqs = rows.column("_seq").to_pylist()
        return max((s[0] for s in seqs if s[2] == SNAPSHOT_PHASE), default=None)
    reads = matrix[matrix[:, 2] == SNAPSHOT_PHASE, 0]
    return int(reads.max()) if len(reads) else None


def snapshot_lsn_below(table_max_seq: Seq | None) -> int | None:
    """The snapshot LSN a PostgreSQL table's last commit shows (its ``max-seq``: a snapshot row, or a
    first-transaction event ranked at snapshot LSN + 1), else None: a job whose state was lost, or
    saved before that commit, still ranks the rest of the first transaction above the snapshot."""
    if table_max_seq is None:
        return None
    if table_max_seq[2] == SNAPSHOT_PHASE:
        return table_max_seq[0]
    return table_max_seq[0] - 1 if table_max_seq[2] == FIRST_TRANSACTION_PHASE else None


def rank_after_snapshot(rows: pa.Table, snapshot_at: int | None) -> pa.Table:
    """PostgreSQL rows of the first transaction with ``_seq[0]`` raised to ``snapshot_at + 1`` when
    not above ``snapshot_at`` (the snapshot's LSN; None: no snapshot seen, rows kept)."""
    if snapshot_at is None:
        return rows
    seqs = rows.column("_seq").to_pylist()
    changed = False
    for i, seq in enumerate(seqs):
        if seq[2] == FIRST_TRANSACTION_PHASE and seq[0] <= snapshot_at:
            seqs[i] = [snapshot_at + 1, *seq[1:]]
            changed = True
    if not changed:
        return rows
    index = rows.schema.get_field_index("_seq")
    return rows.set_column(index, rows.schema.field(index), pa.array(seqs, rows.schema.field(index).type))
