"""``lakecdc demo`` end to end: PostgreSQL workload -> capture -> broker -> ingest -> Iceberg and Delta."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.demo.runner import run_demo

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_demo_silver_equals_source_for_every_table(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_demo(tmp_path / "demo", seconds=8, say=lines.append)
    assert {c.table for c in result.comparisons} == {"customers", "products", "orders", "order_lines"}
    for comparison in result.comparisons:
        assert comparison.equal, comparison
        assert comparison.source_rows > 0
    assert any("primary-key change" in line for line in lines)
    assert any("truncate" in line for line in lines) and any("added column" in line for line in lines)
    assert result.changes > 0 and result.latency_p99_ms is not None and result.latency_p50_ms <= result.latency_p99_ms
    travel = result.time_travel
    assert travel["snapshots"] >= 2 and travel["rows_then"] > 0
    warehouse = tmp_path / "demo" / "warehouse"
    assert (warehouse / "silver" / "orders" / "_delta_log").is_dir()  # Delta via delta-rs
    assert (warehouse / "silver" / "customers" / "metadata").is_dir()  # Iceberg (hadoop catalog)
