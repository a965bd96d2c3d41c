"""Spark's own Kafka source: detected when on the classpath, used by the job, refused when forced without it.

The golden-records test needs ``spark-sql-kafka-0-10`` on Spark's classpath (``connector_spark``:
``tests/integration/test_spark_connectors.py`` runs it in a Spark JVM that has it); the refusal runs
in the suite's own JVM, which has no Kafka source.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import assert_final_source_state

from lakecdc.errors import ConfigError
from lakecdc.ingest.config import IngestConfig
from lakecdc.ingest.job import run_ingest
from lakecdc.ingest.kafka_source import spark_kafka_available

pytestmark = pytest.mark.integration


def config(broker, spark, prefix: str, tmp_path: Path, reader: str) -> IngestConfig:
    return IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse"), "reader": reader,
        "table.name.format.bronze": f"{prefix}_bronze.{{table}}", "table.name.format.silver": f"{prefix}_silver.{{table}}",
        "progress.path": str(tmp_path / "progress")})


def test_forcing_the_spark_reader_without_the_connector_names_the_fix(broker, spark, tmp_path: Path) -> None:
    if spark_kafka_available(spark):
        pytest.skip("Spark's Kafka source is on this classpath; the refusal cannot be shown")
    with pytest.raises(ConfigError, match="spark-sql-kafka-0-10"):
        run_ingest(config(broker, spark, unique_prefix("sk"), tmp_path, "spark"), "available-now", spark=spark)


@pytest.mark.slow
def test_golden_records_through_sparks_kafka_source(kafka_broker, connector_spark, tmp_path: Path) -> None:
    # On Apache Kafka: Spark's source plans each batch up to the partitions' high watermarks, which
    # tansu reports wrong when a record batch holds several records (it then read 3 of 20 events).
    broker = kafka_broker
    spark = connector_spark
    assert spark_kafka_available(spark), "the connector session must have Spark's Kafka source"
    prefix = unique_prefix("sk")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    summary = run_ingest(config(broker, spark, prefix, tmp_path, "spark"), "available-now", spark=spark)
    assert summary.dead_letters == 0
    assert_final_source_state(spark, prefix)
