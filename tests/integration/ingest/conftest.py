"""Fixtures shared by the maintenance tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakecdc.maintenance.delta import DeltaMaintainer
from lakecdc.maintenance.iceberg import IcebergMaintainer
from lakecdc.maintenance.run import Maintainer
from lakecdc.writers.base import TableWriter, create_writer


@pytest.fixture(params=["iceberg", "delta-rs"])
def setup(request: pytest.FixtureRequest, spark: SparkSession,
          tmp_path: Path) -> Iterator[tuple[TableWriter, Maintainer]]:
    """A writer of each format and the maintainer of the tables it writes."""
    if request.param == "iceberg":
        yield create_writer("iceberg", spark), IcebergMaintainer(spark)
    else:
        warehouse = str(tmp_path / "delta")
        yield create_writer("delta-rs", spark, warehouse=warehouse), DeltaMaintainer(warehouse)
