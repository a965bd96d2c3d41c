"""Spark's and Java's output goes to the demo's log file, never to the user's stdout or stderr.

A Spark session is started the demo's way in a fresh process (the JVM is started once per
process) whose output is a pipe; the JVM then logs again after start-up, and Python warns.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from spark_output import SPARK_LINE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys, warnings
    from pathlib import Path
    from lakecdc.spark.output import spark_session_logged

    log_file, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
    print("before spark", flush=True)
    spark = spark_session_logged(log_file, warehouse, app_name="lakecdc-spark-log-test")
    print("rows:", spark.range(3).count(), flush=True)
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.LogManager.getLogger("lakecdc.test").warn("marker logged after start-up")
    warnings.warn("marker python warning")
    print("after spark", file=sys.stderr, flush=True)
    spark.stop()
""")


def test_spark_and_java_output_goes_to_the_log_file_only(tmp_path: Path) -> None:
    log_file = tmp_path / "spark.log"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(log_file), str(tmp_path / "warehouse")],
                            cwd=REPO, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["before spark", "rows: 3"]  # this process's output is its own
    assert result.stderr.splitlines() == ["after spark"], result.stderr
    log = log_file.read_text()
    assert SPARK_LINE.search(log), "Spark's start-up lines are missing from the log file"
    assert "marker logged after start-up" in log  # the JVM keeps writing to the file after start-up
    assert "marker python warning" in log
