"""Which flags the local Spark JVMs start with (``lakecdc.spark.session.with_jvm_options``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.spark.class_archive import QUIET, archive_path
from lakecdc.spark.session import DRIVER_EXIT_ON_OOM, with_jvm_options

DRIVER, EXECUTOR = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"


@pytest.fixture(autouse=True)
def jar_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKECDC_JAR_CACHE", str(tmp_path))
    monkeypatch.delenv("LAKECDC_SPARK_CLASS_ARCHIVE", raising=False)
    monkeypatch.delenv("LAKECDC_JVM_OPTIONS", raising=False)
    return tmp_path


def test_without_an_archive_or_options_the_driver_only_exits_on_out_of_memory() -> None:
    assert with_jvm_options({}) == {DRIVER: DRIVER_EXIT_ON_OOM}
    assert with_jvm_options({DRIVER: "-Dmine=1"}) == {DRIVER: f"{DRIVER_EXIT_ON_OOM} -Dmine=1"}


def test_the_driver_alone_gets_the_archive_and_the_callers_flags_come_last(monkeypatch: pytest.MonkeyPatch) -> None:
    archive = archive_path()
    archive.write_bytes(b"")
    monkeypatch.setenv("LAKECDC_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
    conf = with_jvm_options({DRIVER: "-Dmine=1", "spark.app.name": "x"})
    assert conf[DRIVER].split() == ["-XX:TieredStopAtLevel=1", DRIVER_EXIT_ON_OOM, f"-XX:SharedArchiveFile={archive}",
                                    *QUIET, "-Dmine=1"]
    assert conf[EXECUTOR] == "-XX:TieredStopAtLevel=1" and conf["spark.app.name"] == "x"
    for off in ("off", "0", "false"):
        monkeypatch.setenv("LAKECDC_SPARK_CLASS_ARCHIVE", off)
        assert with_jvm_options({}) == {DRIVER: f"-XX:TieredStopAtLevel=1 {DRIVER_EXIT_ON_OOM}",
                                        EXECUTOR: "-XX:TieredStopAtLevel=1"}
