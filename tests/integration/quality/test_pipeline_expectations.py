"""Pipeline expectations in a real ingest run (golden Debezium records, real broker, Spark, Iceberg):
``quarantine`` keeps the failing event out of silver and in ``<silver>_quarantine`` while bronze keeps
every event; ``fail`` stops that table only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import table_rows
from test_ingest_job import job_config

from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def suite_file(tmp_path: Path) -> Path:
    """The team's rule for customers: no customer called Frank (the workload's last insert, id 6)."""
    path = tmp_path / "customers.json"
    path.write_text(json.dumps({"name": "customers_pipeline", "expectations": [
        {"type": "expect_column_values_to_not_match_regex", "kwargs": {"column": "name", "regex": "^Frank$"}}]}))
    return path


def run(broker, spark, tmp_path: Path, action: str):  # type: ignore[no-untyped-def]
    prefix = unique_prefix(f"pe{action[:2]}")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    topic = f"{prefix}.public.customers"
    cfg = job_config(broker, spark, prefix, tmp_path, **{f"table.mapping.{topic}.expectations": str(suite_file(tmp_path)),
                                                         f"table.mapping.{topic}.expectations_action": action})
    summary = run_ingest(cfg, "available-now", spark=spark)
    events = sum(1 for r in records if r["topic"] == topic and r["value"] is not None)
    return prefix, summary, events


def test_quarantine_keeps_the_failing_event_out_of_silver_only(broker, spark, tmp_path: Path) -> None:
    prefix, summary, events = run(broker, spark, tmp_path, "quarantine")
    assert summary.failed_tables == {}
    silver = table_rows(spark, f"{prefix}_silver.customers")
    assert [r["name"] for r in silver] == []  # the truncate removed the others; Frank is held back
    bronze = table_rows(spark, f"{prefix}_bronze.customers")
    assert len(bronze) == events and "Frank" in {r["name"] for r in bronze}  # bronze keeps every event
    held = table_rows(spark, f"{prefix}_silver.customers_quarantine")
    assert len(held) == 1 and held[0]["rule"] == "expect_column_values_to_not_match_regex(name)"
    assert json.loads(held[0]["row_key"]) == {"id": 6} and "quarantine" in held[0]["reason"]
    assert json.loads(held[0]["row_json"])["name"] == "Frank"
    assert table_rows(spark, f"{prefix}_silver.audit_full")  # other tables are untouched by the rule


def test_fail_stops_that_table_and_the_others_go_on(broker, spark, tmp_path: Path) -> None:
    prefix, summary, _ = run(broker, spark, tmp_path, "fail")
    assert list(summary.failed_tables) == [f"{prefix}.public.customers"] or \
        any("customers" in t for t in summary.failed_tables), summary.failed_tables
    reason = next(iter(summary.failed_tables.values()))
    assert "pipeline expectations failed" in reason and "expect_column_values_to_not_match_regex(name): 1" in reason
    assert table_rows(spark, f"{prefix}_silver.audit_full")
