"""The chaos suite on PostgreSQL (CI's short seed): at least 8 SIGKILLs of capture and two ingest jobs.

See ``chaos_driver`` for what runs, how processes are killed, and what is checked. Longer runs:
``.venv/bin/python tests/chaos/chaos_driver.py --seed N --operations 5000 --kills 60``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_driver import ChaosRun
from e2e_lake import check

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.chaos, pytest.mark.timeout(2400)]

SEED = 20261126


def test_kill_9_of_capture_and_both_ingest_jobs_loses_and_doubles_nothing(pg, broker, spark, tmp_path: Path) -> None:
    run = ChaosRun(pg, broker, spark, tmp_path, SEED)
    try:
        report = run.run(operations=500, min_kills=8)
        print(report.summary())
        assert report.total_kills >= 8
        assert any(k.startswith("capture/") for k in report.kills)
        assert any(k.startswith(("ice/", "dlt/")) for k in report.kills)
        check(run.differences())
    finally:
        run.close()
