"""What the class-data archive (``lakecdc.spark.class_archive``) saves a local Spark driver.

Each trial is a fresh Python process that opens ``lakecdc.spark.session.spark_session`` over a new
warehouse, creates an Iceberg table, MERGEs into it three times and reads it back, then stops the
JVM and waits for it: the trial reports the seconds until the session was ready, the seconds of the
whole trial, and the CPU seconds of its JVMs (Spark's launcher and the driver, reaped by the trial).
Trials alternate with the archive (``LAKECDC_SPARK_CLASS_ARCHIVE`` unset) and without it (``off``),
so both sides meet the same machine; medians and the ratio are printed side by side.

    .venv/bin/python bench/bench_spark_start.py                # 5 trials each way
    .venv/bin/python bench/bench_spark_start.py --trials 3 --jvm-options=-XX:TieredStopAtLevel=1

Build the archive first (``scripts/bootstrap.sh`` does): ``.venv/bin/python -m lakecdc.spark.class_archive``.

Measured 2026-11-28 23:14 UTC on the 2-core development machine beside a whole test run and two busy
loops (load average 9-20), ``--trials 2 --jvm-options=-XX:TieredStopAtLevel=1`` (the suite's JVMs),
PySpark 3.5.9, OpenJDK 17.0.15:

    median of 2             no archive     archive   ratio
    session ready (s)            12.20        5.70    0.47
    whole trial (s)              44.03       26.75    0.61
    JVM CPU (s)                  11.82        7.89    0.67

Building the two archives costs the bootstrap about 25 s each on an idle machine. What the archive
gives the whole suite is not separated from the other change of the same day (the Spark 4.0 runs
waiting for the first module): a fresh-clone run starts about 30 Spark drivers by a 1 s sampling of
``ps``; its main run took 39.5 min on 2026-11-29, against 67.1 min for the last one measured
without either (2026-11-28, README, Tests).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRIAL = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
started = time.monotonic()
from pyspark import SparkContext
from lakecdc.spark.output import spark_session_logged
with tempfile.TemporaryDirectory() as work:
    spark = spark_session_logged(Path(work) / "spark.log", work, app_name="bench-spark-start")
    ready = time.monotonic() - started
    spark.sql("CREATE NAMESPACE IF NOT EXISTS db")
    spark.sql("CREATE TABLE db.t (id BIGINT, name STRING) USING iceberg")
    for round in range(3):
        spark.createDataFrame([(i, f"{round}-{i}") for i in range(100)], "id BIGINT, name STRING") \
            .createOrReplaceTempView("s")
        spark.sql("MERGE INTO db.t USING s ON db.t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                  "WHEN NOT MATCHED THEN INSERT *")
    assert spark.table("db.t").count() == 100
    spark.stop()
    process = SparkContext._gateway.proc
    process.stdin.close()
    process.wait(timeout=300)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"ready_s": ready, "total_s": time.monotonic() - started,
                  "jvm_cpu_s": children.ru_utime + children.ru_stime}))
"""


def trial(archive: bool, jvm_options: str) -> dict[str, float]:
    env = {**os.environ, "LAKECDC_JVM_OPTIONS": jvm_options}
    if archive:
        env.pop("LAKECDC_SPARK_CLASS_ARCHIVE", None)
    else:
        env["LAKECDC_SPARK_CLASS_ARCHIVE"] = "off"
    done = subprocess.run([sys.executable, "-c", TRIAL], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--jvm-options", default="", help="LAKECDC_JVM_OPTIONS for both sides")
    args = parser.parse_args()
    from lakecdc.spark.class_archive import archive_path

    if not archive_path().is_file():
        sys.exit(f"no archive at {archive_path()}: run .venv/bin/python -m lakecdc.spark.class_archive")
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for number in range(args.trials):
        for archive in (False, True) if number % 2 else (True, False):
            runs[archive].append(trial(archive, args.jvm_options))
            print(f"trial {number + 1}/{args.trials} {'archive' if archive else 'plain'}: {runs[archive][-1]}",
                  file=sys.stderr)
    print(f"{'median of ' + str(args.trials):<22}{'no archive':>12}{'archive':>12}{'ratio':>8}")
    for field, label in (("ready_s", "session ready (s)"), ("total_s", "whole trial (s)"),
                         ("jvm_cpu_s", "JVM CPU (s)")):
        plain = statistics.median(r[field] for r in runs[False])
        shared = statistics.median(r[field] for r in runs[True])
        print(f"{label:<22}{plain:>12.2f}{shared:>12.2f}{shared / plain:>8.2f}")


if __name__ == "__main__":
    main()
