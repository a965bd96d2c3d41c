"""A class-data archive of the local Spark driver (the JDK's AppCDS), so that its JVM starts on fewer cycles.

Every local Spark driver loads, parses and verifies some 15,000 classes of Spark, Iceberg and their
libraries before it runs a query: most of the CPU a short job or a test spends in its JVM. A dynamic
class-data-sharing archive (JDK 13+, ``-XX:ArchiveClassesAtExit``) holds those classes already
parsed and verified; a JVM started with ``-XX:SharedArchiveFile`` maps it instead of doing the work.

``scripts/bootstrap.sh`` builds one archive per environment (``python -m lakecdc.spark.class_archive``,
a minute or two) into the jar cache: a local session creates an Iceberg table, MERGEs into it and reads
it back, and the JVM writes the classes it loaded when it exits. ``spark_session`` then
starts every local driver with it (``archive_options``). The JVM checks the archive against its own
build and against the jars on its classpath, and ignores an archive that does not match (another JDK,
an upgraded PySpark): its messages about that are turned off (``-Xlog:cds=off``), so a stale archive
costs the speed-up and nothing else. ``LAKECDC_SPARK_CLASS_ARCHIVE=off`` leaves it out.
``bench/bench_spark_start.py`` measures it against a start without it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from lakecdc.spark.jar_cache import jar_cache_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ARCHIVE_ENV = "LAKECDC_SPARK_CLASS_ARCHIVE"
#: silence the JVM's class-data-sharing messages (a mismatched archive would print one at every start)
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def archive_path() -> Path:
    """Where this environment's archive lives: one per PySpark release (its jars are the classpath)."""
    import pyspark

    return jar_cache_dir() / f"spark-driver-classes-{pyspark.__version__}.jsa"


def archive_options() -> list[str]:
    """The driver's JVM flags that use the archive, or none when there is none (or it is turned off)."""
    if os.environ.get(ARCHIVE_ENV, "").lower() in ("off", "0", "false"):
        return []
    path = archive_path()
    return [f"-XX:SharedArchiveFile={path}", *QUIET] if path.is_file() else []


def build_archive(log_file: Path) -> Path:
    """Run the workload in a fresh driver JVM that writes the archive when it exits; returns its path.

    Must run in a process that has no Spark yet (the JVM's flags are fixed at its start). The JVM's
    own lines (Spark's log, the JDK's notes on classes it cannot archive) go to ``log_file``.
    """
    from pyspark import SparkContext

    from lakecdc.spark.output import spark_session_logged

    target = archive_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # a JVM cannot write an archive while it maps the old one
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="lakecdc-class-archive-") as work:
        spark = spark_session_logged(
            log_file, work, app_name="lakecdc-class-archive",
            extra_conf={"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={partial}"})
        _workload(spark)
        spark.stop()
        # PySpark's gateway exits when its stdin closes; the archive is written as the JVM exits.
        process = SparkContext._gateway.proc  # type: ignore[union-attr]
        process.stdin.close()
        process.wait(timeout=300)
    if not partial.is_file():
        raise RuntimeError(f"the Spark driver JVM wrote no class-data archive (its output: {log_file})")
    partial.rename(target)
    return target


def _workload(spark: SparkSession) -> None:
    """What most local drivers do first: an Iceberg table, a MERGE, a read back to Python."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS db")
    spark.sql("CREATE TABLE db.t (id BIGINT, name STRING) USING iceberg")
    spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, name STRING").createOrReplaceTempView("s")
    for _ in range(2):
        spark.sql("MERGE INTO db.t USING s ON db.t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                  "WHEN NOT MATCHED THEN INSERT *")
    spark.table("db.t").toPandas()


def main() -> int:
    log_file = Path(sys.argv[1]) if len(sys.argv) > 1 else archive_path().with_suffix(".log")
    try:
        path = build_archive(log_file)
    except Exception as error:  # the archive only saves time: a failure is reported, never fatal
        print(f"no class-data archive for the local Spark driver: {error} (details: {log_file})", file=sys.stderr)
        return 1
    print(f"class-data archive for the local Spark driver: {path} ({path.stat().st_size // 2**20} MB)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
