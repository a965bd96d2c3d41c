"""The driver's memory: a large batch stays out of its heap, and a driver that runs out anyway stops the
job with the reason instead of hanging it.

Found with ``bench/bench_ingest.py`` (Delta through delta-rs, 2 x 300,000 events): a 100,000-event batch
and its bronze identity window, handed to Spark as ``LocalRelation``s, filled the 1 GB driver in
``ConvertToLocalRelation``; the ``OutOfMemoryError`` killed the thread serving the result to Python,
which then waited for it forever. Each case runs in a process of its own: the JVM's memory is fixed when
it starts, and one of them makes it exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lakecdc.spark.jvm_exit import EXIT_WAIT_SECONDS, explain_driver_exit, last_jvm_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

#: A batch of ``N`` updates in bronze layout against ``S`` stored bronze identities of the same source
#: time range: the anti-join and numbering ``spark_new_rows`` runs for every Delta (delta-rs) batch.
SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import StructType
    from lakecdc.lake.bronze import STORED_IDENTITY, spark_new_rows, to_bronze_layout
    from lakecdc.lake.frames import arrow_to_spark, metadata_fields, spark_to_arrow
    from lakecdc.lake.layout import METADATA_COLUMNS
    from lakecdc.spark.jvm_exit import explain_driver_exit
    from lakecdc.spark.output import spark_session_logged
    from lakecdc.writers.delta_rs import BRONZE_META

    log, warehouse, n, s = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    extra = {"spark.sql.execution.arrow.localRelationThreshold": sys.argv[5]} if len(sys.argv) > 5 else {}
    spark = spark_session_logged(log, warehouse, app_name="lakecdc-driver-memory-test", extra_conf=extra)

    def meta(count, first):
        ids = np.arange(first, first + count, dtype=np.int64)
        return {"_op": pa.array(["u"] * count), "_seq": pa.array([[5_000 + i, 5_000 + i, 0, 0] for i in ids.tolist()]),
                "_source_ts_ms": pa.array(np.full(count, 5, dtype=np.int64)), "_tx_id": pa.array(["571:1"] * count),
                "_tx_total_order": pa.array(ids), "_topic": pa.array(["bench.public.t2"] * count),
                "_partition": pa.array(np.zeros(count, dtype=np.int32)), "_offset": pa.array(ids),
                "_ingest_ts": pa.array(np.full(count, 1_700_000_000_000_000, dtype=np.int64)).cast(
                    pa.timestamp("us", "UTC")),
                "_unavailable": pa.array([[]] * count, pa.list_(pa.string())),
                "_key_json": pa.array([f'{{"id":{i}}}' for i in ids.tolist()]),
                "_old_key_json": pa.nulls(count, pa.string())}

    rows = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "name": pa.array([f"name-{i}+" for i in range(n)]),
                     **meta(n, s)})
    from pyspark.sql.types import LongType, StringType, StructField
    batch = arrow_to_spark(spark, rows, StructType([StructField("id", LongType()), StructField("name", StringType()),
                                                    *metadata_fields()]))
    old = meta(s, 0)
    kept = StructType([f for f in BRONZE_META.fields if f.name in STORED_IDENTITY])
    stored = arrow_to_spark(spark, pa.table({"_seq": old["_seq"], "_op": old["_op"], "_key_json": old["_key_json"],
                                             "_source_ts_ms": old["_source_ts_ms"],
                                             "_row_hash": pa.array(np.arange(s, dtype=np.int64)),
                                             "_occurrence": pa.array(np.zeros(s, dtype=np.int64)),
                                             "_topic": old["_topic"], "_kafka_partition": old["_partition"],
                                             "_offset": old["_offset"]}).select([f.name for f in kept.fields]), kept)
    started = time.monotonic()
    with explain_driver_exit(spark, log, 100_000):
        fresh = spark_to_arrow(spark_new_rows(to_bronze_layout(batch, ["id", "name"]), ["id", "name"], stored, (0, 10),
                                              "postgres"))
    print(f"new rows: {fresh.num_rows} in {time.monotonic() - started:.1f} s", flush=True)
""")


def run_child(tmp_path: Path, memory: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "spark.log"), str(tmp_path / "warehouse"),
                             *args], cwd=REPO, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO), "LAKECDC_SPARK_DRIVER_MEMORY": memory})
    return result, time.monotonic() - started


def test_a_large_batch_and_its_bronze_identity_window_fit_the_default_driver(tmp_path: Path) -> None:
    result, _ = run_child(tmp_path, "1g", "100000", "300000")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().startswith("new rows: 100000 in "), result.stdout


def test_a_driver_out_of_memory_stops_with_the_reason_instead_of_hanging(tmp_path: Path) -> None:
    # Spark's own default threshold: the frames are LocalRelations again, which a 512 MB driver cannot hold
    result, seconds = run_child(tmp_path, "512m", "100000", "300000", str(48 * 1024 * 1024))
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr[-3000:]}"
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lakecdc.spark.jvm_exit.SparkDriverExitedError: Spark's driver JVM exited during the "
                           "ingest"), result.stderr[-3000:]
    assert "java.lang.OutOfMemoryError: Java heap space" in last
    assert "spark.driver.memory, now 512m" in last and "batch.max.records, now 100000" in last
    assert "the next run resumes from there" in last
    assert seconds < 300  # it hung until killed before


def test_an_error_of_a_living_driver_passes_unchanged_and_at_once(spark: SparkSession, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    started = time.monotonic()
    with pytest.raises(AnalysisException), explain_driver_exit(spark, tmp_path / "spark.log", 100):
        spark.sql("SELECT * FROM lake.nowhere.no_such_table").collect()
    assert time.monotonic() - started < EXIT_WAIT_SECONDS


def test_the_reason_is_the_logs_last_jvm_error(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    assert last_jvm_error(log) is None  # no log yet
    log.write_text("26/11/29 WARN TaskSetManager: Stage 87 contains a task of very large size\n"
                   "Exception in thread \"serve-Arrow\" java.lang.OutOfMemoryError: Java heap space\n"
                   "\tat org.apache.spark.sql.catalyst.expressions.UnsafeArrayData.copy(UnsafeArrayData.java:357)\n"
                   "java.lang.IllegalStateException: not an error line\n"
                   "Terminating due to java.lang.OutOfMemoryError: GC overhead limit exceeded\n")
    assert last_jvm_error(log) == "java.lang.OutOfMemoryError: GC overhead limit exceeded"
