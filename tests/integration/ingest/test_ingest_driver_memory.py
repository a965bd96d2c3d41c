"""A micro-batch larger than the driver's memory: the executors hold it, the driver's memory stays flat.

``lakecdc ingest`` (``reader: spark``, Iceberg through Spark) runs on ``local-cluster[1,1,1024]`` with
``spark.driver.memory=512m``, once over a small backlog and once over one ten times larger than that
(more than the driver's heap), each drained in a single micro-batch. The driver (the job's Python
process and its JVM) is sampled with psutil: a driver that received the batch's rows (as the job did
before ``executor_batch``) grows by at least the batch; this one must stay within half of the
difference between the two batches, and both runs must land every record in silver.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ingest_broker import unique_prefix

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bench.bench_scale import backlog, drain, publish_backlog  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]  # two drains of a 550 MB backlog

TEXT = 250_000  # bytes of text per record
SMALL, LARGE = 220, 2_200  # ~55 MB and ~550 MB of records
DRIVER_MEMORY = 512 << 20


def test_a_batch_larger_than_the_drivers_memory_leaves_the_driver_flat(broker, spark, tmp_path: Path) -> None:
    runs = {}
    for label, count in (("small", SMALL), ("large", LARGE)):
        prefix = unique_prefix(f"mem{label}")
        size = publish_backlog(broker.bootstrap_servers, backlog(prefix, count, "customers", TEXT), 4)
        run = drain(broker.bootstrap_servers, prefix, tmp_path / label, 1, driver_memory="512m", timeout=2400)
        assert run.returncode == 0, run.log[-4000:]
        assert run.events == count and f"batch 1: applied {count:,} changes" in run.log, run.log[-4000:]
        assert "the rows stay there" in run.log  # decoded on the executors
        # only the keys are read back: a scan of the 250 KB texts needs more direct memory than the test's session has
        silver = spark.read.format("iceberg").load(str(tmp_path / label / "lake" / f"{prefix}_silver" / "customers"))
        assert silver.select("id").distinct().count() == count
        runs[label] = (size, max(run.python_rss) + max(run.jvm_rss), run)
    (small_size, small_peak, _), (large_size, large_peak, large) = runs["small"], runs["large"]
    assert large_size > DRIVER_MEMORY  # the batch does not fit in the driver's heap
    growth = large_peak - small_peak
    print(f"driver peak RSS (Python + JVM): {small_peak / 1e6:.0f} MB with {small_size / 1e6:.0f} MB of records, "
          f"{large_peak / 1e6:.0f} MB with {large_size / 1e6:.0f} MB")
    assert growth < (large_size - small_size) / 2, (
        f"driver RSS grew by {growth / 1e6:.0f} MB for {(large_size - small_size) / 1e6:.0f} MB more records "
        f"(Python peak {max(large.python_rss) / 1e6:.0f} MB, JVM peak {max(large.jvm_rss) / 1e6:.0f} MB)")
