"""The Spark range readers: batches decided from the tables' offsets, fetched on executors or by Spark's source.

The Databricks failure these guard against: a streaming checkpoint runs ahead of the tables whenever
events are held (a transaction waiting for its END when ``available-now`` ends), and a restart from it
never reads those events again. Here every restart starts from the tables' committed offsets.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import assert_final_source_state, table_rows

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import reader_kind, run_ingest
from lakecdc.ingest.reader import PythonKafkaReader
from lakecdc.ingest.spark_reader import SparkRangeReader

pytestmark = [pytest.mark.integration]

RECORD_COLUMNS = ("topic", "partition", "offset", "key", "value", "headers", "timestampType")


def job_config(bootstrap: str, spark, prefix: str, tmp_path: Path, **extra: str) -> IngestConfig:
    return IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix,
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse"),
        "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}",
        "progress.path": str(tmp_path / "progress"), "batch.max.wait.ms": "300", **extra})


def records_of(batches) -> list[tuple]:
    rows = []
    for batch in batches:
        for r in batch.arrow().select(list(RECORD_COLUMNS)).to_pylist():
            rows.append(tuple(json.dumps(r[c], default=repr) for c in RECORD_COLUMNS))
    return sorted(rows)


@pytest.mark.spark4
def test_executors_fetch_exactly_the_python_readers_records(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("rx")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    # a small budget: several batches, every partition's ranges continue where the last one ended
    cfg = job_config(broker.bootstrap_servers, spark, prefix, tmp_path,
                     **{"batch.max.records": "7", "batch.backlog.max.records": "7"})
    start = {(f"{prefix}.public.customers", 0): 3}
    python = PythonKafkaReader(cfg, lambda t, p: start.get((t, p)), threading.Event(), True, spark)
    try:
        expected = records_of(list(python.batches()))
    finally:
        python.close()
    ranges = SparkRangeReader(cfg, lambda t, p: start.get((t, p)), threading.Event(), True, spark, "executors")
    try:
        batches = []
        for batch in ranges.batches():
            assert batch.num_records == batch.df.count()  # counted without collecting, and exact
            batches.append(batch)
            batch.arrow()  # while the batch is current (its fetch is persisted until the next one)
    finally:
        ranges.close()
    assert records_of(batches) == expected
    assert len(expected) == len(records) - 4  # offsets 0..3 of customers were committed
    assert batches[-1].at_end_of_data and len([b for b in batches if b.num_records]) > 3
    assert batches[-1].lagging == frozenset() and any(b.lagging for b in batches[:-1])  # 7 records a batch

    # Behind a backlog batches grow (7, 14, 28 records), the same records in fewer batches, and the
    # batch that reaches the end brings the budget back to batch.max.records.
    grown_cfg = job_config(broker.bootstrap_servers, spark, prefix, tmp_path,
                           **{"batch.max.records": "7", "batch.backlog.max.records": "28"})
    grown = SparkRangeReader(grown_cfg, lambda t, p: start.get((t, p)), threading.Event(), True, spark, "executors")
    try:
        budgets, sizes, again = [], [], []
        for batch in grown.batches():
            budgets.append(grown.budget)
            sizes.append(batch.num_records)
            again.append(batch)
            batch.arrow()
    finally:
        grown.close()
    assert records_of(again) == expected
    assert budgets[:2] == [14, 28] and budgets[-1] == 7 and max(sizes) > 14, (budgets, sizes)
    assert len([n for n in sizes if n]) < len([b for b in batches if b.num_records])


def _reader_session(request: pytest.FixtureRequest, reader: str) -> tuple[str, object]:
    """The broker and Spark session a reader runs on: Spark's Kafka source needs its jar (the
    ``connector_spark`` child JVM) and exact high watermarks (Apache Kafka, not tansu)."""
    if reader != "spark-kafka":
        return request.getfixturevalue("broker").bootstrap_servers, request.getfixturevalue("spark")
    spark = request.getfixturevalue("connector_spark")
    return request.getfixturevalue("kafka_broker").bootstrap_servers, spark


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["spark", "spark-kafka"])
def test_events_held_when_a_run_ends_are_read_again_by_the_next_run(request, tmp_path: Path, reader: str) -> None:
    bootstrap, spark = _reader_session(request, reader)
    prefix = unique_prefix("rh")
    records = golden_records(prefix)
    create_topics(bootstrap, [r["topic"] for r in records])
    # Up to the events of the 5-event transaction (txId 1264), without its END marker.
    end_index = next(i for i, r in enumerate(records) if r["value"] and r["value"].get("payload", {}).get(
        "status") == "END" and r["value"]["payload"]["event_count"] == 5)
    publish_records(bootstrap, records[:end_index])
    cfg = job_config(bootstrap, spark, prefix, tmp_path, reader=reader, **{"batch.max.records": "11"})
    assert reader_kind(cfg, spark) == reader

    first = run_ingest(cfg, "available-now", spark=spark)
    assert first.held_events == 5
    customers = {r["id"]: r for r in table_rows(spark, f"{prefix}_silver.customers")}
    assert 4 not in customers  # Dave's insert waits for its transaction's END

    publish_records(bootstrap, records[end_index:])
    second = run_ingest(cfg, "available-now", spark=spark)  # a new run: only the tables know where to start
    assert second.held_events == 0
    assert_final_source_state(spark, prefix)
    bronze = table_rows(spark, f"{prefix}_bronze.customers")
    assert len({r["_offset"] for r in bronze}) == len(bronze) == 14


def test_auto_reads_on_the_driver_in_local_mode(broker, spark, tmp_path: Path) -> None:
    cfg = job_config(broker.bootstrap_servers, spark, "x", tmp_path)
    assert spark.sparkContext.master.startswith("local[") and reader_kind(cfg, spark) == "python"
