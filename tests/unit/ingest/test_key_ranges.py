"""Key ranges: every key of a batch lies inside them (a MERGE bounded by them loses no match)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset  # noqa: F401 - pa.dataset
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.lake.key_ranges import (
    MAX_RANGES,
    arrow_key_ranges,
    arrow_ranges_filter,
    integer_ranges,
    literal,
    ranges_predicate,
)
from lakecdc.lake.merge_plan import DATAFUSION, SPARK


def _inside(value: object, ranges: tuple[tuple[object, object], ...]) -> bool:
    return any(lo <= value <= hi for lo, hi in ranges)  # type: ignore[operator]


@given(st.lists(st.integers(min_value=-2**62, max_value=2**62), min_size=1, max_size=300))
def test_integer_ranges_cover_every_key_and_are_ordered(keys: list[int]) -> None:
    ranges = arrow_key_ranges(pa.array(keys, pa.int64()))
    assert ranges is not None and 1 <= len(ranges) <= MAX_RANGES
    assert all(_inside(k, ranges) for k in keys)
    # disjoint, ascending, and each bound is a key of the batch (no range wider than needed)
    flat = [b for r in ranges for b in r]
    assert flat == sorted(flat) and all(lo <= hi for lo, hi in ranges)
    assert all(lo in keys and hi in keys for lo, hi in ranges)


def test_integers_are_cut_at_the_widest_gaps() -> None:
    recent = list(range(950_000, 950_100))
    stray = [17, 400_000]
    inserted = list(range(21_000_000, 21_000_050))
    ranges = integer_ranges(np.unique(np.array(recent + stray + inserted)), max_ranges=4)
    assert ranges == ((17, 17), (400_000, 400_000), (950_000, 950_099), (21_000_000, 21_000_049))
    assert integer_ranges(np.array([5, 6, 7]), max_ranges=1) == ((5, 7),)
    assert integer_ranges(np.array([5, 6, 7, 9])) == ((5, 7), (9, 9))  # adjacent keys stay together
    assert integer_ranges(np.array([4])) == ((4, 4),)


def test_strings_get_one_range_and_other_types_none() -> None:
    assert arrow_key_ranges(pa.array(["b", None, "a'x", "c"])) == (("a'x", "c"),)
    assert arrow_key_ranges(pa.array([1.5, 2.5])) is None
    assert arrow_key_ranges(pa.array([None, None], pa.int64())) is None
    assert arrow_key_ranges(pa.chunked_array([[3, 1], [2], [9]], pa.int32())) == ((1, 3), (9, 9))


def test_literals_and_predicate() -> None:
    assert literal("o'b\\x", SPARK.string_literal) == "'o\\'b\\\\x'"
    assert literal("o'b\\x", DATAFUSION.string_literal) == "'o''b\\x'"
    assert literal(-4, SPARK.string_literal) == "-4"
    with pytest.raises(TypeError, match="neither an integer nor a string"):
        literal(True, SPARK.string_literal)
    assert (ranges_predicate("t.`id`", ((1, 1), (5, 9)), SPARK.string_literal)
            == "(t.`id` = 1 OR t.`id` BETWEEN 5 AND 9)")
    assert ranges_predicate('t."k"', (("a", "b"),), DATAFUSION.string_literal) == """(t."k" BETWEEN 'a' AND 'b')"""


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=200),
       st.lists(st.integers(min_value=0, max_value=10_000), max_size=200))
def test_arrow_filter_keeps_exactly_the_rows_inside(keys: list[int], stored: list[int]) -> None:
    ranges = arrow_key_ranges(pa.array(keys, pa.int64()))
    assert ranges is not None
    table = pa.table({"id": pa.array(stored, pa.int64())})
    kept = pa.dataset.dataset(table).to_table(filter=arrow_ranges_filter("id", ranges)).column("id").to_pylist()
    assert sorted(kept) == sorted(v for v in stored if _inside(v, ranges))
    assert set(keys) & set(stored) <= set(kept)
    assert pc.all(pc.is_in(pa.array(keys), pa.array(kept + keys))).as_py()
