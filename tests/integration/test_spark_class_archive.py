"""The class-data archive the bootstrap builds is what a local Spark driver maps, and one that does not
match a JVM is ignored without a word (``lakecdc.spark.class_archive``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakecdc.spark.class_archive import QUIET, archive_options, archive_path

pytestmark = [pytest.mark.integration, pytest.mark.spark4]

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from lakecdc.spark.output import spark_session_logged

    spark = spark_session_logged(Path(sys.argv[1]), Path(sys.argv[2]), app_name="lakecdc-class-archive-test")
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    print(spark.range(3).count())
    print(Path(f"/proc/{pid}/maps").read_text())
    spark.stop()
""")


@pytest.fixture
def archive() -> Path:
    path = archive_path()
    assert path.is_file(), f"scripts/bootstrap.sh builds {path} (python -m lakecdc.spark.class_archive); it is missing"
    return path


def driver_maps(tmp_path: Path, archive: Path, setting: str | None) -> tuple[bool, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LAKECDC_SPARK_CLASS_ARCHIVE", None)
    if setting is not None:
        env["LAKECDC_SPARK_CLASS_ARCHIVE"] = setting
    log_file = tmp_path / f"spark-{setting}.log"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(log_file), str(tmp_path / f"warehouse-{setting}")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    count, maps = done.stdout.split("\n", 1)
    assert count == "3"
    return str(archive) in maps, log_file.read_text()


@pytest.mark.slow
def test_a_local_driver_maps_the_archive_unless_it_is_turned_off(tmp_path: Path, archive: Path) -> None:
    mapped, log = driver_maps(tmp_path, archive, None)
    assert mapped, "the driver JVM did not map the archive: it was refused (a JDK or classpath mismatch?)"
    assert "[cds" not in log  # nothing of class-data sharing in Spark's log either
    assert not driver_maps(tmp_path, archive, "off")[0]


def test_an_archive_that_does_not_match_the_jvm_is_ignored_silently(archive: Path) -> None:
    # `java -version` has no Spark classpath: the archive's classpath check fails, the JVM runs on
    # (with the JDK's own base archive) and, with lakecdc's flags, says nothing about it.
    def java(*flags: str) -> str:
        done = subprocess.run(["java", *flags, "-version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    assert "Unable to use shared archive" in java(f"-XX:SharedArchiveFile={archive}")  # what QUIET hides
    quiet = java(*archive_options())
    assert set(QUIET) <= set(archive_options()) and "archive" not in quiet and "[cds" not in quiet
    assert "sharing" in quiet  # still on the JDK's base archive
