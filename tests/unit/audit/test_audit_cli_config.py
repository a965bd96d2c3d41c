"""``lakecdc audit --config``: formats, warehouse and bronze names come from the ingest configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.audit.tables import AuditError
from lakecdc.cli.audit import AuditLake
from lakecdc.ingest.job_state import JobState, save_state


def test_the_ingest_configuration_says_where_and_in_which_format_each_table_is(tmp_path: Path) -> None:
    config = tmp_path / "ingest.yaml"
    config.write_text(f"""name: shop-ingest
kafka.bootstrap.servers: 127.0.0.1:1
topic.prefix: shop
warehouse: {tmp_path}/lake
table.format: delta
progress.path: {tmp_path}/state
table.mapping.shop.public.orders.format: iceberg
""")
    save_state(tmp_path / "state", JobState(connector="postgres", table_keys={"shop.public.customers": ["id"]}))
    lake = AuditLake.of(config, None, None, None)
    assert lake.warehouse == tmp_path / "lake" and lake.connector == "postgres"
    assert lake.formats["silver.shop_public_orders"] == "iceberg"  # mapped, without a state entry
    assert lake.formats["silver.shop_public_customers"] == "delta"
    assert lake.bronze_names["silver.shop_public_customers"] == "bronze.shop_public_customers"
    assert lake.formats[lake.log_table] == "delta" and lake.log_table == "lakecdc.consistency"
    assert AuditLake.of(config, "iceberg", tmp_path / "other", None).warehouse == tmp_path / "other"  # options win


def test_without_config_or_warehouse_the_error_says_what_to_give() -> None:
    with pytest.raises(AuditError, match="--config"):
        AuditLake.of(None, None, None, None)
