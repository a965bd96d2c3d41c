"""The chaos suite on MariaDB (a shorter workload): SIGKILLs of capture and both ingest jobs.

See ``chaos_driver``. By hand: ``.venv/bin/python tests/chaos/chaos_driver.py --source mariadb --kills 30``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_driver import ChaosRun
from e2e_lake import check

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos, pytest.mark.timeout(2400)]

SEED = 1126


def test_kill_9_of_binlog_capture_and_both_ingest_jobs_loses_and_doubles_nothing(mariadb, broker, spark,
                                                                                 tmp_path: Path) -> None:
    run = ChaosRun(mariadb, broker, spark, tmp_path, SEED)
    try:
        report = run.run(operations=250, min_kills=4)
        print(report.summary())
        assert report.total_kills >= 4 and any(k.startswith("capture/") for k in report.kills)
        check(run.differences())
    finally:
        run.close()
