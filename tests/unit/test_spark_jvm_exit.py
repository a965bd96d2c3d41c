"""``explain_driver_exit``'s advice after an out-of-memory exit names the batch limits the job reads
with: ``batch.max.records``, and ``batch.backlog.max.records`` when batches grow behind a backlog."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lakecdc.spark.jvm_exit import SparkDriverExitedError, explain_driver_exit


def exited_driver(tmp_path: Path) -> tuple[Any, Path]:
    """A session whose driver JVM has exited, with the out-of-memory line its log ends with."""
    process = subprocess.Popen(["sh", "-c", "exit 3"])
    process.wait()
    log = tmp_path / "spark.log"
    log.write_text("INFO starting\nERROR Executor: java.lang.OutOfMemoryError: Java heap space\n")
    conf = SimpleNamespace(get=lambda key, default=None: "1g")
    context = SimpleNamespace(_gateway=SimpleNamespace(proc=process), getConf=lambda: conf)
    return SimpleNamespace(sparkContext=context), log


@pytest.mark.parametrize("backlog, named", [(None, False), (100_000, False), (400_000, True)])
def test_the_advice_names_the_limit_batches_grow_to_behind_a_backlog(tmp_path: Path, backlog: int | None,
                                                                     named: bool) -> None:
    spark, log = exited_driver(tmp_path)
    with pytest.raises(SparkDriverExitedError) as raised, explain_driver_exit(spark, log, 100_000, backlog):
        raise ConnectionError("py4j: connection refused")
    message = str(raised.value)
    assert "exit code 3" in message and "java.lang.OutOfMemoryError: Java heap space" in message
    assert "spark.driver.memory, now 1g" in message and "batch.max.records, now 100000" in message
    assert ("batch.backlog.max.records, now 400000" in message) is named
    assert message.endswith("the next run resumes from there.")
