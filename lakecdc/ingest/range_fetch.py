"""Fetch Kafka offset ranges with confluent-kafka: in the driver, or on Spark executors in an Arrow task.

``fetch_ranges(settings, ranges)`` reads each ``OffsetRange`` from its start until ``limit`` records
or the partition's end, and returns Arrow record batches with exactly the Kafka source's columns
(``reader.KAFKA_ARROW_SCHEMA``). It needs nothing but confluent-kafka and pyarrow, so Spark ships it
to executors as the function of ``mapInArrow`` (``executor_fetch``): each task fetches its own ranges
where it runs, and no Spark Kafka connector jar is needed.

A partition's end is the end the consumer sees (``enable.partition.eof``); a range that makes no
progress for ``stall_seconds`` raises ``TransientError`` naming the partition instead of returning
short, because a short range means "the end was reached" to the planner.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakecdc.errors import MissingExtraError, TransientError
from lakecdc.ingest.offset_ranges import OffsetRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Columns of the DataFrame of ranges handed to ``executor_fetch``.
RANGE_COLUMNS = ("topic", "partition", "start", "limit")
_CHUNK = 10_000


def fetch_ranges(settings: dict[str, Any], ranges: Iterable[OffsetRange],
                 stall_seconds: float = 60.0) -> Iterator[pa.RecordBatch]:
    """The records of ``ranges`` (see the module docstring), in chunks of at most 10,000."""
    try:
        from confluent_kafka import Consumer, KafkaError, TopicPartition
    except ImportError as exc:  # an executor without the library: say which
        raise MissingExtraError("fetching Kafka ranges", "kafka", str(exc)) from exc
    from lakecdc.ingest.reader import records_to_arrow

    wanted = {(r.topic, r.partition): r for r in ranges if r.limit > 0}
    if not wanted:
        return
    consumer = Consumer({**settings, "enable.auto.commit": False, "enable.auto.offset.store": False,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(t, p, r.start) for (t, p), r in wanted.items()])
        counts = dict.fromkeys(wanted, 0)
        open_parts = set(wanted)
        last_progress = time.monotonic()
        while open_parts:
            messages = consumer.consume(num_messages=_CHUNK, timeout=0.5)
            keep = []
            for message in messages:
                tp = (message.topic(), message.partition())
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        open_parts.discard(tp)
                        continue
                    if error.fatal() or not error.retriable():
                        raise TransientError(f"Kafka fetch of {tp[0]}[{tp[1]}] failed: {error.str()}")
                    continue
                if tp not in open_parts:
                    continue  # past this range's limit: the next batch reads it
                keep.append(message)
                counts[tp] += 1
                if counts[tp] >= wanted[tp].limit:
                    open_parts.discard(tp)
                    consumer.pause([TopicPartition(*tp)])
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > stall_seconds:
                stuck = ", ".join(f"{t}[{p}] from offset {wanted[(t, p)].start}" for t, p in sorted(open_parts))
                raise TransientError(f"no Kafka records nor end of partition within {stall_seconds:g}s: {stuck}")
            if keep:
                yield from records_to_arrow(keep).to_batches()
    finally:
        consumer.close()


def _fetch_task(settings: dict[str, Any], stall_seconds: float) -> Any:
    """The ``mapInArrow`` function: ranges in, Kafka records out (runs on an executor)."""
    def fetch(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ranges = [OffsetRange(row["topic"], row["partition"], row["start"], row["limit"])
                  for batch in batches for row in batch.to_pylist()]
        yield from fetch_ranges(settings, ranges, stall_seconds)
    return fetch


def executor_fetch(spark: SparkSession, settings: dict[str, Any], ranges: list[OffsetRange],
                   stall_seconds: float = 60.0) -> DataFrame:
    """A DataFrame of the records of ``ranges``, fetched on the executors (one task per range).

    Lazy: nothing is fetched until an action runs. ``settings`` (which may hold credentials) travel
    to the executors inside the task closure, as any Spark Kafka connector's options do.
    """
    from pyspark.sql import types as T

    from lakecdc.lake.frames import kafka_schema

    schema = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                           T.StructField("start", T.LongType()), T.StructField("limit", T.LongType())])
    rows = [tuple(r.as_row().values()) for r in ranges]
    # parallelize with one slice per row: exactly one range per task, whatever the default parallelism
    plan = spark.createDataFrame(spark.sparkContext.parallelize(rows, max(1, len(rows))), schema)
    return plan.mapInArrow(_fetch_task(settings, stall_seconds), kafka_schema())
