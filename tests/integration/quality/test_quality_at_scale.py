"""The rules on a 1M-row table (~0.7 GB in memory) with the driver's memory bounded below the table.

Each format runs in a child process (``million_rows.py``) so its memory is its own:

- Iceberg: a Spark JVM with ``spark.driver.memory=512m`` (less than the table) builds and checks the
  tables; the Python driver's resident memory is sampled during the check;
- Delta (delta-rs tables): DataFusion in the Python process with a 128 MB spill pool; the process's
  resident memory is sampled during the check.

Collecting the table to the driver (what the rules did before) needs at least the table's size in
Arrow, so the bound below (0.8 of it) fails for that code; the planted defects are counted exactly.
The bound is not tighter because what the engines hold beyond their spill pool (readers' buffers, the
allocator's retained pages) depends on how many of their threads run at once: DataFusion's five
rule queries grew the process by 180-280 MB on a loaded machine and by 417 MB on a quiet one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from million_rows import EXPECTED  # noqa: E402 - the conftest puts this directory first

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CHILD = Path(__file__).with_name("million_rows.py")
ROOT = Path(__file__).resolve().parents[3]


def run_child(*args: str, driver_memory: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if driver_memory:
        env["LAKECDC_SPARK_DRIVER_MEMORY"] = driver_memory
    done = subprocess.run([sys.executable, str(CHILD), *args], env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


# the Iceberg child runs 2M rows through compiled stages: C2 (56 s against 89 s on 2 idle cores)
@pytest.mark.usefixtures("long_lived_jvm")
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_rules_on_a_million_rows_keep_the_driver_flat(fmt: str, tmp_path: Path) -> None:
    if fmt == "delta":
        run_child("write-delta", str(tmp_path))
        out = run_child("check-delta", str(tmp_path))
    else:
        out = run_child("iceberg", str(tmp_path), driver_memory="512m")
    assert out["failed"] == EXPECTED
    assert all(0 < out["samples"][rule] <= 10 for rule, n in EXPECTED.items() if n)
    assert out["checked"] == 1_000_000 - 1000 + 2  # live rows: ids >= 1000, id 5, id 2000 twice, id 3000 changed
    assert out["table_mb"] > 600
    assert out["rss_growth_mb"] < out["table_mb"] * 0.8, out
