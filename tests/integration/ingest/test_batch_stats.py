"""``arrow_batch_stats`` (the processor's, from Arrow rows) gives exactly ``batch_stats`` (Spark's)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakecdc.lake.frames import arrow_to_spark, metadata_fields
from lakecdc.lake.silver import arrow_batch_stats, batch_stats

pytestmark = [pytest.mark.integration]

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)


def rows(events: list[tuple[str, list[int], int | None, list[str] | None]], moved: set[int] = frozenset()) -> pa.Table:
    """(op, seq, source ts, unavailable columns) per event, in the batch layout (id, name + metadata);
    the events at the indexes in ``moved`` are the creates of key changes."""
    n = len(events)
    return pa.table({
        "id": pa.array([i if op != "t" else None for i, (op, *_) in enumerate(events)], pa.int64()),
        "name": pa.array(["x"] * n, pa.string()),
        "_op": pa.array([e[0] for e in events], pa.string()),
        "_seq": pa.array([e[1] for e in events], pa.list_(pa.int64())),
        "_source_ts_ms": pa.array([e[2] for e in events], pa.int64()),
        "_tx_id": pa.array([None] * n, pa.string()),
        "_tx_total_order": pa.array([None] * n, pa.int64()),
        "_topic": pa.array(["t"] * n, pa.string()),
        "_partition": pa.array([0] * n, pa.int32()),
        "_offset": pa.array(range(n), pa.int64()),
        "_ingest_ts": pa.array([NOW] * n, pa.timestamp("us", tz="UTC")),
        "_unavailable": pa.array([e[3] for e in events], pa.list_(pa.string())),
        "_key_json": pa.array(["{}"] * n, pa.string()),
        "_old_key_json": pa.array(['{"id":0}' if i in moved else None for i in range(n)], pa.string()),
    })


CASES = {
    "inserts and updates": [("c", [10, 10, 0, 0], 1000, []), ("u", [12, 12, 0, 0], 1002, None),
                            ("u", [11, 11, 0, 0], 1001, [])],
    "deletes, placeholders": [("d", [5, 6, 0, 0], 500, None), ("u", [5, 7, 0, 0], 501, ["name"]),
                              ("c", [5, 5, 1, 0], None, [])],
    "two truncates, same seq prefix": [("c", [1, 1, 0, 0], 10, []), ("t", [2, 2, 0, 0], 20, None),
                                       ("t", [2, 2, 0, 1], 19, None), ("d", [3, 3, 0, 0], 30, None),
                                       ("c", [100, 1, 0, 0], 40, [])],
    "lexicographic, not numeric sum": [("c", [9, 99, 0, 0], 1, []), ("u", [10, 0, 0, 0], 2, [])],
    "one event": [("t", [7, 7, 7, 7], 70, None)],
}


MOVED = {"deletes, placeholders": {1}, "inserts and updates": {0}}  # the first: a move with placeholders


@pytest.mark.parametrize("case", sorted(CASES))
def test_arrow_stats_equal_spark_stats(spark, case: str) -> None:
    table = rows(CASES[case], MOVED.get(case, set()))
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()), *metadata_fields()])
    assert arrow_batch_stats(table) == batch_stats(arrow_to_spark(spark, table, schema))


def test_arrow_stats_of_the_cases_are_what_they_say() -> None:
    truncates = arrow_batch_stats(rows(CASES["two truncates, same seq prefix"]))
    assert truncates.truncate_seq == (2, 2, 0, 1) and truncates.truncate_ts_ms == 19
    assert truncates.max_seq == (100, 1, 0, 0) and truncates.removals == 3 and not truncates.has_placeholders
    placeholders = arrow_batch_stats(rows(CASES["deletes, placeholders"]))
    assert placeholders.has_placeholders and placeholders.min_source_ts_ms == 500
    assert not placeholders.moved_placeholders
    assert arrow_batch_stats(rows(CASES["deletes, placeholders"], {1})).moved_placeholders
    assert not arrow_batch_stats(rows(CASES["inserts and updates"], {0})).moved_placeholders  # none unavailable
    assert arrow_batch_stats(rows(CASES["lexicographic, not numeric sum"])).max_seq == (10, 0, 0, 0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_key_ranges_of_both_cover_the_keys(spark, case: str) -> None:
    """Spark's stats bound the first key column with one [min, max]; Arrow's may split it at gaps.
    Either way every key lies inside, and both agree on the outer bounds."""
    table = rows(CASES[case])
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()), *metadata_fields()])
    keys = [k for k in table.column("id").to_pylist() if k is not None]
    arrow_ranges = arrow_batch_stats(table, ("id",)).key_ranges
    spark_ranges = batch_stats(arrow_to_spark(spark, table, schema), ("id",)).key_ranges
    if not keys:  # a batch of truncates: nothing to bound
        assert arrow_ranges is None and spark_ranges is None
        return
    assert spark_ranges == ((min(keys), max(keys)),)
    assert arrow_ranges is not None and arrow_ranges[0][0] == min(keys) and arrow_ranges[-1][1] == max(keys)
    assert all(any(lo <= k <= hi for lo, hi in arrow_ranges) for k in keys)
