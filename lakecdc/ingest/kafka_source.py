"""Spark's own Kafka source (``spark.readStream.format("kafka")``), used when it is on the classpath.

On Databricks (or with ``spark-sql-kafka-0-10`` in ``spark.jars.packages``) the job reads through
Structured Streaming: ``subscribePattern`` over the topic prefix, ``includeHeaders=true`` so the
columns equal the Python reader's, and ``foreachBatch`` calling the same batch processor.

Positions still come from the tables: with a new checkpoint the query starts at the earliest
offsets (``startingOffsets`` with specific offsets would have to name every partition of every
matching topic, which the job cannot list without a Kafka client), and the processor drops every
record at or below a table's committed offset, so a lost or older checkpoint causes no duplicates;
Spark marks a batch done only after ``foreachBatch`` returned (the tables committed), so the
checkpoint is never ahead of the tables. ``starting_offsets_json`` builds the specific form
for callers that know every partition. Topics that appear later are picked up by the pattern and
start at their beginning (Spark's default for partitions discovered after the start).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from lakecdc.ingest.config import IngestConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
EARLIEST = -2  # Spark's startingOffsets code for "earliest"


def spark_kafka_available(spark: SparkSession) -> bool:
    """True when Spark's Kafka source can be loaded in this session (Databricks, or the package added)."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(KAFKA_SOURCE_CLASS, False, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException; Spark Connect has no JVM
        return False


def starting_offsets_json(start: Mapping[tuple[str, int], int]) -> str:
    """Spark's ``startingOffsets`` JSON: next offset to read per partition (committed + 1).

    >>> starting_offsets_json({("shop.public.a", 0): 41})
    '{"shop.public.a": {"0": 42}}'
    """
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), committed in sorted(start.items()):
        nested.setdefault(topic, {})[str(partition)] = committed + 1 if committed >= 0 else EARLIEST
    return json.dumps(nested)


def kafka_stream(spark: SparkSession, config: IngestConfig,
                 committed: Mapping[tuple[str, int], int]) -> DataFrame:
    """The streaming DataFrame with the Kafka source's columns over every matching topic."""
    reader = (spark.readStream.format("kafka")
              .option("subscribePattern", config.subscribe_pattern)
              .option("includeHeaders", "true")
              .option("failOnDataLoss", "false")
              .option("maxOffsetsPerTrigger", str(config.max_batch_records))
              .option("startingOffsets", starting_offsets_json(committed) if committed else "earliest"))
    for key, value in config.kafka_client_properties().items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def start_query(stream: DataFrame, process: Callable[[DataFrame, int], None], available_now: bool,
                interval_seconds: float, checkpoint: str) -> StreamingQuery:
    """``foreachBatch(process)``: once over what is present, or every ``interval_seconds``.

    Spark's experimental continuous mode does not support ``foreachBatch``; the job's
    ``continuous`` trigger is back-to-back micro-batches (interval 0).
    """
    writer = stream.writeStream.foreachBatch(process).option("checkpointLocation", checkpoint)
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{int(interval_seconds * 1000)} milliseconds")
    return writer.start()
