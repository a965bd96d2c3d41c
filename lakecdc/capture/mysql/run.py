"""``run_mysql_capture``: a MySQL/MariaDB connector configuration -> coordinator run.

The ``lakecdc capture`` command calls it when ``connector.class`` names the MySQL or MariaDB
connector (see docs/CONTRACTS.md); it mirrors ``lakecdc.capture.runner.run_capture``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lakecdc.capture.coordinator import CaptureStats
from lakecdc.capture.mysql.config import MYSQL_CLASSES

log = logging.getLogger(__name__)


def run_mysql_capture(
    config_path: str | Path,
    sink: Any = "kafka",
    stop_when_idle: float | None = None,
    overrides: dict[str, str] | None = None,
    install_signals: bool = False,
    show_progress: bool | None = None,
) -> CaptureStats:
    """``run_capture`` for a MySQL/MariaDB configuration (``connector.class`` defaults to MySQL)."""
    from lakecdc.capture.runner import run_capture

    merged = {"connector.class": _connector_class(config_path), **(overrides or {})}
    return run_capture(config_path, sink, stop_when_idle=stop_when_idle, overrides=merged,
                       install_signals=install_signals, show_progress=show_progress)


def _connector_class(config_path: str | Path) -> str:
    from lakecdc.config.base import load_properties

    return load_properties(config_path).get("connector.class", MYSQL_CLASSES[0])


def main(argv: list[str] | None = None) -> int:
    """``python -m lakecdc.capture.mysql.run --config FILE --sink jsonl:PATH [--stop-when-idle S]``
    (what ``lakecdc capture`` runs for a MySQL/MariaDB ``connector.class``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lakecdc.capture.mysql.run")
    parser.add_argument("--config", required=True)
    parser.add_argument("--sink", default="kafka")
    parser.add_argument("--stop-when-idle", type=float, default=None)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stats = run_mysql_capture(args.config, args.sink, stop_when_idle=args.stop_when_idle, install_signals=True,
                              show_progress=False)
    log.info("capture stopped: %d snapshot rows, %d streamed records, %d commits",
             stats.snapshot_rows, stats.streamed_records, stats.commits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
