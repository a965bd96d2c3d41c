"""The ingest job killed with SIGKILL in the middle of a batch, then restarted: nothing lost or doubled.

The workload is captured into the broker first; then ``lakecdc ingest`` runs as its own process
(its own Spark JVM) over a job writing some tables as Iceberg and others as Delta. Everything
present fits one micro-batch, which commits table by table (bronze, then silver, per table).
The process is killed (SIGKILL to the whole process group, so the JVM dies too) right after the
k-th bronze commit, k drawn from a seeded generator: some tables of the batch are committed,
one has bronze but not silver, the rest nothing. A second run ``available-now`` must then leave
silver equal to the source, typed, and bronze holding every change exactly once.

(Small micro-batches that split transactions are covered by
``test_pg_to_lake.test_transactions_split_across_small_micro_batches``; see tests/e2e/FINDINGS.md.)
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_lake import check
from e2e_pipeline import PgPipeline, unique_name
from workloads import pg_scenario
from workloads.changelog import ChangeLog
from workloads.pg_random import RandomWorkload

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LAKECDC = Path(sys.executable).with_name("lakecdc")
SEED = 4242


def start_ingest(config: Path, trigger: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(LAKECDC), "ingest", "--config", str(config), "--trigger", trigger],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)


def wait_for_bronze_commits(process: subprocess.Popen[bytes], log: Path, count: int, timeout: float = 900) -> None:
    """Until the job has logged ``count`` bronze commits (the next silver commit is still to come)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if text.count(" INFO lakecdc.writers.base: bronze ") >= count:
            return
        if process.poll() is not None:
            raise AssertionError(f"ingest exited ({process.returncode}) early:\n{text[-3000:]}")
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} bronze commits within {timeout}s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def pipeline(pg, broker, spark, tmp_path: Path):
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("e2ekill"))
    yield pipe
    print("timings:", "; ".join(pipe.timings))
    pipe.close()


def test_ingest_killed_mid_batch_then_restarted_is_exact(pipeline: PgPipeline) -> None:
    rng = random.Random(SEED)
    tables = list(pg_scenario.KEYS)
    # customers and order_lines in Delta (delta-rs), the others in Iceberg: both writers get killed.
    pipeline.add_lake("mix", "mixed:customers,order_lines", tables, **{"batch.max.wait.ms": "20000"})
    with pipeline.connect() as conn:
        pg_scenario.create_schema(conn)
        log = ChangeLog(conn, pg_scenario.KEYS, keyless=pg_scenario.KEYLESS)
        pg_scenario.seed(log, rng)
        with pipeline.capture_while():
            pg_scenario.dml(log, rng)
            pg_scenario.schema_and_truncate(log, rng)
            RandomWorkload(log, SEED).run(1000)

        config = pipeline.ingest_config_file("mix")
        out = pipeline.dir / "ingest.log"
        kill_after = rng.randint(1, 5)  # of the 6 bronze commits of the batch
        first = start_ingest(config, "continuous", out)
        try:
            wait_for_bronze_commits(first, out, kill_after)
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(60)
        finally:
            kill_group(first)
        assert first.returncode == -signal.SIGKILL
        text = out.read_text(errors="replace")
        assert "ingest finished" not in text  # it really died mid-run

        restart = start_ingest(config, "available-now", out)
        try:
            assert restart.wait(900) == 0, out.read_text(errors="replace")[-3000:]
        finally:
            kill_group(restart)
        check(pipeline.compare_all(log, f"kill -9 after {kill_after} bronze commits and a restart"))
