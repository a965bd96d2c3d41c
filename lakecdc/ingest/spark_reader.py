"""Micro-batches fetched by Spark: executors with confluent-kafka, or Spark's Kafka source, bounded by ranges.

``SparkRangeReader.batches()`` yields the same ``KafkaMicroBatch``es as the Python reader, as Spark
DataFrames with the Kafka source's columns. Each batch is a set of offset ranges that lakecdc's loop
decides (``offset_ranges.RangePlanner``) from the tables' committed offsets, so there is no streaming
checkpoint that could run ahead of the tables. Two fetch engines read the ranges:

- ``executors`` (``reader=spark``): every range is fetched by a Spark task with confluent-kafka
  (``range_fetch.executor_fetch``); no Spark Kafka connector jar is needed.
- ``kafka-source`` (``reader=spark-kafka``): Spark's own Kafka source as a *batch* read
  (``spark.read.format("kafka")`` with ``startingOffsets``/``endingOffsets`` per partition). Its ranges
  need exact ends, which come from the partitions' high watermarks: use it with brokers that report
  them correctly (every Apache Kafka; not the local stack's tansu).

The fetched DataFrame is persisted for the batch (the per-partition counts and the processing read it
once each) and cut back to the exact offsets first counted, so a re-computed partition (a lost
executor) can only return the same records.
"""

from __future__ import annotations

import logging
import operator
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from functools import reduce
from typing import TYPE_CHECKING, Any, Literal

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import MissingExtraError
from lakecdc.ingest.offset_ranges import FetchedRange, OffsetRange, RangePlanner, StartOffset
from lakecdc.ingest.reader import KafkaMicroBatch, matching_partitions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

FetchEngine = Literal["executors", "kafka-source"]


class SparkRangeReader:
    """Micro-batches from every topic matching the job's pattern, fetched by Spark (module docstring)."""

    def __init__(self, config: IngestConfig, start_offset: StartOffset, stop: threading.Event,
                 available_now: bool, spark: SparkSession, engine: FetchEngine = "executors",
                 backlog_records: int | None = None) -> None:
        try:
            from confluent_kafka import Consumer
        except ImportError as exc:
            raise MissingExtraError("the Spark range reader", "kafka", str(exc)) from exc
        from lakecdc.transport.kafka_config import kafka_client_defaults

        self._settings: dict[str, Any] = {**kafka_client_defaults("consumer"), **config.kafka_client_properties(),
                                          "group.id": config.consumer_group}
        # The driver's consumer only lists topics (and, for Spark's Kafka source, reads watermarks).
        self._metadata = Consumer(self._settings)
        self._config = config
        self._pattern = re.compile(config.subscribe_pattern)
        # ``backlog_records``: the largest batch behind a backlog, when not ``batch.backlog.max.records``
        self._backlog_records = backlog_records or config.backlog_batch_records
        self._planner = RangePlanner(start_offset, config.max_batch_records, self._backlog_records)
        self._stop = stop
        self._available_now = available_now
        self._spark = spark
        self._engine = engine
        self._last_refresh = 0.0

    @property
    def assigned(self) -> frozenset[tuple[str, int]]:
        return self._planner.partitions

    @property
    def budget(self) -> int:
        """The records the next batch may read: more than ``batch.max.records`` behind a backlog."""
        return self._planner.budget

    def close(self) -> None:
        self._metadata.close()

    def refresh_topics(self) -> list[tuple[str, int]]:
        """Start reading partitions of topics that appeared since the last look; returns the new ones."""
        self._last_refresh = time.monotonic()
        new = self._planner.add(matching_partitions(self._metadata, self._pattern, self._config.bootstrap_servers))
        if new:
            log.info("reading %d new partition(s): %s", len(new), ", ".join(
                f"{t}[{p}] from offset {self._planner.next_offset((t, p))}" for t, p in new))
        return new

    def batches(self) -> Iterator[KafkaMicroBatch]:
        """Micro-batches until stopped, or (available-now) until everything present was read."""
        self.refresh_topics()
        idle_wait = self._config.max_batch_wait_ms / 1000
        while not self._stop.is_set():
            if time.monotonic() - self._last_refresh > self._config.topic_refresh_ms / 1000:
                self.refresh_topics()
            ranges = self._planner.plan()
            df, fetched = self._fetch(ranges)
            budget = self._planner.budget
            at_end = self._planner.advance(ranges, fetched)
            self._log_budget(budget)
            count = sum(f.count for f in fetched.values())
            batch = KafkaMicroBatch(None, datetime.now(timezone.utc), at_end, self._spark, df, known_count=count,
                                    lagging=self._planner.lagging)
            try:
                yield batch
            finally:
                df.unpersist()
            if at_end and count == 0:
                if self._available_now and not self.refresh_topics():
                    return
                self._stop.wait(idle_wait)  # nothing new: do not spin Spark jobs

    def _log_budget(self, before: int) -> None:
        after = self._planner.budget
        if after > before:
            log.info("behind a backlog: the next batch reads up to %s records (batch.backlog.max.records %s)",
                     f"{after:,}", f"{self._backlog_records:,}")
        elif after < before:
            log.info("caught up: batches read up to %s records again (batch.max.records)", f"{after:,}")

    def _fetch(self, ranges: list[OffsetRange]) -> tuple[DataFrame, dict[tuple[str, int], FetchedRange]]:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        if self._engine == "kafka-source":
            ranges = self._bounded_by_watermarks(ranges)
        ranges = [r for r in ranges if r.limit > 0]
        if not ranges:
            return self._empty(), {}
        if self._engine == "kafka-source":
            from lakecdc.ingest.kafka_source import bounded_read

            df = bounded_read(self._spark, self._config, ranges)
        else:
            from lakecdc.ingest.range_fetch import executor_fetch

            df = executor_fetch(self._spark, self._settings, ranges)
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        counted = df.groupBy("topic", "partition").agg(F.count(F.lit(1)).alias("n"), F.max("offset").alias("last"))
        fetched = {(r["topic"], r["partition"]): FetchedRange(r["topic"], r["partition"], r["n"], r["last"])
                   for r in counted.collect()}
        exact = self._planner.exact_ranges(ranges, fetched)
        if not exact:
            return df, fetched
        cut = reduce(operator.or_, [(F.col("topic") == topic) & (F.col("partition") == partition)
                                    & F.col("offset").between(first, last)
                                    for (topic, partition), (first, last) in exact.items()])
        return df.where(cut), fetched

    def _empty(self) -> DataFrame:
        from lakecdc.lake.frames import kafka_schema

        return self._spark.createDataFrame([], kafka_schema())

    def _bounded_by_watermarks(self, ranges: list[OffsetRange]) -> list[OffsetRange]:
        """Spark's Kafka source reads ``[start, end)`` exactly: end = min(high watermark, start + limit)."""
        from confluent_kafka import TopicPartition

        bounded = []
        for r in ranges:
            low, high = self._metadata.get_watermark_offsets(TopicPartition(r.topic, r.partition), timeout=10,
                                                             cached=False)
            start = max(r.start, low)
            bounded.append(OffsetRange(r.topic, r.partition, start, max(0, min(high - start, r.limit))))
        return bounded
