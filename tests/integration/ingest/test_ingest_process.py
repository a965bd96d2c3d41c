"""``lakecdc ingest`` as a process: SIGTERM stops cleanly; kill -9 mid-batch then restart loses nothing.

Each test runs the real CLI in its own process group (its own Spark JVM) against the session's
broker and warehouse, then checks the Iceberg tables from the test's Spark session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ingest_broker import unique_prefix
from ingest_tables import assert_final_source_state, publish_golden_with_a_malformed_record

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LAKECDC = Path(sys.executable).with_name("lakecdc")


def write_config(broker, spark, prefix: str, tmp_path: Path) -> Path:
    warehouse = spark.conf.get("spark.sql.catalog.lake.warehouse")
    path = tmp_path / "ingest.yaml"
    path.write_text(
        f"name: {prefix}\n"
        f"kafka.bootstrap.servers: {broker.bootstrap_servers}\n"
        f"topic.prefix: {prefix}\n"
        f"warehouse: {warehouse}\n"
        f"table.name.format.bronze: '{prefix}_bronze.{{table}}'\n"
        f"table.name.format.silver: '{prefix}_silver.{{table}}'\n"
        f"progress.path: {tmp_path / 'progress'}\n"
        "batch.max.wait.ms: 500\n")
    return path


def start(config: Path, trigger: str, log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")
    return subprocess.Popen([str(LAKECDC), "ingest", "--config", str(config), "--trigger", trigger],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_line(process: subprocess.Popen[bytes], log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise AssertionError(f"ingest exited ({process.returncode}) before logging {text!r}:\n"
                                 f"{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError(f"no {text!r} within {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


def stop_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


@pytest.mark.parametrize("how", ["sigterm-to-process", "ctrl-c-to-group"])
def test_stop_signal_mid_batch_finishes_the_batch_and_exits_0(broker, spark, tmp_path: Path, how: str) -> None:
    prefix = unique_prefix("ps")
    publish_golden_with_a_malformed_record(broker, prefix)
    config = write_config(broker, spark, prefix, tmp_path)
    log = tmp_path / "ingest.log"
    process = start(config, "continuous", log)
    try:
        wait_for_line(process, log, f"bronze {prefix}_bronze.", timeout=600)  # the first table commit
        if how == "sigterm-to-process":
            # As docker stop / Kubernetes / systemd (KillMode=mixed) deliver it: to the ingest
            # process; the Spark JVM it started must live on to finish the batch.
            os.kill(process.pid, signal.SIGTERM)
        else:
            # Ctrl-C in a terminal reaches the whole process group; PySpark's JVM ignores SIGINT.
            os.killpg(process.pid, signal.SIGINT)
        assert process.wait(600) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        stop_group(process)
    text = log.read_text(errors="replace")
    assert "finishing the current batch" in text and "ingest stopped (signal)" in text
    # Spark's and Java's own lines go to the job's spark.log, not into the user's output
    spark_log = tmp_path / "progress" / "spark.log"
    assert f"Spark's own log: {spark_log}" in text
    chatter = [line for line in text.splitlines()
               if "NativeCodeLoader" in line or "Setting default log level" in line or " py4j." in line
               or line[:9].count("/") == 2]  # log4j's "yy/MM/dd HH:mm:ss WARN ..." lines
    assert not chatter, chatter[:5]
    assert "Setting default log level" in spark_log.read_text(errors="replace")
    assert_final_source_state(spark, prefix)  # the batch in progress was completed, every table


def test_kill_9_mid_batch_then_restart_loses_and_duplicates_nothing(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("pk")
    publish_golden_with_a_malformed_record(broker, prefix)
    config = write_config(broker, spark, prefix, tmp_path)
    log = tmp_path / "ingest.log"
    process = start(config, "continuous", log)
    try:
        # Bronze of customers is committed, its silver MERGE is not: kill the whole process now.
        wait_for_line(process, log, f"bronze {prefix}_bronze.customers:", timeout=600)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)
    finally:
        stop_group(process)
    assert process.returncode == -signal.SIGKILL
    restart = start(config, "available-now", log)
    try:
        assert restart.wait(900) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        stop_group(restart)
    assert_final_source_state(spark, prefix)  # bronze holds each change once, silver the final state
