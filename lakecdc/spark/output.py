"""Keep Spark's and Java's own output out of lakecdc's (the demo's sentences, ``lakecdc ingest``'s log):
into one log file the caller names (``spark.log``).

PySpark starts the driver JVM (``spark-submit`` through ``pyspark.java_gateway.launch_gateway``)
with this process's stdout and stderr, so everything the JVM prints, for the rest of its life,
lands between the caller's lines: log4j's console appender (``WARN NativeCodeLoader``, later plan
and Iceberg warnings), Spark's "Setting default log level" banner, the JVM's own warnings and the
Python workers it forks. ``spark_session_logged`` points file descriptors 1 and 2 at the log file
only while the JVM starts: the JVM and its children keep the file, this process gets its own
output back. py4j's Python logger and Python ``warnings`` go to the same file.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Python loggers whose records are Spark's business, not lakecdc's
SPARK_PYTHON_LOGGERS = ("py4j", "py.warnings", "pyspark")


@contextmanager
def output_to(log_file: Path) -> Iterator[None]:
    """While the block runs, file descriptors 1 and 2 write (append) to ``log_file``; a process
    started inside it keeps writing there after the block."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (fd, *saved):
            os.close(descriptor)


def python_logs_to(log_file: Path) -> None:
    """py4j, pyspark and Python warnings log to ``log_file`` only (at INFO: the file is for diagnosis)."""
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.captureWarnings(True)
    for name in SPARK_PYTHON_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False
        logger.setLevel(logging.INFO)


def python_logs_off() -> None:
    """Undo ``python_logs_to``: py4j logs as the interpreter exits, which reopened a log file whose
    directory a benchmark or test had removed (a FileNotFoundError traceback after its results)."""
    for name in SPARK_PYTHON_LOGGERS:
        logger = logging.getLogger(name)
        for handler in logger.handlers:
            handler.close()
        logger.handlers = [logging.NullHandler()]


def spark_session_logged(log_file: Path, warehouse: Path | str, **options: Any) -> SparkSession:
    """``lakecdc.spark.session.spark_session(warehouse, **options)`` with Spark's and Java's output in
    ``log_file``. The JVM is started here only if this process has none yet."""
    from lakecdc.spark.session import spark_session

    python_logs_to(log_file)
    with output_to(log_file):
        return spark_session(warehouse, **options)
