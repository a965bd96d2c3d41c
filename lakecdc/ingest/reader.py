"""Reading Kafka in micro-batches with a Python client when Spark has no Kafka connector.

Spark's Kafka source is not installable on every machine (it is on Databricks: see
``kafka_source``). ``PythonKafkaReader`` (confluent-kafka) delivers the same micro-batches:
each is an Arrow table, and on demand a Spark DataFrame, with exactly the Kafka source's columns::

    key binary, value binary, topic string, partition int, offset bigint,
    timestamp timestamp, timestampType int, headers array<struct<key: string, value: binary>>

so decoding and writing are one code path whichever reader ran.

Positions come from the tables, never from consumer-group offsets: partitions are *assigned*
(no group join, no commit) starting after the offset ``start_offset(topic, partition)`` returns
(the table's committed progress), or at the beginning. Topics matching the subscribe pattern are
listed again every ``topic.refresh.interval.ms``, so a new source table is read without a restart.

A batch ends when it holds ``batch.max.records`` records, when ``batch.max.wait.ms`` passed since
its first record, or when every assigned partition is read to its end (``at_end_of_data``). Read
ahead of a continuous job (``batches(wanted)``), records keep joining the next batch while the batch
before is applied, and it ends by the last two only once the job wants it, as if the job had started
reading it then: at the end of every partition as of that moment, or ``batch.max.wait.ms`` later.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import accumulate
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import MissingExtraError, TransientError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

HEADER_ARROW = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
KAFKA_ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
    pa.field("headers", pa.list_(HEADER_ARROW)),
])
#: the most bytes one ``binary`` array holds (its offsets are 32-bit)
_MAX_BINARY_BYTES = 2**31 - 1
# confluent-kafka timestamp types -> Kafka's TimestampType ids (as Spark's source reports them)
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}

StartOffset = Callable[[str, int], "int | None"]


@dataclass
class KafkaMicroBatch:
    """One micro-batch of Kafka records (the Kafka source's columns).

    ``records`` is the Arrow form (always there for the Python reader); ``df`` the Spark form
    (always there for Spark's Kafka source; built from ``records`` on first use otherwise).
    """

    records: pa.Table | None
    read_at: datetime
    at_end_of_data: bool
    spark: SparkSession | None = None
    _df: DataFrame | None = field(default=None, repr=False)
    #: the number of records, when the reader counted them without collecting (Spark readers)
    known_count: int | None = None
    #: the partitions not read to their end when the batch closed (None: the reader cannot tell)
    lagging: frozenset[tuple[str, int]] | None = None

    @property
    def df(self) -> DataFrame:
        if self._df is None:
            from lakecdc.lake.frames import arrow_to_spark, kafka_schema
            assert self.spark is not None and self.records is not None
            self._df = arrow_to_spark(self.spark, self.records, kafka_schema())
        return self._df

    def arrow(self) -> pa.Table:
        if self.records is None:
            from lakecdc.lake.frames import spark_to_arrow
            self.records = spark_to_arrow(self.df.select(*KAFKA_ARROW_SCHEMA.names))
        return self.records

    @property
    def num_records(self) -> int:
        if self.known_count is not None:
            return self.known_count
        return self.arrow().num_rows


def records_to_arrow(messages: list[Any]) -> pa.Table:
    """confluent-kafka ``Message`` objects -> an Arrow table with the Kafka source's columns."""
    timestamps = [m.timestamp() for m in messages]
    return pa.Table.from_arrays([
        binary_array([m.key() for m in messages]),
        binary_array([m.value() for m in messages]),
        pa.array([m.topic() for m in messages], pa.string()),
        pa.array([m.partition() for m in messages], pa.int32()),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array([ts * 1000 if kind else None for kind, ts in timestamps], pa.int64())
          .cast(pa.timestamp("us", tz="UTC")),
        pa.array([_TIMESTAMP_TYPE.get(kind, -1) for kind, _ in timestamps], pa.int32()),
        headers_array([m.headers() for m in messages]),
    ], schema=KAFKA_ARROW_SCHEMA)


def binary_array(items: list[bytes | None]) -> pa.Array:
    """Keys or values as an Arrow ``binary`` array, their bytes copied once into one buffer.

    ``pa.array`` grows its buffer as it goes, copying a batch's values (300 MB for 100,000 Debezium
    records with schemas) several times over: the largest part of the Python reader's own time.
    """
    present: list[bytes] = [b for b in items if b is not None] if None in items else cast(list[bytes], items)
    data = b"".join(present)
    if len(data) > _MAX_BINARY_BYTES:  # beyond 32-bit offsets: Arrow splits it into chunks
        return pa.array(items, pa.binary())
    lengths = (0 if b is None else len(b) for b in items)
    offsets = np.fromiter(accumulate(lengths, initial=0), dtype=np.int32, count=len(items) + 1)
    validity = None if present is items else pa.array([b is not None for b in items], pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(items), [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=len(items) - len(present))


def headers_array(headers: list[list[tuple[str, bytes | None]] | None]) -> pa.Array:
    """Each record's headers (None: it has none) as ``array<struct<key, value>>``, built column-wise."""
    pairs = [pair for h in headers if h for pair in h]
    offsets = np.fromiter(accumulate((len(h) if h else 0 for h in headers), initial=0), dtype=np.int32,
                          count=len(headers) + 1)
    values = pa.StructArray.from_arrays([pa.array([k for k, _ in pairs], pa.string()),
                                         binary_array([v for _, v in pairs])], fields=list(HEADER_ARROW))
    mask = pa.array([h is None for h in headers], pa.bool_()) if None in headers else None
    return pa.ListArray.from_arrays(pa.array(offsets), values, type=pa.list_(HEADER_ARROW), mask=mask)


def matching_partitions(consumer: Any, pattern: re.Pattern[str], bootstrap_servers: str) -> list[tuple[str, int]]:
    """Every ``(topic, partition)`` of the topics whose name matches ``pattern``, from the broker's metadata."""
    from confluent_kafka import KafkaException

    try:
        metadata = consumer.list_topics(timeout=10)
    except KafkaException as exc:
        raise TransientError(f"cannot list topics on {bootstrap_servers}: {exc}") from exc
    return sorted((name, p) for name, topic in metadata.topics.items()
                  if topic.error is None and pattern.match(name) for p in topic.partitions)


class PythonKafkaReader:
    """Micro-batches from every topic matching the job's pattern (see the module docstring)."""

    def __init__(self, config: IngestConfig, start_offset: StartOffset, stop: threading.Event,
                 available_now: bool, spark: SparkSession | None = None) -> None:
        try:
            from confluent_kafka import Consumer
        except ImportError as exc:
            raise MissingExtraError("the Python Kafka reader", "kafka", str(exc)) from exc
        from lakecdc.transport.kafka_config import kafka_client_defaults

        settings: dict[str, Any] = {
            **kafka_client_defaults("consumer"),
            **config.kafka_client_properties(),
            "group.id": config.consumer_group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": config.topic_refresh_ms,
        }
        self._consumer = Consumer(settings)
        self._config = config
        self._pattern = re.compile(config.subscribe_pattern)
        self._start_offset = start_offset
        self._stop = stop
        self._available_now = available_now
        self._spark = spark
        self._assigned: set[tuple[str, int]] = set()
        self._at_end: set[tuple[str, int]] = set()
        self._last_refresh = 0.0

    @property
    def assigned(self) -> frozenset[tuple[str, int]]:
        return frozenset(self._assigned)

    def close(self) -> None:
        self._consumer.close()

    # ------------------------------------------------------------------ topics

    def refresh_topics(self) -> list[tuple[str, int]]:
        """Assign partitions of topics that appeared since the last look; returns the new ones."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self._last_refresh = time.monotonic()
        new: list[TopicPartition] = []
        for name, partition in matching_partitions(self._consumer, self._pattern, self._config.bootstrap_servers):
            if (name, partition) in self._assigned:
                continue
            committed = self._start_offset(name, partition)
            offset = OFFSET_BEGINNING if committed is None else committed + 1
            new.append(TopicPartition(name, partition, offset))
        if new:
            self._consumer.incremental_assign(new)
            for tp in new:
                self._assigned.add((tp.topic, tp.partition))
            log.info("reading %d new partition(s): %s", len(new),
                     ", ".join(f"{tp.topic}[{tp.partition}] from "
                               f"{'the beginning' if tp.offset < 0 else f'offset {tp.offset}'}" for tp in new))
        return [(tp.topic, tp.partition) for tp in new]

    # ------------------------------------------------------------------ batches

    def batches(self, wanted: threading.Event | None = None) -> Iterator[KafkaMicroBatch]:
        """Micro-batches until stopped, or (available-now) until everything present was read.

        ``wanted``: set while the job waits for the next batch (``read_ahead``); until then a batch
        ends only when full, and then as it would if the job had started reading it at that moment
        (holding what was read meanwhile). None: the job waits whenever a batch is read.
        """
        from confluent_kafka import KafkaError

        config = self._config
        # Read ahead, a batch the job now wants must not sit in a long poll: poll in short steps.
        poll = 0.2 if wanted is None else 0.05
        self.refresh_topics()
        while not self._stop.is_set():
            if time.monotonic() - self._last_refresh > config.topic_refresh_ms / 1000:
                self.refresh_topics()
            messages: list[Any] = []
            first_at: float | None = None
            wait = config.max_batch_wait_ms / 1000
            asked_at = time.monotonic() if wanted is None else None  # when the job asked for this batch
            reached: set[tuple[str, int]] = set()  # read ahead: partitions read to their end since then
            while len(messages) < config.max_batch_records and not self._stop.is_set():
                chunk = self._consumer.consume(num_messages=min(10_000, config.max_batch_records - len(messages)),
                                               timeout=poll)
                for message in chunk:
                    error = message.error()
                    if error is None:
                        self._at_end.discard((message.topic(), message.partition()))
                        messages.append(message)
                    elif error.code() == KafkaError._PARTITION_EOF:
                        # a partition's end names its partition
                        tp = (cast(str, message.topic()), cast(int, message.partition()))
                        self._at_end.add(tp)
                        reached.add(tp)
                    elif error.retriable() or not error.fatal():
                        log.warning("Kafka reports %s; retrying", error.str())
                    else:
                        raise TransientError(f"Kafka consumer failed: {error.str()}")
                now = time.monotonic()
                if messages and first_at is None:
                    first_at = now
                if asked_at is None:
                    if wanted is None or not wanted.is_set():
                        reached.clear()
                        continue  # the batch before is still applied: keep reading into this one
                    asked_at = now
                # The end of every partition, as it was when the job asked (read ahead: a partition
                # read to its end since then counts even if a record arrived after).
                if self._assigned <= (self._at_end if wanted is None else self._at_end | reached):
                    break
                # the window: from the batch's first record, or (read ahead) from the ask if later
                if now - (asked_at if first_at is None else max(first_at, asked_at)) >= wait:
                    break  # (no record: an empty batch, so the job can look at its clock)
            at_end = self._all_at_end()
            yield KafkaMicroBatch(records_to_arrow(messages), datetime.now(timezone.utc), at_end, self._spark,
                                  lagging=frozenset(self._assigned - self._at_end))
            if self._available_now and at_end and not messages:
                if not self.refresh_topics():
                    return

    def _all_at_end(self) -> bool:
        """Every assigned partition has been read to its end (trivially true with none assigned)."""
        return self._assigned <= self._at_end
