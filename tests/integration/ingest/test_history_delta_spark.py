"""SCD2 history through Delta's Spark SQL MERGE (``DeltaSparkWriter``), in the connector JVM.

Runs where ``connector_spark`` is (``tests/integration/test_spark_connectors.py`` starts it):
the scenario of ``test_history_writers`` and a shuffled, replayed delivery, against the model.
"""

from __future__ import annotations

from typing import Any

import pytest
import test_history_writers as hw
from pyspark.sql import SparkSession

from lakecdc.lake.history_chain import normalize_version
from lakecdc.writers.base import create_writer, delta_in_session

pytestmark = pytest.mark.integration


def history_rows(spark: SparkSession, name: str) -> list[dict[str, Any]]:
    rows = [r.asDict(recursive=True) for r in spark.table(f"spark_catalog.{name}").collect()]
    return sorted((normalize_version(r) for r in rows), key=lambda v: (v["id"], v["_valid_from_seq"]))


@pytest.mark.spark4_connectors
def test_delta_spark_history_matches_the_model_and_silver(connector_spark: SparkSession) -> None:
    spark = connector_spark
    assert delta_in_session(spark)
    writer = create_writer("delta", spark, catalog="spark_catalog")
    # the scenario, then the middle batches delivered again behind a late update that splits a version
    late = hw.event("u", 11, 0, 1, "late", "q")
    batches = hw.in_delivery_order([hw.SCENARIO[:3], hw.SCENARIO[3:6], hw.SCENARIO[6:10], hw.SCENARIO[10:],
                                    [*hw.SCENARIO[3:6], late]])
    s = hw.HistoryStream(spark, "delta", track_history_except_columns=("note",))
    for batch_id, batch in enumerate(batches, start=1):
        writer.apply(s.events(batch), batch_id)
        hw.check_chain(history_rows(spark, s.target.history_table))
    delivered = list({e["_offset"]: e for b in batches for e in b}.values())
    assert history_rows(spark, s.target.history_table) == hw.model_history(delivered, tracked=("name",))
    assert [(v["_valid_from_seq"][0], v["_valid_to_seq"] and v["_valid_to_seq"][0])
            for v in history_rows(spark, s.target.history_table) if v["id"] == 1] == [
        (10, 11), (11, 12), (12, 14), (19, None)]  # the late update split the first version
    silver = {r["id"]: (r["name"], r["note"]) for r in spark.table(f"spark_catalog.{s.target.silver_table}").collect()}
    assert {v["id"]: (v["name"], v["note"]) for v in history_rows(spark, s.target.history_table)
            if v["_is_current"]} == silver
    # exactly once: a replay of every batch adds no history commit
    commits = spark.sql(f"DESCRIBE HISTORY spark_catalog.{s.target.history_table}").count()
    for batch_id, batch in enumerate(batches, start=1):
        writer.apply(s.events(batch), batch_id)
    assert spark.sql(f"DESCRIBE HISTORY spark_catalog.{s.target.history_table}").count() == commits
