"""The chaos suite on the Databricks paths: Apache Kafka, Delta through Spark, Spark's Kafka source.

A short PostgreSQL seed captured into Apache Kafka (KRaft, ``kafka_broker``) and read by two
continuous jobs whose JVMs get the Maven jars from the bootstrap's cache (``LAKECDC_SPARK_CONNECTORS``
per process, ``chaos_driver.JOBS``): ``dsp`` writes Delta through Spark's own Delta, ``skf`` reads
with Spark's Kafka source and writes Iceberg. At least 4 SIGKILLs (a round: capture twice, each job
once); then the same checks as the other chaos tests (``chaos_driver``), and each job's log must show
it took its path. By hand:
``.venv/bin/python tests/chaos/chaos_driver.py --broker kafka --jobs dsp,skf --operations 600 --kills 12``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_driver import ChaosRun
from e2e_lake import check

from lakecdc.devstack.spark import CONNECTORS, spark_connectors

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos, pytest.mark.timeout(2400)]

SEED = 20261127


def test_kill_9_on_kafka_with_delta_through_spark_and_sparks_kafka_source(pg, kafka_broker, spark,
                                                                         tmp_path: Path) -> None:
    missing = [name for name in CONNECTORS if name not in spark_connectors("auto")]
    if missing:
        pytest.skip(f"the jars of {missing} are not in the jar cache: run scripts/bootstrap.sh on a machine that "
                    "reaches Maven Central (io.delta:delta-spark_2.12, spark-sql-kafka-0-10_2.12)")
    # every job kill waits for a table commit or a held transaction (at most 90 s / 30 s, then a
    # random pause): the jobs' JVMs start slowly
    run = ChaosRun(pg, kafka_broker, spark, tmp_path, SEED, jobs=("dsp", "skf"), job_moments=("after-commit", "held"))
    try:
        report = run.run(operations=200, min_kills=4)
        print(report.summary())
        check(run.differences())
        # whether a commit or a held transaction came before a kill's wait ran out depends on the
        # machine's load: only the counts are asserted
        assert report.total_kills >= 4
        assert any(k.startswith("capture/") for k in report.kills)
        assert any(k.startswith("dsp/") for k in report.kills) and any(k.startswith("skf/") for k in report.kills)
    finally:
        run.close()
