"""Jars from Maven Central, fetched once by the bootstrap (``scripts/bootstrap.sh``) with Maven itself
into the jar cache that ``lakecdc.spark.jar_cache`` describes (which sets, for which Spark line) and looks in.

Each set is resolved with its runtime dependencies (``dependency:copy-dependencies`` over a small
generated pom). Jars PySpark already ships (scala-library, Jackson, slf4j, lz4, ...) are left out of the
Spark sets, so Spark never sees two copies of a class. A set appears atomically with a ``manifest.txt``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from lakecdc.devstack.errors import DevStackError
from lakecdc.spark.jar_cache import (
    DEBEZIUM_MARIADB,
    DEBEZIUM_NEXT,
    MANIFEST,
    SPARK_LINES,
    JarSet,
    cached_jars,
    candidate_sets,
    jar_cache_dir,
    jar_sets,
    spark_line,
)

log = logging.getLogger(__name__)

#: Names the local stack, the bootstrap and the tests read from here (they live in the jar cache module).
__all__ = ["DEBEZIUM_MARIADB", "DEBEZIUM_NEXT", "MANIFEST", "SPARK_LINES", "JarFetchError", "JarSet",
           "cached_jars", "fetch", "jar_sets", "spark_line"]


class JarFetchError(DevStackError):
    """A jar set could not be fetched; the message names the set, the reason and Maven's log."""

    def __init__(self, reason: str, log_path: Path | None = None) -> None:
        self.log_path = log_path
        super().__init__(reason + (f" (log: {log_path})" if log_path is not None else ""))


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
        candidates = candidate_sets(name)
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
