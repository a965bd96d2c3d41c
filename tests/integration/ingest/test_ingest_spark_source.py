"""Spark's own Kafka source (``reader=spark-kafka``): refused without its jar, and the job's golden run with it."""

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


def config(bootstrap: str, spark, prefix: str, tmp_path: Path, reader: str) -> IngestConfig:
    return IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix,
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse"), "reader": reader,
        "table.name.format.bronze": f"{prefix}_bronze.{{table}}", "table.name.format.silver": f"{prefix}_silver.{{table}}",
        "progress.path": str(tmp_path / "progress")})


def test_forcing_sparks_kafka_source_without_the_connector_names_the_fix(broker, spark, tmp_path: Path) -> None:
    if spark_kafka_available(spark):
        pytest.skip("Spark's Kafka source is on this classpath; the refusal cannot be shown")
    with pytest.raises(ConfigError, match="spark-sql-kafka-0-10.*reader=spark"):
        run_ingest(config(broker.bootstrap_servers, spark, unique_prefix("sk"), tmp_path, "spark-kafka"),
                   "available-now", spark=spark)


@pytest.mark.slow
def test_golden_records_through_sparks_kafka_source(request, spark, tmp_path: Path) -> None:
    if not spark_kafka_available(spark):
        pytest.skip("org.apache.spark:spark-sql-kafka-0-10_2.12 is not in this Spark session (the bootstrap "
                    "fetches it from Maven Central; offline machines lack it)")
    try:  # its batch ranges end at the high watermarks, which only a real Kafka reports exactly
        bootstrap = request.getfixturevalue("kafka_broker").bootstrap_servers
    except pytest.FixtureLookupError:
        pytest.skip("no Apache Kafka broker fixture (kafka_broker) in this test session")
    prefix = unique_prefix("sk")
    records = golden_records(prefix)
    create_topics(bootstrap, [r["topic"] for r in records])
    publish_records(bootstrap, records)
    summary = run_ingest(config(bootstrap, spark, prefix, tmp_path, "spark-kafka"), "available-now", spark=spark)
    assert summary.dead_letters == 0
    assert_final_source_state(spark, prefix)
