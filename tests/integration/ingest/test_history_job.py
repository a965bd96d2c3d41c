"""SCD2 history through the ingest job: real Debezium output (pg_setup.sql + pg_workload.sql, with its
updates, deletes and TRUNCATE) from a real broker into Delta, ``history: scd2`` set in the mapping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ingest_broker import unique_prefix
from ingest_tables import delta_rows, publish_golden_with_a_malformed_record

from lakecdc.audit.replay import events_between, replay
from lakecdc.audit.scd2 import history_as_of, history_of
from lakecdc.audit.tables import LakeTable
from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import run_ingest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "ingest"))
from history_model import check_chain  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.spark4
def test_golden_records_keep_a_history_equal_to_silver_and_to_bronze_replay(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("jh")
    publish_golden_with_a_malformed_record(broker, prefix)
    warehouse = tmp_path / "delta-lake"
    cfg = IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": str(warehouse), "table.format": "delta", "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(tmp_path / "progress"),
        "batch.max.wait.ms": "500", f"table.mapping.{prefix}.public.customers.history": "scd2"})
    summary = run_ingest(cfg, "available-now", spark=spark)
    assert summary.failed_tables == {}
    history_rows = delta_rows(warehouse, f"{prefix}_silver.customers__history")
    check_chain(history_rows)
    silver = delta_rows(warehouse, f"{prefix}_silver.customers")
    assert [(r["id"], r["name"]) for r in silver] == [(6, "Frank")]  # the workload's final state
    assert sorted((r["id"], r["name"], r["email"]) for r in history_rows if r["_is_current"]) == \
        sorted((r["id"], r["name"], r["email"]) for r in silver)
    assert len({r["id"] for r in history_rows}) >= 5  # the keys the TRUNCATE removed keep their versions
    # as of every position bronze holds, the history answers what the bronze replay answers
    history = history_of(LakeTable.delta(warehouse, f"{prefix}_silver.customers"))
    bronze = LakeTable.delta(warehouse, f"{prefix}_bronze.customers").pandas()
    columns = ["id", "name", "email"]
    for seq in sorted({tuple(int(v) for v in s) for s in bronze["_seq"]}):
        replayed = replay(bronze.iloc[0:0][[*columns, "_seq", "_op", "_source_ts_ms", "_tx_id"]],
                          events_between(bronze, None, seq), ("id",))
        expected = sorted(tuple(r) for r in replayed[columns].itertuples(index=False))
        assert sorted(tuple(r) for r in history_as_of(history, source_position=seq)[columns].itertuples(
            index=False)) == expected, seq
    # a second run reads nothing new and commits nothing to the history
    from deltalake import DeltaTable

    uri = str(warehouse / f"{prefix}_silver" / "customers__history")
    version = DeltaTable(uri).version()
    again = run_ingest(cfg, "available-now", spark=spark)
    assert again.events == 0 and DeltaTable(uri).version() == version
