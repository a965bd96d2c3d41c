"""Delta through Spark SQL: runs only where Spark has Delta (Databricks, or delta-spark jars)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from lakecdc.writers.base import create_writer, delta_in_session
from writer_harness import LONG, STR, Ev, Stream

pytestmark = pytest.mark.integration


def test_delta_spark_applies_and_records_progress(spark: SparkSession) -> None:
    if not delta_in_session(spark):
        pytest.skip("Delta's Spark jars are not in this session: this machine cannot reach Maven Central and "
                    "no wheel ships them (set LAKECDC_SPARK_PACKAGES=io.delta:delta-spark_2.12:3.3.2 on a "
                    "networked machine); the writer's SQL is covered by tests/unit/ingest/test_merge_plan_delta_spark.py")
    writer = create_writer("delta", spark, catalog="spark_catalog")
    assert writer.__class__.__name__ == "DeltaSparkWriter"
    s = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("d", 11, {"id": 2})]), 1)
    writer.apply(s.batch([Ev("u", 9, {"id": 1, "name": "stale"})]), 2)
    reader_rows = {r["id"]: r["name"] for r in spark.table(f"spark_catalog.{s.target.silver_table}").collect()}
    assert reader_rows == {1: "a"}
    assert writer.committed_progress(s.target) == {(s.topic, 0): 2}
