"""Spark's own Kafka source as a bounded batch read of the ranges lakecdc's loop decides.

With ``reader=spark-kafka`` (``spark-sql-kafka-0-10`` on the classpath: Databricks has it) each
micro-batch is ``spark.read.format("kafka")`` with ``assign``, ``startingOffsets`` and
``endingOffsets`` naming every partition of the batch (``spark_reader.SparkRangeReader``), and
``includeHeaders=true`` so the columns equal the other readers'. There is no streaming query and no
checkpoint: where each batch starts comes from the tables' committed offsets, so events held back
by the job (a transaction waiting for its END, a stopped table) are read again after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.offset_ranges import OffsetRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def spark_kafka_available(spark: SparkSession) -> bool:
    """True when Spark's Kafka source can be loaded in this session (Databricks, or the package added)."""
    try:
        jvm: Any = spark.sparkContext._jvm  # None only on Spark Connect, which has no JVM
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(KAFKA_SOURCE_CLASS, False, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException; Spark Connect has no JVM
        return False


def offsets_json(offsets: Mapping[tuple[str, int], int]) -> str:
    """Spark's per-partition offsets JSON (``startingOffsets`` / ``endingOffsets``).

    >>> offsets_json({("shop.public.a", 0): 42})
    '{"shop.public.a": {"0": 42}}'
    """
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(nested)


def bounded_read(spark: SparkSession, config: IngestConfig, ranges: Iterable[OffsetRange]) -> DataFrame:
    """The records ``[start, start + limit)`` of each range, read by Spark's Kafka source."""
    ranges = list(ranges)
    assign: dict[str, list[int]] = {}
    for r in ranges:
        assign.setdefault(r.topic, []).append(r.partition)
    reader = (spark.read.format("kafka")
              .option("assign", json.dumps({t: sorted(ps) for t, ps in sorted(assign.items())}))
              .option("startingOffsets", offsets_json({(r.topic, r.partition): r.start for r in ranges}))
              .option("endingOffsets", offsets_json({(r.topic, r.partition): r.start + r.limit for r in ranges}))
              .option("includeHeaders", "true")
              # A range below the log start (retention) is moved up by the reader, not an error.
              .option("failOnDataLoss", "false"))
    for key, value in config.kafka_client_properties().items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load().select("key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                "headers")
