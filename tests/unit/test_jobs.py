"""Databricks entry points and the Asset Bundle stay consistent with the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "jobs" / script), *args], capture_output=True,
                          text=True, timeout=60)


def test_entry_points_parse_their_parameters_without_heavy_imports() -> None:
    for script in ("ingest_job.py", "capture_job.py"):
        result = _run(script, "--help")
        assert result.returncode == 0, result.stderr
        assert "--config" in result.stdout
    missing = _run("ingest_job.py")
    assert missing.returncode == 2 and "--config" in missing.stderr


def test_bundle_points_at_existing_entry_points() -> None:
    bundle = yaml.safe_load((ROOT / "databricks.yml").read_text())
    tasks = [task for job in bundle["resources"]["jobs"].values() for task in job["tasks"]]
    files = {task["spark_python_task"]["python_file"] for task in tasks}
    assert files == {"jobs/ingest_job.py", "jobs/capture_job.py"}
    for file in files:
        assert (ROOT / file).exists()
    assert all(any("whl" in library for library in task["libraries"]) for task in tasks)


def test_bundle_has_a_spark_35_and_a_spark_4_lts_target_with_matching_iceberg_builds() -> None:
    from lakecdc.devstack.maven import SPARK_LINES

    bundle = yaml.safe_load((ROOT / "databricks.yml").read_text())
    runtimes = {name: target["variables"] for name, target in bundle["targets"].items()}
    assert {v["spark_version"] for v in runtimes.values()} == {"15.4.x-scala2.12", "17.3.x-scala2.13"}
    for variables in runtimes.values():
        scala = variables["spark_version"].rsplit("scala", 1)[1]
        spark = "3.5" if variables["spark_version"].startswith("15.4") else "4.0"  # DBR 15.4: 3.5.0, 17.3: 4.0.0
        assert variables["iceberg_runtime"].startswith(f"org.apache.iceberg:iceberg-spark-runtime-{spark}_{scala}:")
        assert SPARK_LINES[spark].scala == scala
