"""``_seq`` questions answered in Arrow equal the same questions asked of Python tuples.

``ordering.seq_bounds`` and ``ordering.snapshot_lsn`` compare a batch's positions as a numpy matrix;
the consistency point, the transaction buffer and each table's figures rely on them giving exactly
what Python's tuple order gives, for any positions, split into any chunks.
"""

from __future__ import annotations

import doctest

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.events.positions import SNAPSHOT_PHASE
from lakecdc.ingest import ordering
from lakecdc.ingest.consistency_point import _highest, _lowest_read
from lakecdc.ingest.ordering import min_seq, seq_bounds, snapshot_lsn

# few distinct numbers, so that ties on the first parts are common and the later parts decide
number = st.one_of(st.integers(0, 3), st.integers(-(2**63), 2**63 - 1))
phase = st.sampled_from([0, 1, 2, SNAPSHOT_PHASE])
seq4 = st.tuples(number, number, phase, number).map(list)
seqs = st.lists(seq4, max_size=40)


def chunked(values: list[list[int]], cuts: list[int]) -> pa.ChunkedArray:
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return pa.chunked_array([pa.array(values[a:b], pa.list_(pa.int64())) for a, b in zip(bounds, bounds[1:])],
                            pa.list_(pa.int64()))


@settings(max_examples=300, deadline=None)
@given(values=seqs, cuts=st.lists(st.integers(0, 40), max_size=3), ops=st.lists(st.sampled_from("rcud"), min_size=40,
                                                                                    max_size=40))
def test_bounds_and_snapshot_lsn_equal_pythons_tuple_order(values: list[list[int]], cuts: list[int],
                                                           ops: list[str]) -> None:
    rows = pa.table({"_seq": chunked(values, cuts), "_op": pa.array(ops[:len(values)], pa.string())})
    tuples = [tuple(v) for v in values]
    assert seq_bounds(rows.column("_seq")) == ((min(tuples), max(tuples)) if tuples else None)
    assert min_seq(rows) == (min(tuples) if tuples else None)
    assert _highest(rows) == (max(tuples) if tuples else None)
    reads = [t for t, op in zip(tuples, ops) if op == "r"]
    assert _lowest_read(rows) == (min(reads) if reads else None)
    assert snapshot_lsn(rows) == max((t[0] for t in tuples if t[2] == SNAPSHOT_PHASE), default=None)
    assert all(type(part) is int for bound in seq_bounds(rows.column("_seq")) or () for part in bound)


@given(values=st.lists(st.lists(number, min_size=1, max_size=6), min_size=1, max_size=20))
def test_positions_of_other_lengths_keep_pythons_order(values: list[list[int]]) -> None:
    tuples = [tuple(v) for v in values]
    assert seq_bounds(pa.array(values, pa.list_(pa.int64()))) == (min(tuples), max(tuples))


def test_docstring_examples() -> None:
    result = doctest.testmod(ordering)
    assert result.failed == 0 and result.attempted > 0
