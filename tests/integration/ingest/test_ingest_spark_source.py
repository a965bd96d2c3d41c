"""Spark's own Kafka source (``reader=spark-kafka``): refused without its jar, and the job's golden run with it.

The golden-records test needs ``spark-sql-kafka-0-10`` on Spark's classpath (``connector_spark``:
``tests/integration/test_spark_connectors.py`` runs it in a Spark JVM that has it) and Apache Kafka:
each batch reads ``[start, end)`` exactly, with ends from the partitions' high watermarks, which the
local stack's tansu reports wrong. The refusal runs in the suite's own JVM, which has no Kafka source.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import assert_final_source_state

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import ConfigError
from lakecdc.ingest.job import run_ingest
from lakecdc.ingest.kafka_source import spark_kafka_available

pytestmark = pytest.mark.integration


def config(bootstrap: str, spark, prefix: str, tmp_path: Path, reader: str) -> IngestConfig:
    return IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix,
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse"), "reader": reader,
        "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}",
        "progress.path": str(tmp_path / "progress")})


def test_forcing_sparks_kafka_source_without_the_connector_names_the_fix(broker, spark, tmp_path: Path) -> None:
    if spark_kafka_available(spark):
        pytest.skip("Spark's Kafka source is on this classpath; the refusal cannot be shown")
    with pytest.raises(ConfigError, match="spark-sql-kafka-0-10.*reader=spark"):
        run_ingest(config(broker.bootstrap_servers, spark, unique_prefix("sk"), tmp_path, "spark-kafka"),
                   "available-now", spark=spark)


@pytest.mark.slow
@pytest.mark.spark4_connectors  # the Spark 4 environment fetches Kafka's broker jars too (jar set ``kafka``)
def test_golden_records_through_sparks_kafka_source(kafka_broker, connector_spark, tmp_path: Path) -> None:
    spark = connector_spark
    assert spark_kafka_available(spark), "the connector session must have Spark's Kafka source"
    prefix = unique_prefix("sk")
    records = golden_records(prefix)
    create_topics(kafka_broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(kafka_broker.bootstrap_servers, records)
    summary = run_ingest(config(kafka_broker.bootstrap_servers, spark, prefix, tmp_path, "spark-kafka"),
                         "available-now", spark=spark)
    assert summary.dead_letters == 0
    assert_final_source_state(spark, prefix)
