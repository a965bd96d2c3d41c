"""``lakecdc demo`` end to end: PostgreSQL workload -> capture -> broker -> ingest -> Iceberg and Delta.

The demo runs as the README's main-job command in its own process: it owns (and at the end stops)
its Spark session, which must not be the test session's shared one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from spark_output import SPARK_LINE

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]


def test_demo_silver_equals_source_for_every_table(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "lakecdc.cli.main", "demo", "--dir", str(directory), "--seconds", "8"],
        cwd=REPO, capture_output=True, text=True, timeout=1200,
        # output to a pipe, as in CI or `| tee`: no terminal width to wrap at
        env={key: value for key, value in os.environ.items() if key != "COLUMNS"} | {"TERM": "dumb"},
    )
    out = result.stdout
    assert result.returncode == 0, (out + result.stderr)[-4000:]
    # Spark's and Java's output is in the log file the demo names at step 3 and at the end, not here
    for line in (out + result.stderr).splitlines():
        assert not SPARK_LINE.search(line), f"a Spark/Java line in the demo's output: {line!r}"
    spark_log = directory.resolve() / "spark.log"
    assert f"its log: {spark_log})" in out and f"Spark's and Java's log: {spark_log}" in out
    assert SPARK_LINE.search(spark_log.read_text())
    # sentences are not broken at 80 columns (the longest ones, each whole on one line)
    lines = out.splitlines()
    assert "2. creating the inventory schema (customers, products, orders, order_lines) and seed rows" in lines
    assert "   waiting for the initial snapshot to reach silver (time travel goes back to it below)" in lines
    assert any(re.fullmatch(r"time travel: SELECT .* VERSION AS OF \d+", line) for line in lines), out
    for table in ("customers", "products", "orders", "order_lines"):
        row = re.search(rf"\b{table}\W+(\d+)\W+(\d+)\W+yes", out)  # rich table: │ between cells
        assert row, f"no equal row for {table} in:\n{out}"
        assert int(row.group(1)) > 0 and row.group(1) == row.group(2)
    assert "primary-key change" in out and "truncate" in out and "added column" in out
    latency = re.search(r"latency: p50 ([\d.]+) s, p99 ([\d.]+) s", out)
    assert latency and float(latency.group(1)) <= float(latency.group(2))
    made = re.search(r"(\d+) source changes made", out)
    changes = re.search(r"([\d,]+) changes applied", out)
    assert made and changes and int(made.group(1)) > 0
    # every row the workload changed is one event applied, none lost or applied twice
    assert int(changes.group(1).replace(",", "")) == int(made.group(1)), out
    travel = re.search(r"first version .*?: (\d+) rows.*\((\d+) snapshots\)", out, re.S)
    assert travel and int(travel.group(1)) > 0 and int(travel.group(2)) >= 2
    warehouse = directory / "warehouse"
    assert (warehouse / "silver" / "orders" / "_delta_log").is_dir()  # Delta via delta-rs
    assert (warehouse / "silver" / "customers" / "metadata").is_dir()  # Iceberg (hadoop catalog)
