"""Delta through Spark SQL MERGE, on Delta's real Spark jars (fetched from Maven Central by the bootstrap).

These run in a Spark JVM that has Delta (``connector_spark``; ``tests/integration/test_spark_connectors.py``
starts it). Tables live in Delta's session catalog ``spark_catalog``, beside Iceberg's ``lake``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import assert_final_state
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import run_ingest
from lakecdc.lake.progress import PROGRESS_KEY
from lakecdc.writers.base import create_writer, delta_in_session
from lakecdc.writers.delta_spark import DeltaSparkWriter

pytestmark = pytest.mark.integration


def delta_writer(spark: SparkSession) -> DeltaSparkWriter:
    assert delta_in_session(spark), "the connector session must have Delta's Spark jars"
    writer = create_writer("delta", spark, catalog="spark_catalog")
    assert isinstance(writer, DeltaSparkWriter)
    return writer


def silver(spark: SparkSession, s: Stream) -> dict[int, str | None]:
    return {r["id"]: r["name"] for r in spark.table(f"spark_catalog.{s.target.silver_table}").collect()}


def history_progress(spark: SparkSession, table: str) -> list[dict[str, object]]:
    """The lakecdc progress every commit of ``table`` recorded in its userMetadata (newest first)."""
    rows = spark.sql(f"DESCRIBE HISTORY spark_catalog.{table}").select("userMetadata").collect()
    found = []
    for row in rows:
        if row["userMetadata"]:
            found.append(json.loads(json.loads(row["userMetadata"])[PROGRESS_KEY]))
    return found


@pytest.mark.spark4_connectors
def test_delta_spark_applies_and_records_progress(connector_spark: SparkSession) -> None:
    spark = connector_spark
    writer = delta_writer(spark)
    s = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("d", 11, {"id": 2})]), 1)
    writer.apply(s.batch([Ev("u", 9, {"id": 1, "name": "stale"})]), 2)
    assert silver(spark, s) == {1: "a"}
    assert writer.committed_progress(s.target) == {(s.topic, 0): 2}
    bronze = spark.table(f"spark_catalog.{s.target.bronze_table}").count()
    assert bronze == 3
    # a replay of what is committed adds nothing and commits nothing
    versions = spark.sql(f"DESCRIBE HISTORY spark_catalog.{s.target.silver_table}").count()
    replay = s.batch([Ev("c", 10, {"id": 1, "name": "a"}, offset=0)])
    assert writer.apply(replay, 3).skipped
    assert spark.sql(f"DESCRIBE HISTORY spark_catalog.{s.target.silver_table}").count() == versions


def test_new_events_arrive_whatever_the_jobs_batch_counter_says(connector_spark: SparkSession) -> None:
    # The job numbers batches from state.json. A kill between a table commit and the state save
    # reuses a number for a batch with new events; a lost state.json restarts the count. The
    # tables must take the new events in every case: what they record decides, not the number.
    spark = connector_spark
    writer = delta_writer(spark)
    s = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"})]), 1)
    writer.apply(s.batch([Ev("c", 11, {"id": 2, "name": "b"})]), 2)
    expected = {1: "a", 2: "b"}
    for step, (batch_id, seq) in enumerate([(2, 12), (1, 14), (0, 16)]):  # same id after a kill, repeated, lost
        fresh = delta_writer(spark)  # a restarted job: nothing in memory
        result = fresh.apply(s.batch([Ev("u", seq, {"id": 1, "name": f"a{step}"}),
                                      Ev("c", seq + 1, {"id": 10 + step, "name": f"n{step}"})]), batch_id)
        assert not result.skipped, f"batch id {batch_id}: new events skipped"
        expected.update({1: f"a{step}", 10 + step: f"n{step}"})
        assert silver(spark, s) == expected, f"batch id {batch_id}"
    assert spark.table(f"spark_catalog.{s.target.bronze_table}").count() == 8
    assert fresh.committed_progress(s.target) == {(s.topic, 0): 7}


def test_a_table_creation_killed_before_its_first_commit_is_created_again(connector_spark: SparkSession) -> None:
    # kill -9 while Delta creates a table leaves _delta_log without a commit at the managed
    # location; Delta refuses to create the table there, and the job crash-looped on it.
    spark = connector_spark
    writer = delta_writer(spark)
    s = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    database, table = s.target.bronze_table.split(".")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS spark_catalog.{database}")
    location = Path(spark.catalog.getDatabase(database).locationUri.removeprefix("file:")) / table
    (location / "_delta_log" / "_commits").mkdir(parents=True)
    (location / "_delta_log" / ".00000000000000000000.json.0f3a.tmp").write_text("{")
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"})]), 1)
    assert silver(spark, s) == {1: "a"}
    assert spark.table(f"spark_catalog.{s.target.bronze_table}").count() == 1
    # a location holding data files is never removed: Delta's own error names it
    _, other = s.target.silver_table.split(".")
    kept = location.parent / f"{other}_x"
    kept.mkdir()
    (kept / "part-00000.parquet").write_bytes(b"PAR1")
    assert writer._table_schema(f"{database}.{other}_x") is None and (kept / "part-00000.parquet").exists()


def test_tables_applied_in_parallel_each_record_their_own_progress(connector_spark: SparkSession) -> None:
    # Both threads commit MERGEs at the same moment (a barrier before each apply); a session-wide
    # userMetadata would let one table's commit record the other's topic and offsets.
    spark = connector_spark
    writer = delta_writer(spark)
    streams = [Stream(spark, "delta", [("id", LONG), ("name", STR)]) for _ in range(2)]
    rounds = 3
    barrier = threading.Barrier(len(streams))
    errors: list[BaseException] = []

    def run(s: Stream) -> None:
        try:
            for n in range(rounds):
                batch = s.batch([Ev("c", 100 + n, {"id": n, "name": f"{s.topic}-{n}"})])
                barrier.wait(timeout=300)
                writer.apply(batch, n + 1)
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(s,)) for s in streams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for s in streams:
        assert writer.committed_progress(s.target) == {(s.topic, 0): rounds - 1}
        for table in (s.target.bronze_table, s.target.silver_table):
            recorded = history_progress(spark, table)
            assert len(recorded) == rounds, f"{table}: {recorded}"
            assert all(set(progress) == {s.topic} for progress in recorded), \
                f"{table} records another topic: {recorded}"
        assert silver(spark, s) == {n: f"{s.topic}-{n}" for n in range(rounds)}


@pytest.mark.spark4_connectors
@pytest.mark.slow
def test_job_with_state_json_lost_between_runs_takes_the_new_events(broker, connector_spark: SparkSession,
                                                                    tmp_path: Path) -> None:
    # The ingest job end to end into Delta through Spark: half of the real Debezium records, then
    # the job's state.json is deleted (its batch counter restarts), then the other half.
    spark = connector_spark
    prefix = unique_prefix("ds")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    cfg = IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": str(tmp_path / "warehouse"), "table.format": "delta", "catalog": "spark_catalog",
        "reader": "python", "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(tmp_path / "progress"),
        "batch.max.wait.ms": "500"})
    half = len(records) // 2
    publish_records(broker.bootstrap_servers, records[:half])
    first = run_ingest(cfg, "available-now", spark=spark)
    assert first.events > 0 and first.failed_tables == {}
    (tmp_path / "progress" / "state.json").unlink()
    publish_records(broker.bootstrap_servers, records[half:])
    second = run_ingest(cfg, "available-now", spark=spark)
    assert second.events > 0 and second.failed_tables == {}

    def read(name: str) -> list[dict]:
        return [r.asDict(recursive=True) for r in spark.table(f"spark_catalog.{name}").collect()]

    assert_final_state(read, lambda name: spark.catalog.tableExists(f"spark_catalog.{name}"), prefix)
