"""PostgreSQL -> capture -> broker -> ingest -> bronze/silver, Iceberg and Delta, compared typed.

One source database feeds two ingest jobs reading the same topics: one writes every table as
Iceberg (Spark SQL MERGE INTO), the other as Delta (delta-rs). After each workload both are
compared with the source: every silver table equals its source table key by key with exact
types, and bronze holds every change the workload made exactly once (``(op, key)`` multisets).
Then a finished run is repeated and already-consumed records are delivered again: nothing may
change.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from e2e_lake import check
from e2e_pipeline import PgPipeline, unique_name
from workloads import pg_scenario
from workloads.changelog import ChangeLog
from workloads.pg_random import RandomWorkload

from lakecdc.devstack.broker import kafka_client_defaults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 20261122


@pytest.fixture
def pipeline(pg, broker, spark, tmp_path: Path):
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("e2epg"))
    yield pipe
    print("timings:", "; ".join(pipe.timings))
    pipe.close()


def test_postgres_workloads_into_iceberg_and_delta(pipeline: PgPipeline) -> None:
    rng = random.Random(SEED)
    tables = list(pg_scenario.KEYS)
    pipeline.add_lake("ice", "iceberg", tables)
    pipeline.add_lake("dlt", "delta", tables)
    with pipeline.connect() as conn:
        pg_scenario.create_schema(conn)
        log = ChangeLog(conn, pg_scenario.KEYS, keyless=pg_scenario.KEYLESS)
        pg_scenario.seed(log, rng)

        with pipeline.capture_while():  # the snapshot (r events), then streaming
            pg_scenario.dml(log, rng)
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "snapshot + DML, PK change, TOAST, multi-table transaction"))

        with pipeline.capture_while():
            pg_scenario.schema_and_truncate(log, rng)
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "added column, truncate then inserts"))

        with pipeline.capture_while():
            RandomWorkload(log, SEED).run(2500)
        summaries = pipeline.ingest_all()
        assert all(s.events >= 2500 for s in summaries.values()), summaries
        check(pipeline.compare_all(log, "randomized workload of 2500 operations"))

        # A finished run again: nothing new to read, no table gets a new version.
        versions = {label: lake.versions(tables) for label, (_, lake) in pipeline.lakes.items()}
        again = pipeline.ingest_all()
        assert all(s.events == 0 for s in again.values()), again
        assert {label: lake.versions(tables) for label, (_, lake) in pipeline.lakes.items()} == versions

        # Redelivery: records already consumed arrive again at new offsets (a producer retry, a
        # capture restarted from an older offset). Bronze (idempotent on source position) and
        # silver (guarded by _seq) must not change.
        redelivered = redeliver_tail(pipeline.broker.bootstrap_servers, pipeline.name, fraction=0.5)
        assert redelivered > 1000
        pipeline.ingest_all()
        check(pipeline.compare_all(log, f"redelivery of {redelivered} consumed records"))


def redeliver_tail(bootstrap: str, prefix: str, fraction: float) -> int:
    """Copy the last ``fraction`` of every data and transaction topic of ``prefix`` onto its end."""
    from confluent_kafka.admin import AdminClient

    topics = [t for t in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
              if t.startswith(prefix + ".")]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"redeliver-{prefix}",
                         "enable.auto.commit": False, **kafka_client_defaults("consumer")})
    producer = Producer({"bootstrap.servers": bootstrap, **kafka_client_defaults("producer")})
    copied = 0
    try:
        for topic in sorted(topics):
            records = read_all(consumer, topic)
            for msg in records[int(len(records) * (1 - fraction)):]:
                producer.produce(topic, key=msg.key(), value=msg.value(), headers=msg.headers())
                copied += 1
        assert producer.flush(60) == 0
    finally:
        consumer.close()
    return copied


def read_all(consumer: Consumer, topic: str, timeout: float = 120) -> list:
    """Every record of partition 0 (the capture writes one partition per topic), read up to its
    high watermark (the capture has stopped: nothing is written behind it)."""
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list = []
    deadline = time.monotonic() + timeout
    while high > 0 and (not records or records[-1].offset() < high - 1):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: read {len(records)} records, not up to offset {high - 1}")
        records.extend(m for m in consumer.consume(1000, 0.5) if not m.error())
    return records


def test_transactions_split_across_small_micro_batches(pg, broker, spark, tmp_path: Path) -> None:
    """Micro-batches far smaller than the workload: transactions straddle batch boundaries and
    are held back until complete; when released, their events must still be applied."""
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("e2esmall"))
    try:
        rng = random.Random(SEED + 1)
        tables = list(pg_scenario.KEYS)
        pipe.add_lake("dlt", "delta", tables, **{"batch.max.records": "150"})
        with pipe.connect() as conn:
            pg_scenario.create_schema(conn)
            log = ChangeLog(conn, pg_scenario.KEYS, keyless=pg_scenario.KEYLESS)
            pg_scenario.seed(log, rng)
            with pipe.capture_while():
                pg_scenario.dml(log, rng)
                RandomWorkload(log, SEED + 1).run(600)
            pipe.ingest_all()
            check(pipe.compare_all(log, "600 random operations read in micro-batches of 150 records"))
    finally:
        print("timings:", "; ".join(pipe.timings))
        pipe.close()
