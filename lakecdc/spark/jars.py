"""Spark jars for Iceberg: without Maven on Spark 3.5 (installed wheels, or built once and cached),
from the bootstrap's Maven jar cache on Spark 4.0.

On Spark 3.5:

- ``iceberg-spark-runtime-3.5_2.12-1.10.x.jar`` comes from the PyPI wheel
  ``snowpark-connect-deps-iceberg``. That copy lacks the relocated Jackson classes it references
  (``org/apache/iceberg/shaded/com/fasterxml/jackson/...``), so
- ``iceberg-shaded-jackson-<version>.jar`` is built here from pyspark's own jackson-core,
  jackson-databind and jackson-annotations jars (merged without their META-INF) and relocated
  with Debian's jarjar (``libjarjar-java``). It is cached, keyed on the Jackson version.
- The SQLite JDBC driver for Iceberg's JDBC catalog comes from Debian's
  ``libxerial-sqlite-jdbc-java``.

On Spark 4.0 no wheel carries the runtime: ``iceberg-spark-runtime-4.0_2.13`` (which has its relocated
Jackson inside) is the ``iceberg`` set of the jar cache (``lakecdc.spark.jar_cache``), fetched by
``scripts/bootstrap.sh`` (``lakecdc.devstack.maven``).

On a machine that reaches Maven Central, ``LAKECDC_SPARK_PACKAGES`` (Maven coordinates) replaces
all of this; see ``lakecdc.spark.session``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path

from lakecdc.errors import SparkSetupError
from lakecdc.spark.jar_cache import cached_jars, jar_cache_dir, spark_line

JARJAR_CANDIDATES = (Path("/usr/share/java/jarjar.jar"), Path("/usr/share/java/jarjar-1.4.jar"))
SQLITE_JDBC_CANDIDATES = (Path("/usr/share/java/sqlite-jdbc.jar"), Path("/usr/share/java/xerial-sqlite-jdbc.jar"))
JACKSON_ARTIFACTS = ("jackson-core", "jackson-databind", "jackson-annotations")
RELOCATION_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"


def _package_dir(module: str, hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SparkSetupError(f"{module} is not installed: pip install '{hint}'")
    return Path(spec.origin).parent


def iceberg_runtime_jar() -> Path:
    """The Iceberg Spark 3.5 / Scala 2.12 runtime jar shipped in ``snowpark-connect-deps-iceberg``."""
    jars = sorted(
        (_package_dir("snowpark_connect_deps_iceberg", "lakecdc[spark35]") / "jars")
        .glob("iceberg-spark-runtime-3.5_2.12-*.jar"))
    if not jars:
        raise SparkSetupError("snowpark-connect-deps-iceberg has no iceberg-spark-runtime-3.5_2.12 jar")
    return jars[-1]


def pyspark_jackson_jars() -> list[Path]:
    jars_dir = _package_dir("pyspark", "lakecdc[spark]") / "jars"
    found: list[Path] = []
    for artifact in JACKSON_ARTIFACTS:
        matches = sorted(jars_dir.glob(f"{artifact}-2.*.jar"))
        if not matches:
            raise SparkSetupError(f"pyspark ships no {artifact} jar in {jars_dir}")
        found.append(matches[-1])
    return found


def _first_existing(candidates: tuple[Path, ...], package: str) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise SparkSetupError(f"{candidates[0]} not found: apt-get install {package} "
                          "(scripts/bootstrap.sh does it)")


def sqlite_jdbc_jar() -> Path:
    """Debian's SQLite JDBC driver, for Iceberg's JDBC catalog on a SQLite file."""
    return _first_existing(SQLITE_JDBC_CANDIDATES, "libxerial-sqlite-jdbc-java")


def shaded_jackson_jar(cache_dir: Path | None = None) -> Path:
    """Build (once) the relocated Jackson jar the Iceberg runtime jar needs, and return it.

    Concurrent callers (several test sessions) serialise on a lock file; the jar appears
    atomically, so a half-written jar is never used.
    """
    sources = pyspark_jackson_jars()
    version = re.sub(r"^jackson-core-|\.jar$", "", sources[0].name)
    cache = cache_dir or jar_cache_dir()
    target = cache / f"iceberg-shaded-jackson-{version}.jar"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        jarjar = _first_existing(JARJAR_CANDIDATES, "libjarjar-java")
        with tempfile.TemporaryDirectory(prefix="lakecdc-jars-", dir=cache) as work:
            merged = Path(work) / "jackson-merged.jar"
            _merge_without_meta_inf(sources, merged)
            rules = Path(work) / "rules.txt"
            rules.write_text(RELOCATION_RULE)
            relocated = Path(work) / target.name
            log = cache / "jarjar.log"
            with open(log, "wb") as out:
                done = subprocess.run(["java", "-jar", str(jarjar), "process", str(rules), str(merged),
                                       str(relocated)], stdout=out, stderr=subprocess.STDOUT, timeout=300)
            if done.returncode != 0 or not relocated.exists():
                raise SparkSetupError(f"jarjar exited with code {done.returncode} while relocating Jackson", log)
            os.replace(relocated, target)
    return target


def _merge_without_meta_inf(sources: list[Path], merged: Path) -> None:
    seen: set[str] = set()
    with zipfile.ZipFile(merged, "w", zipfile.ZIP_DEFLATED) as out:
        for source in sources:
            with zipfile.ZipFile(source) as jar:
                for info in jar.infolist():
                    if info.filename.startswith("META-INF") or info.filename in seen or info.is_dir():
                        continue
                    seen.add(info.filename)
                    out.writestr(info.filename, jar.read(info.filename))


def iceberg_jars(cache_dir: Path | None = None) -> list[Path]:
    """Every jar Spark needs for Iceberg: on 3.5 the offline runtime jar and the relocated Jackson jar,
    on 4.0 the runtime jar the bootstrap fetched from Maven Central."""
    if spark_line() == "3.5":
        return [iceberg_runtime_jar(), shaded_jackson_jar(cache_dir)]
    jars = cached_jars("iceberg", cache_dir)
    if jars is None:
        raise SparkSetupError(f"Iceberg's Spark {spark_line()} runtime is not in the jar cache: run "
                              "scripts/bootstrap.sh on a machine that reaches Maven Central")
    return jars
