"""MariaDB -> binlog capture -> broker -> ingest -> silver/bronze (Iceberg and Delta), compared typed.

The MySQL connector's e2e proof (issue 5): a MariaDB workload with inserts, updates, deletes, a
primary-key change, a multi-table transaction, an added column, a truncate and a seeded random
mix is mirrored into silver, which must equal the source tables row by row with exact types,
while bronze holds every change exactly once.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from e2e_lake import check
from e2e_mysql import MariaDbPipeline
from e2e_pipeline import unique_name
from workloads import mariadb_scenario
from workloads.changelog import MySqlChangeLog

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEED = 5151


@pytest.fixture
def pipeline(mariadb, broker, spark, tmp_path: Path):
    pipe = MariaDbPipeline(mariadb, broker, spark, tmp_path, unique_name("e2emy"))
    yield pipe
    print("timings:", "; ".join(pipe.timings))
    pipe.close()


def test_mariadb_workload_mirrored_into_silver(pipeline: MariaDbPipeline) -> None:
    rng = random.Random(SEED)
    tables = list(mariadb_scenario.KEYS)
    pipeline.add_lake("ice", "iceberg", tables)
    pipeline.add_lake("dlt", "delta", tables)
    conn = pipeline.connect()
    try:
        log = MySqlChangeLog(conn, mariadb_scenario.KEYS)
        mariadb_scenario.create_and_seed(log, rng)
        with pipeline.capture_while():  # snapshot, then the binlog
            mariadb_scenario.scenario(log, rng)
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "snapshot + scenario"))

        with pipeline.capture_while():
            mariadb_scenario.random_changes(log, SEED, 800)
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "800 random operations"))
    finally:
        conn.close()
