"""``lakecdc.lake.frames.batch_frame``: a micro-batch that fits one partition is planned as one, so the
windows over it (bronze identity, silver's newest per key) need no shuffle; a larger one keeps its
partitions (and the cluster's parallelism). The rows are the same either way."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StructField, StructType

from lakecdc.lake.bronze import spark_new_rows, to_bronze_layout
from lakecdc.lake.frames import ROWS_PER_PARTITION, batch_frame, metadata_fields, spark_to_arrow

pytestmark = pytest.mark.integration

SCHEMA = StructType([StructField("id", LongType()), *metadata_fields()])


def _rows(n: int) -> pa.Table:
    ids = list(range(n))
    return pa.table({
        "id": pa.array(ids, pa.int64()), "_op": pa.array(["u"] * n), "_seq": pa.array([[i, i, 0, 0] for i in ids]),
        "_source_ts_ms": pa.array([5] * n, pa.int64()), "_tx_id": pa.nulls(n, pa.string()),
        "_tx_total_order": pa.nulls(n, pa.int64()), "_topic": pa.array(["p.public.t"] * n),
        "_partition": pa.array([0] * n, pa.int32()), "_offset": pa.array(ids, pa.int64()),
        "_ingest_ts": pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", "UTC")),
        "_unavailable": pa.array([[]] * n, pa.list_(pa.string())),
        "_key_json": pa.array([f'{{"id":{i}}}' for i in ids]), "_old_key_json": pa.nulls(n, pa.string())})


def _new_rows_plan(spark: SparkSession, n: int) -> tuple[str, int]:
    frame = batch_frame(spark, _rows(n), SCHEMA)
    fresh = spark_new_rows(to_bronze_layout(frame, ["id"]), ["id"], None, None, "postgres")
    assert spark_to_arrow(fresh).num_rows == n  # every event is new: the same rows either way
    return fresh._jdf.queryExecution().executedPlan().toString(), frame.rdd.getNumPartitions()


def test_a_batch_of_one_partition_is_planned_without_a_shuffle(spark: SparkSession) -> None:
    plan, partitions = _new_rows_plan(spark, 500)
    assert partitions == 1
    assert "Exchange" not in plan, plan


def test_a_batch_larger_than_a_partition_keeps_its_partitions(spark: SparkSession) -> None:
    plan, partitions = _new_rows_plan(spark, ROWS_PER_PARTITION + 1)
    assert partitions == 2
    assert "Exchange" in plan
