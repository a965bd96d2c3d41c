"""Which flags the local Spark JVMs start with (``lakecdc.spark.session.with_jvm_options``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.spark.class_archive import QUIET, archive_path
from lakecdc.spark.session import with_jvm_options

DRIVER, EXECUTOR = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"


@pytest.fixture(autouse=True)
def jar_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKECDC_JAR_CACHE", str(tmp_path))
    monkeypatch.delenv("LAKECDC_SPARK_CLASS_ARCHIVE", raising=False)
    monkeypatch.delenv("LAKECDC_JVM_OPTIONS", raising=False)
    return tmp_path


def test_without_an_archive_or_options_nothing_is_added() -> None:
    assert with_jvm_options({}) == {}
    assert with_jvm_options({DRIVER: "-Dmine=1"}) == {DRIVER: "-Dmine=1"}


def test_the_driver_alone_gets_the_archive_and_the_callers_flags_come_last(monkeypatch: pytest.MonkeyPatch) -> None:
    archive = archive_path()
    archive.write_bytes(b"")
    monkeypatch.setenv("LAKECDC_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
    conf = with_jvm_options({DRIVER: "-Dmine=1", "spark.app.name": "x"})
    assert conf[DRIVER].split() == ["-XX:TieredStopAtLevel=1", f"-XX:SharedArchiveFile={archive}", *QUIET, "-Dmine=1"]
    assert conf[EXECUTOR] == "-XX:TieredStopAtLevel=1" and conf["spark.app.name"] == "x"
    for off in ("off", "0", "false"):
        monkeypatch.setenv("LAKECDC_SPARK_CLASS_ARCHIVE", off)
        assert with_jvm_options({}) == {DRIVER: "-XX:TieredStopAtLevel=1", EXECUTOR: "-XX:TieredStopAtLevel=1"}
