"""The ingest job end to end: real broker, real Spark, real Iceberg tables (the writers' Iceberg writer).

The input is the real Debezium output for pg_setup.sql + pg_workload.sql; the expected table
contents are the source tables' final state after that workload.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from ingest_broker import create_topics, encode, golden_records, publish, publish_records, unique_prefix
from ingest_tables import (
    assert_final_source_state,
    assert_final_state,
    delta_exists,
    delta_rows,
    publish_golden_with_a_malformed_record,
    snapshot_count,
    table_rows,
)

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def job_config(broker, spark, prefix: str, tmp_path: Path, **extra: str) -> IngestConfig:
    warehouse = spark.conf.get("spark.sql.catalog.lake.warehouse")
    return IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": warehouse, "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(tmp_path / "progress"),
        "batch.max.wait.ms": "500", **extra})


@pytest.mark.spark4
def test_golden_records_into_iceberg_exactly_once(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("jb")
    records = publish_golden_with_a_malformed_record(broker, prefix)
    cfg = job_config(broker, spark, prefix, tmp_path)

    summary = run_ingest(cfg, "available-now", spark=spark)

    assert summary.dead_letters == 1 and summary.failed_tables == {} and summary.held_events == 0
    assert_final_source_state(spark, prefix)
    dead = [r for r in table_rows(spark, "lakecdc.dead_letters") if r["topic"] == f"{prefix}.public.customers"]
    assert len(dead) == 1 and dead[0]["reason"] and "JSON" in dead[0]["reason"]
    state = json.loads((tmp_path / "progress" / "state.json").read_text())
    last_change = [r for r in records if r["value"] and "op" in r["value"]["payload"]][-1]
    assert state["held_from_seq"] is None and state["applied_through_seq"][1] == 99099792
    assert state["applied_through_source_ts_ms"] == last_change["value"]["payload"]["source"]["ts_ms"]

    # Run again: everything is already in the tables, nothing is written.
    before = {t: snapshot_count(spark, f"{prefix}_{t}") for t in ("silver.customers", "bronze.customers")}
    again = run_ingest(cfg, "available-now", spark=spark)
    assert again.events == 0
    assert {t: snapshot_count(spark, f"{prefix}_{t}") for t in before} == before

    # Lose the job's own state file: control topics are re-read, the tables still decide.
    (tmp_path / "progress" / "state.json").unlink()
    third = run_ingest(cfg, "available-now", spark=spark)
    assert third.events == 0 and {t: snapshot_count(spark, f"{prefix}_{t}") for t in before} == before
    assert_final_source_state(spark, prefix)


def test_new_topic_mid_run_and_stop_event(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("jn")
    records = [r for r in golden_records(prefix) if r["topic"].endswith(".audit_full")]
    create_topics(broker.bootstrap_servers, [records[0]["topic"]])
    publish_records(broker.bootstrap_servers, records[:1])
    cfg = job_config(broker, spark, prefix, tmp_path, **{"topic.refresh.interval.ms": "500"})
    stop = threading.Event()
    seen: list[dict[str, int]] = []

    def on_batch(report) -> None:
        seen.append(dict(report.tables))
        if len(seen) == 1:  # a source table appears while the job runs
            new_topic = f"{prefix}.public.late"
            create_topics(broker.bootstrap_servers, [new_topic])
            late = json.loads(json.dumps(records[0]))
            late["topic"] = new_topic
            late["value"]["payload"]["source"]["table"] = "late"
            publish(broker.bootstrap_servers, [(new_topic, encode(late["key"]), encode(late["value"]))])
        elif any("late" in t for t in report.tables):
            stop.set()

    deadline = threading.Timer(300, stop.set)
    deadline.start()
    try:
        summary = run_ingest(cfg, "continuous", spark=spark, stop=stop, on_batch=on_batch)
    finally:
        deadline.cancel()
    assert any(any(t.endswith("public.late") for t in s) for s in seen), seen
    assert [r["id"] for r in table_rows(spark, f"{prefix}_silver.late")] == [1]
    assert summary.events == 2 and not summary.stopped_by_signal


def test_transaction_is_applied_only_once_complete(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("jt")
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    # Up to the events of the 5-event transaction (txId 1264), without its END marker.
    end_index = next(i for i, r in enumerate(records) if r["value"] and r["value"].get("payload", {}).get(
        "status") == "END" and r["value"]["payload"]["event_count"] == 5)
    publish_records(broker.bootstrap_servers, records[:end_index])
    cfg = job_config(broker, spark, prefix, tmp_path)
    first = run_ingest(cfg, "available-now", spark=spark)
    assert first.held_events == 5
    customers = {r["id"]: r for r in table_rows(spark, f"{prefix}_silver.customers")}
    assert 4 not in customers and customers[1]["active"] is True  # Dave's insert and Alice's update wait
    assert not spark.catalog.tableExists(f"lake.{prefix}_silver.audit_full") or all(
        r["id"] != 2 for r in table_rows(spark, f"{prefix}_silver.audit_full"))
    state = json.loads((tmp_path / "progress" / "state.json").read_text())
    assert state["held_events"] == 5 and state["held_from_seq"][1] == 99091160

    publish_records(broker.bootstrap_servers, records[end_index:])
    second = run_ingest(cfg, "available-now", spark=spark)
    assert second.held_events == 0
    assert_final_source_state(spark, prefix)
    bronze = table_rows(spark, f"{prefix}_bronze.customers")
    assert len({r["_offset"] for r in bronze}) == len(bronze) == 14


def test_periodic_maintenance_leaves_no_position_deletes(broker, spark, tmp_path: Path) -> None:
    """``maintenance.compact.every.batches: 1``: after each batch its tables are compacted, between
    batches; the tables still end in the source's final state and a rerun resumes with nothing to do."""
    prefix = unique_prefix("jm")
    publish_golden_with_a_malformed_record(broker, prefix)
    cfg = job_config(broker, spark, prefix, tmp_path, **{"maintenance.compact.every.batches": "1",
                                                         "batch.max.records": "40"})
    summary = run_ingest(cfg, "available-now", spark=spark)
    assert summary.batches > 1 and summary.failed_tables == {}
    assert_final_source_state(spark, prefix)
    silver = f"lake.{prefix}_silver.customers"
    operations = [r.operation for r in spark.sql(f"SELECT operation FROM {silver}.snapshots").collect()]
    assert "replace" in operations  # a compaction committed
    assert spark.sql(f"SELECT * FROM {silver}.delete_files").count() == 0
    before = snapshot_count(spark, f"{prefix}_silver.customers")
    again = run_ingest(cfg, "available-now", spark=spark)
    assert again.events == 0 and snapshot_count(spark, f"{prefix}_silver.customers") == before


@pytest.mark.spark4
def test_golden_records_into_delta_exactly_once(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("jd")
    publish_golden_with_a_malformed_record(broker, prefix)
    warehouse = tmp_path / "delta-lake"
    cfg = IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": str(warehouse), "table.format": "delta", "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(tmp_path / "progress"),
        "batch.max.wait.ms": "500"})
    summary = run_ingest(cfg, "available-now", spark=spark)
    assert summary.dead_letters == 1 and summary.failed_tables == {}
    assert_final_state(lambda n: delta_rows(warehouse, n), lambda n: delta_exists(warehouse, n), prefix)
    from deltalake import DeltaTable

    silver = DeltaTable(str(warehouse / f"{prefix}_silver" / "customers"))
    versions = silver.version()
    again = run_ingest(cfg, "available-now", spark=spark)
    assert again.events == 0 and DeltaTable(str(warehouse / f"{prefix}_silver" / "customers")).version() == versions


class _Crash(RuntimeError):
    """Stands for the job being killed between the dead-letter write and the table commits."""


def test_dead_letter_is_written_once_across_a_crash_before_the_table_commits(
        broker, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest_tables import MALFORMED

    from lakecdc.ingest import job

    prefix = unique_prefix("jl")
    records = publish_golden_with_a_malformed_record(broker, prefix)
    topic = f"{prefix}.public.customers"
    # the malformed record follows the first half of the records: its offset is their count in its topic
    malformed_offset = sum(1 for r in records[:len(records) // 2] if r["topic"] == topic)
    cfg = job_config(broker, spark, prefix, tmp_path)
    real_factory = job._writer_factory

    def crashing_factory(cfg, session):
        make = real_factory(cfg, session)

        def writer(table_format: str):
            w = make(table_format)
            append, apply = w.append_dead_letters, w.apply
            written = []

            def append_dead_letters(rows):
                written.append(append(rows))
                return written[-1]

            def crash_after_dead_letters(batch, batch_id):
                if written:  # the batch holding the dead letter: killed before its table commits
                    raise _Crash("killed before the table commits")
                return apply(batch, batch_id)
            w.append_dead_letters, w.apply = append_dead_letters, crash_after_dead_letters
            return w
        return writer

    monkeypatch.setattr(job, "_writer_factory", crashing_factory)
    with pytest.raises(_Crash):
        run_ingest(cfg, "available-now", spark=spark)
    monkeypatch.undo()
    assert len([r for r in table_rows(spark, "lakecdc.dead_letters") if r["topic"] == topic]) == 1

    summary = run_ingest(cfg, "available-now", spark=spark)  # the restart replays everything

    assert summary.dead_letters == 1  # decoded again ...
    dead = [r for r in table_rows(spark, "lakecdc.dead_letters") if r["topic"] == topic]
    assert len(dead) == 1, dead  # ... but stored once
    letter = dead[0]
    assert (letter["partition"], letter["offset"]) == (0, malformed_offset)
    assert bytes(letter["value"]) == MALFORMED and bytes(letter["key"]) == b'{"id":999}'
    assert "JSON" in letter["reason"]
    assert_final_source_state(spark, prefix)
