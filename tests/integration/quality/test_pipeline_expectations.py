"""Pipeline expectations in a real ingest run (golden Debezium records, real broker, Spark, Iceberg;
the rule-change retry on Delta too): ``quarantine`` keeps the failing event out of silver and in
``<silver>_quarantine`` while bronze keeps every event, a later change of the key that passes heals
silver, and a changed rule retries what it held; ``warn`` records the event and applies it; ``fail``
stops that table only."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ingest_broker import create_topics, golden_records, publish_records, unique_prefix
from ingest_tables import delta_rows, table_rows
from test_ingest_job import job_config
from typer.testing import CliRunner

from lakecdc.cli.main import app
from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def suite_file(tmp_path: Path, regex: str = "^Frank$") -> Path:
    """The team's rule for customers: no customer called Frank (the workload's last insert, id 6)."""
    path = tmp_path / "customers.json"
    path.write_text(json.dumps({"name": "customers_pipeline", "expectations": [
        {"type": "expect_column_values_to_not_match_regex", "kwargs": {"column": "name", "regex": regex}}]}))
    return path


def change(records: list[dict[str, Any]], name: str, new_id: int | None = None, lsn: int = 99_100_400,
           tx: int = 1272) -> list[dict[str, Any]]:
    """A later source transaction (the workload's last one is txId 1271) renaming Frank, or inserting
    customer ``new_id``: BEGIN, the change and END, as Debezium's PostgreSQL connector writes them
    (BEGIN's id carries the first event's LSN, END's the commit LSN)."""
    frank = next(r for r in records if r["value"] and (r["value"]["payload"].get("after") or {}).get("name") == "Frank")
    marker = next(r for r in records if r["topic"].endswith(".transaction"))
    commit_lsn = lsn + 100
    event = copy.deepcopy(frank)
    payload = event["value"]["payload"]
    payload["op"], payload["after"]["name"] = "u", name
    if new_id is not None:
        payload["op"], payload["before"], payload["after"]["id"] = "c", None, new_id
        event["key"]["payload"] = {"id": new_id}
    payload["source"].update(txId=tx, lsn=lsn, sequence=f'["{lsn - 88}","{lsn}"]',
                             ts_ms=payload["source"]["ts_ms"] + 1000)
    payload["transaction"] = {"id": f"{tx}:{lsn}", "total_order": 1, "data_collection_order": 1}

    def tx_marker(status: str, at: int, **extra: Any) -> dict[str, Any]:
        out = copy.deepcopy(marker)
        out["key"]["payload"] = {"id": f"{tx}:{at}"}
        out["value"]["payload"] = {"status": status, "id": f"{tx}:{at}", "event_count": None, "data_collections": None,
                                   "ts_ms": payload["source"]["ts_ms"], **extra}
        return out

    return [tx_marker("BEGIN", lsn), event, tx_marker("END", commit_lsn, event_count=1, data_collections=[
        {"data_collection": "public.customers", "event_count": 1}])]


def again(broker, spark, prefix: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The job run again over what was published since, the suite file as it is now."""
    return run_ingest(job_config(broker, spark, prefix, tmp_path, **{
        f"table.mapping.{prefix}.public.customers.expectations": str(tmp_path / "customers.json"),
        f"table.mapping.{prefix}.public.customers.expectations_action": "quarantine"}), "available-now", spark=spark)


def run(broker, spark, tmp_path: Path, action: str):  # type: ignore[no-untyped-def]
    prefix = unique_prefix(f"pe{action[:2]}")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    topic = f"{prefix}.public.customers"
    mapping = {f"table.mapping.{topic}.expectations": str(suite_file(tmp_path)),
               f"table.mapping.{topic}.expectations_action": action}
    cfg = job_config(broker, spark, prefix, tmp_path, **mapping)
    summary = run_ingest(cfg, "available-now", spark=spark)
    events = sum(1 for r in records if r["topic"] == topic and r["value"] is not None)
    # the same configuration as a file, for the CLI
    (tmp_path / "ingest.yaml").write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in {
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse"),
        "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}",
        "progress.path": str(tmp_path / "progress"), **mapping}.items()))
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

    # `lakecdc quality` finds the tables, formats and warehouse in the ingest configuration
    runner = CliRunner()
    out = runner.invoke(app, ["quality", "check", "--config", str(tmp_path / "ingest.yaml"), "--rule", "unique_keys",
                              "--rule", "silver_matches_bronze_replay", "--json"])
    assert out.exit_code in (0, 1), out.output
    checked = json.loads(out.output)
    tables = {r["table"] for r in checked}
    assert f"{prefix}_silver.customers" in tables and f"{prefix}_silver.audit_full" in tables, out.output
    by_table = {r["table"]: r for r in checked}
    replay = {r["rule"]: r for r in by_table[f"{prefix}_silver.customers"]["results"]}["silver_matches_bronze_replay"]
    assert not replay["passed"] and replay["failed_rows"] == 1  # exactly the quarantined event (Frank) is missing
    out = runner.invoke(app, ["quality", "suites", "--config", str(tmp_path / "ingest.yaml"), "--record"])
    assert out.exit_code == 0, out.output  # silver holds no Frank: the team's suite passes there
    stored = table_rows(spark, f"{prefix}_silver.quality_results")
    assert [(r["expectation"], r["success"]) for r in stored] == [("expect_column_values_to_not_match_regex", True)]


def test_a_later_change_that_passes_heals_the_quarantined_key(broker, spark, tmp_path: Path) -> None:
    prefix, summary, events = run(broker, spark, tmp_path, "quarantine")
    assert table_rows(spark, f"{prefix}_silver.customers") == []
    publish_records(broker.bootstrap_servers, change(golden_records(prefix), "Francis"))
    second = again(broker, spark, prefix, tmp_path)
    assert second.failed_tables == {} and second.events == 1
    assert [(r["id"], r["name"]) for r in table_rows(spark, f"{prefix}_silver.customers")] == [(6, "Francis")]
    assert len(table_rows(spark, f"{prefix}_bronze.customers")) == events + 1
    held = table_rows(spark, f"{prefix}_silver.customers_quarantine")  # the record of what was held stays
    assert [json.loads(r["row_json"])["name"] for r in held] == ["Frank"]

    # the rule is relaxed: the held Frank passes now and is retried, but silver's newer Francis wins
    suite_file(tmp_path, regex="^Zed$")
    publish_records(broker.bootstrap_servers, change(golden_records(prefix), "Grace", new_id=7, lsn=99_100_600,
                                                     tx=1273))
    assert again(broker, spark, prefix, tmp_path).failed_tables == {}
    rows = [(r["id"], r["name"]) for r in table_rows(spark, f"{prefix}_silver.customers")]
    assert sorted(rows) == [(6, "Francis"), (7, "Grace")]


def test_a_changed_rule_retries_the_quarantined_events(broker, spark, tmp_path: Path) -> None:
    prefix, _, events = run(broker, spark, tmp_path, "quarantine")
    assert table_rows(spark, f"{prefix}_silver.customers") == []
    # the rule now forbids Zed only: Frank passes, and the next run retries him with no new event to read
    suite_file(tmp_path, regex="^Zed$")
    second = again(broker, spark, prefix, tmp_path)
    assert second.failed_tables == {} and second.events == 0
    assert [(r["id"], r["name"]) for r in table_rows(spark, f"{prefix}_silver.customers")] == [(6, "Frank")]
    assert len(table_rows(spark, f"{prefix}_bronze.customers")) == events  # bronze had him already
    verdicts = sorted(table_rows(spark, f"{prefix}_silver.customers_quarantine"), key=lambda r: r["checked_at"])
    assert [(r["rule"], json.loads(r["row_json"])["name"]) for r in verdicts] == [
        ("expect_column_values_to_not_match_regex(name)", "Frank"), ("released", "Frank")]
    assert "passes suite" in verdicts[1]["reason"]

    # a rule forbidding Grace holds her new row back; Frank, released, is not retried again
    suite_file(tmp_path, regex="^(Zed|Grace)$")
    publish_records(broker.bootstrap_servers, change(golden_records(prefix), "Grace", new_id=7))
    assert again(broker, spark, prefix, tmp_path).failed_tables == {}
    assert [(r["id"], r["name"]) for r in table_rows(spark, f"{prefix}_silver.customers")] == [(6, "Frank")]
    verdicts = sorted(table_rows(spark, f"{prefix}_silver.customers_quarantine"), key=lambda r: r["checked_at"])
    assert [(r["rule"], json.loads(r["row_json"])["name"]) for r in verdicts][2:] == [
        ("expect_column_values_to_not_match_regex(name)", "Grace")]


def test_a_changed_rule_retries_a_quiet_delta_table(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("pedl")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    publish_records(broker.bootstrap_servers, records)
    warehouse, topic = tmp_path / "delta", f"{prefix}.public.customers"
    cfg = job_config(broker, spark, prefix, tmp_path, **{
        "warehouse": str(warehouse), "table.format": "delta",
        f"table.mapping.{topic}.expectations": str(suite_file(tmp_path)),
        f"table.mapping.{topic}.expectations_action": "quarantine"})
    assert run_ingest(cfg, "available-now", spark=spark).failed_tables == {}
    assert delta_rows(warehouse, f"{prefix}_silver.customers") == []
    suite_file(tmp_path, regex="^Zed$")  # Frank passes now; nothing new to read
    assert run_ingest(cfg, "available-now", spark=spark).failed_tables == {}
    assert [(r["id"], r["name"]) for r in delta_rows(warehouse, f"{prefix}_silver.customers")] == [(6, "Frank")]
    verdicts = sorted(delta_rows(warehouse, f"{prefix}_silver.customers_quarantine"), key=lambda r: r["checked_at"])
    assert [r["rule"] for r in verdicts] == ["expect_column_values_to_not_match_regex(name)", "released"]


def test_warn_records_the_failing_event_and_applies_it(broker, spark, tmp_path: Path) -> None:
    prefix, summary, events = run(broker, spark, tmp_path, "warn")
    assert summary.failed_tables == {}
    assert [(r["id"], r["name"]) for r in table_rows(spark, f"{prefix}_silver.customers")] == [(6, "Frank")]
    held = table_rows(spark, f"{prefix}_silver.customers_quarantine")
    assert len(held) == 1 and json.loads(held[0]["row_key"]) == {"id": 6} and "(warn)" in held[0]["reason"]
    assert len(table_rows(spark, f"{prefix}_bronze.customers")) == events


def test_fail_stops_that_table_and_the_others_go_on(broker, spark, tmp_path: Path) -> None:
    prefix, summary, _ = run(broker, spark, tmp_path, "fail")
    assert list(summary.failed_tables) == [f"{prefix}.public.customers"] or \
        any("customers" in t for t in summary.failed_tables), summary.failed_tables
    reason = next(iter(summary.failed_tables.values()))
    assert "pipeline expectations failed" in reason and "expect_column_values_to_not_match_regex(name): 1" in reason
    assert table_rows(spark, f"{prefix}_silver.audit_full")
