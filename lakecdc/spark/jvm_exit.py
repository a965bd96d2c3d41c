"""What a job says when Spark's driver JVM has gone away under it.

PySpark talks to the driver JVM over a socket (py4j). When that JVM exits -- the sessions lakecdc
starts exit on an ``OutOfMemoryError`` (``lakecdc.spark.session.DRIVER_EXIT_ON_OOM``), the kernel's
OOM killer ends it, someone kills it -- the call in progress fails with a py4j network error and every
later call with another, none of which says why. ``explain_driver_exit`` turns that into one error in
the user's words: the JVM exited, the reason its log gives (``java.lang.OutOfMemoryError: Java heap
space``), what to change, and that nothing committed is lost::

    Spark's driver JVM exited during the ingest (exit code 3): java.lang.OutOfMemoryError: Java heap
    space (see /state/spark.log). Give the driver more memory (spark.driver.memory, now 1g;
    LAKECDC_SPARK_DRIVER_MEMORY for the session lakecdc starts) or read smaller batches
    (batch.max.records, now 100000). Every table keeps what it committed: the next run resumes from there.

An error while the JVM is alive is not touched. Only a JVM this process started (PySpark's
``gateway.proc``) can be seen to have exited; on Databricks and spark-submit the error passes as is.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lakecdc.errors import IngestError, TerminalError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: How long a failed call waits for the JVM to finish exiting (it closes the socket first).
EXIT_WAIT_SECONDS = 10.0
#: How much of the log's end is searched for the JVM's last error.
_LOG_TAIL_BYTES = 256 * 1024


class SparkDriverExitedError(IngestError, TerminalError):
    """Spark's driver JVM exited while the job used it (the message says why, when its log does)."""


def driver_process(spark: SparkSession) -> subprocess.Popen[bytes] | None:
    """The driver JVM's process when this Python process started it, else None."""
    gateway = getattr(spark.sparkContext, "_gateway", None)
    return getattr(gateway, "proc", None)


def last_jvm_error(log: Path | None) -> str | None:
    """The last ``java.lang.OutOfMemoryError`` (or other ``java.lang.*Error``) line the log holds."""
    if log is None or not log.is_file():
        return None
    with open(log, "rb") as f:
        f.seek(max(0, f.seek(0, 2) - _LOG_TAIL_BYTES))
        tail = f.read().decode("utf-8", "replace")
    found = None
    for line in tail.splitlines():
        start = line.find("java.lang.")
        if start >= 0 and "Error" in line[start:].split(":", 1)[0]:
            found = line[start:].strip()
    return found


@contextmanager
def explain_driver_exit(spark: SparkSession, log: Path | None, batch_records: int | None = None,
                        backlog_records: int | None = None) -> Iterator[None]:
    """Re-raise an error caused by the driver JVM's exit as ``SparkDriverExitedError`` (module docstring).

    ``backlog_records``: the size the job's batches grow to behind a backlog (the Spark readers'
    ``batch.backlog.max.records``), named in the advice when above ``batch_records``."""
    process = driver_process(spark)
    memory = spark.sparkContext.getConf().get("spark.driver.memory", "1g") if process is not None else None
    try:
        yield
    except Exception as error:
        if process is None or not _exited(process, error):
            raise
        reason = last_jvm_error(log)
        where = f" (see {log})" if log is not None and log.is_file() else ""
        if reason and "OutOfMemoryError" in reason:
            smaller = f", now {batch_records}" if batch_records else ""
            if backlog_records and batch_records and backlog_records > batch_records:
                smaller += (f"; batch.backlog.max.records, now {backlog_records}: behind a backlog batches grow "
                            "up to it")
            advice = (f"Give the driver more memory (spark.driver.memory, now {memory}; LAKECDC_SPARK_DRIVER_MEMORY "
                      f"for the session lakecdc starts) or read smaller batches (batch.max.records{smaller}).")
        else:
            advice = "Its log says why; the operating system may also have ended it (dmesg shows the OOM killer)."
        raise SparkDriverExitedError(
            f"Spark's driver JVM exited during the ingest (exit code {process.returncode})"
            f"{': ' + reason if reason else ''}{where}. {advice} Every table keeps what it committed: "
            "the next run resumes from there.") from error


def _exited(process: subprocess.Popen[bytes], error: Exception) -> bool:
    """Whether the JVM has exited; waits for it only after an error of the connection to it."""
    if process.poll() is not None:
        return True
    from py4j.protocol import Py4JNetworkError  # type: ignore[import-untyped]

    # not Py4JJavaError: an exception the living JVM threw must not wait here
    if not isinstance(error, (Py4JNetworkError, ConnectionError, EOFError)):
        return False
    try:
        process.wait(timeout=EXIT_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        return False
    return True
