"""IngestConfig, table naming, triggers, the job state file, Spark's startingOffsets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lakecdc.config.ingest import IngestConfig, load_ingest_config
from lakecdc.errors import ConfigError
from lakecdc.ingest.job import Trigger
from lakecdc.ingest.job_state import JobState, load_state, save_state
from lakecdc.ingest.kafka_source import offsets_json
from lakecdc.lake.naming import TableNamer
from lakecdc.lake.segments import SourceTable

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic.prefix": "shop"}


def test_yaml_file_with_mapping_and_kafka_passthrough(tmp_path: Path) -> None:
    path = tmp_path / "ingest.yaml"
    path.write_text(
        "name: nightly\n"
        "kafka.bootstrap.servers: broker:9092\n"
        "kafka.security.protocol: SASL_SSL\n"
        "topic.prefix: shop\n"
        "table.format: delta\n"
        "table.mapping:\n"
        "  shop.public.orders: {silver: main.sales.orders, format: iceberg, key_columns: 'id, line'}\n")
    config = load_ingest_config(path)
    assert config.name == "nightly" and config.table_format == "delta"
    assert config.kafka_client_properties() == {"security.protocol": "SASL_SSL", "bootstrap.servers": "broker:9092"}
    override = config.table_overrides()["shop.public.orders"]
    assert override.silver == "main.sales.orders" and override.key_column_list == ("id", "line")


def test_unknown_property_names_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'table.format'"):
        IngestConfig.from_properties({**BASE, "table.formt": "delta"})
    with pytest.raises(ConfigError, match="table.format"):
        IngestConfig.from_properties({**BASE, "table.format": "parquet"})
    with pytest.raises(ConfigError, match="must end with one of"):
        IngestConfig.from_properties({**BASE, "table.mapping.shop.public.orders.colour": "red"}).table_overrides()


def test_backlog_batches_grow_to_four_times_the_batch_or_the_property() -> None:
    assert IngestConfig.from_properties({**BASE, "batch.max.records": "500"}).backlog_batch_records == 2000
    assert IngestConfig.from_properties({**BASE, "batch.backlog.max.records": "150000"}).backlog_batch_records == 150000
    with pytest.raises(ConfigError, match=r"'batch.backlog.max.records' \(10\) is below 'batch.max.records' \(20\)"):
        IngestConfig.from_properties({**BASE, "batch.max.records": "20", "batch.backlog.max.records": "10"})


def test_subscribe_pattern_covers_data_control_and_heartbeat_topics_only() -> None:
    pattern = re.compile(IngestConfig.from_properties(BASE).subscribe_pattern)
    assert all(pattern.match(t)
               for t in ("shop", "shop.transaction", "shop.public.orders", "__debezium-heartbeat.shop"))
    assert not any(pattern.match(t) for t in ("shopx.public.a", "other.public.a", "__debezium-heartbeat.other"))


def test_table_names_from_templates_and_mapping() -> None:
    config = IngestConfig.from_properties({
        **BASE, "table.name.format.silver": "main.{schema}.{table}",
        "table.mapping.shop.public.orders.bronze": "raw.orders_log",
        "table.mapping.shop.public.orders.delete_mode": "soft"})
    namer = TableNamer(config)
    source = SourceTable("postgresql", "inventory", "public", "customers")
    target = namer.target("shop.public.customers", source, ("id",))
    assert (target.bronze_table, target.silver_table) == ("bronze.shop_public_customers", "main.public.customers")
    assert target.connector == "postgres" and target.key_columns == ("id",) and target.format == "iceberg"
    orders = namer.target("shop.public.orders", None, ())
    assert orders.bronze_table == "raw.orders_log" and orders.delete_mode == "soft"
    assert orders.schema == "public" and orders.table == "orders"


def test_bad_template_placeholder_is_a_config_error() -> None:
    namer = TableNamer(IngestConfig.from_properties({**BASE, "table.name.format.silver": "s.{tabel}"}))
    with pytest.raises(ConfigError, match="tabel"):
        namer.target("shop.public.a")


@pytest.mark.parametrize("text,expected", [
    ("available-now", Trigger(True)), ("availableNow", Trigger(True)), ("continuous", Trigger(False, 0.0)),
    ("every:30s", Trigger(False, 30.0)), ("every:500ms", Trigger(False, 0.5)), ("every:2m", Trigger(False, 120.0))])
def test_triggers(text: str, expected: Trigger) -> None:
    assert Trigger.parse(text) == expected


def test_bad_trigger() -> None:
    with pytest.raises(ConfigError, match="every:30s"):
        Trigger.parse("every:soon")


def test_state_file_round_trip_and_atomic_replace(tmp_path: Path) -> None:
    assert load_state(tmp_path) == JobState()
    state = JobState(batch_id=3, applied_through_seq=[1, 2, 1, 0], table_keys={"shop.public.a": ["id"]})
    state.set_control_offset("shop.transaction", 0, 41)
    save_state(tmp_path, state)
    again = load_state(tmp_path)
    assert again == state and again.control_offset("shop.transaction", 0) == 41
    assert json.loads((tmp_path / "state.json").read_text())["batch_id"] == 3
    assert not (tmp_path / "state.tmp").exists()


def test_spark_offsets_json_names_every_partition_of_the_batch() -> None:
    assert json.loads(offsets_json({("shop.public.a", 0): 42, ("shop.public.a", 1): 0, ("shop.public.b", 0): 7})) == {
        "shop.public.a": {"0": 42, "1": 0}, "shop.public.b": {"0": 7}}
