"""``lake.bronze_arrow.arrow_new_rows`` keeps exactly the rows ``lake.bronze.spark_new_rows`` keeps, with the
same ``_occurrence``: random batches of snapshot reads with and without keys and streamed changes, sharing
positions, row hashes and Kafka records, against random stored windows (replays, re-sends, rows stored before
the row hash, counted rows numbered before), for PostgreSQL (position without its rank) and other connectors."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StructField, StructType

from lakecdc.lake.bronze import STORED_IDENTITY, bronze_columns, spark_new_rows
from lakecdc.lake.bronze_arrow import arrow_new_rows, positions_comparable
from lakecdc.lake.frames import arrow_to_spark, spark_to_arrow
from lakecdc.writers.base import BRONZE_META

pytestmark = pytest.mark.integration

ROW = StructType([StructField("id", LongType()), StructField("v", LongType())])
SCHEMA = StructType([*ROW.fields, *BRONZE_META.fields])
STORED = StructType([f for f in BRONZE_META.fields if f.name in STORED_IDENTITY])
TOPIC = "db.public.t"


@st.composite
def event(draw: st.DrawFn) -> dict[str, Any]:
    """A bronze row whose identity parts are drawn from small sets, so that they collide."""
    op = draw(st.sampled_from("rrrcud"))
    keyed = draw(st.booleans()) if op == "r" else True
    rank, lsn = draw(st.integers(0, 2)), draw(st.integers(0, 1))
    return {"id": draw(st.integers(0, 3)), "v": draw(st.integers(0, 2)), "_op": op, "_seq": [rank, lsn, 0, 0],
            "_source_ts_ms": 1000, "_kafka_partition": draw(st.integers(0, 1)),
            "_key_json": '{"id":%d}' % draw(st.integers(0, 2)) if keyed else None,
            "_row_hash": draw(st.integers(0, 1))}


def table(rows: list[dict[str, Any]], offsets: list[int], schema: StructType) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    full = [{"_topic": TOPIC, "_offset": off, "_occurrence": None, **row} for row, off in zip(rows, offsets)]
    arrow = to_arrow_schema(schema)
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in arrow} for r in full], schema=arrow)


@st.composite
def cases(draw: st.DrawFn) -> tuple[pa.Table, pa.Table | None, str]:
    batch_rows = draw(st.lists(event(), max_size=14))
    # a batch's Kafka records are distinct (delivery order decides which copy of an event is kept)
    offsets = draw(st.lists(st.integers(0, 40), min_size=len(batch_rows), max_size=len(batch_rows), unique=True))
    stored = None
    if draw(st.booleans()):
        stored_rows = draw(st.lists(event(), max_size=10))
        for row in stored_rows:
            if draw(st.booleans()):
                row["_row_hash"] = None  # stored before the row hash existed
            row["_occurrence"] = draw(st.integers(0, 3)) if row["_key_json"] is None and row["_op"] == "r" else 0
        stored_offsets = [draw(st.integers(0, 40)) for _ in stored_rows]  # some are this batch's records: replays
        full = table(stored_rows, stored_offsets, SCHEMA)
        stored = full.set_column(full.schema.get_field_index("_occurrence"), "_occurrence",
                                 pa.array([r["_occurrence"] for r in stored_rows], pa.int64())).select(
            [f.name for f in STORED.fields])
    return table(batch_rows, offsets, SCHEMA), stored, draw(st.sampled_from(["postgres", "mysql"]))


def _multiset(rows: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(tuple(v) if isinstance(v, list) else v for v in r.values()) for r in rows.to_pylist())


def test_arrow_new_rows_equal_sparks(spark: SparkSession) -> None:
    columns = bronze_columns(["id", "v"])

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(cases())
    def check(case: tuple[pa.Table, pa.Table | None, str]) -> None:
        batch, stored, connector = case
        batch = batch.select(columns)
        stored_df = arrow_to_spark(spark, stored, STORED) if stored is not None else None
        ts_range = (0, 10_000) if stored is not None else None
        frame = arrow_to_spark(spark, batch, StructType([SCHEMA[c] for c in columns]))
        expected = spark_to_arrow(spark_new_rows(frame, ["id", "v"], stored_df, ts_range, connector).select(*columns))
        assert positions_comparable(batch, *([stored] if stored is not None else []))
        got = arrow_new_rows(batch, stored, connector).select(columns)
        assert _multiset(got) == _multiset(expected.cast(got.schema))

    check()


def test_positions_of_another_length_are_not_compared_in_arrow() -> None:
    rows = pa.table({"_seq": pa.array([[1, 2, 0, 0], [1, 2]], pa.list_(pa.int64()))})
    assert positions_comparable(rows.slice(0, 1))
    assert not positions_comparable(rows)
