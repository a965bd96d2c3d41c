"""``run_mysql_capture``: a MySQL/MariaDB connector configuration -> coordinator run.

The ``lakecdc capture`` command calls it when ``connector.class`` names the MySQL or MariaDB
connector (see docs/CONTRACTS.md); it mirrors ``lakecdc.capture.runner.run_capture``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lakecdc.capture.coordinator import CaptureCoordinator, CaptureStats, CoordinatorSettings
from lakecdc.capture.mysql.connector import MySqlConnector, coordinator_snapshot_mode, load_mysql_config

log = logging.getLogger(__name__)


def run_mysql_capture(
    config_path: str | Path,
    sink: Any = "kafka",
    stop_when_idle: float | None = None,
    overrides: dict[str, str] | None = None,
    install_signals: bool = False,
    show_progress: bool | None = None,
) -> CaptureStats:
    from lakecdc.capture.runner import open_offsets
    from lakecdc.config.redact import install_log_redaction
    from lakecdc.transport import make_sink

    install_log_redaction()
    path = Path(config_path)
    config = load_mysql_config(path, overrides)
    ignored = config.ignored_properties()
    if ignored:
        log.warning("these properties are accepted but not applied by lakecdc: %s", ", ".join(ignored))
    connector = MySqlConnector(config, show_progress=show_progress)
    offsets = open_offsets(config, path)
    owns_sink = isinstance(sink, str)
    the_sink = make_sink(sink, config) if owns_sink else sink
    settings = CoordinatorSettings(
        snapshot_mode=coordinator_snapshot_mode(config),
        commit_interval_s=min(config.offset_flush_interval_ms, 1000) / 1000.0 or 1.0,
        stop_when_idle_s=stop_when_idle,
        max_batch_size=max(config.max_batch_size, 2048),
    )
    coordinator = CaptureCoordinator(connector, the_sink, offsets, settings)
    if install_signals:
        coordinator.install_signal_handlers()
    log.info("capturing %s into %s", config.describe_target(), sink if owns_sink else type(sink).__name__)
    try:
        return coordinator.run()
    finally:
        if owns_sink:
            the_sink.close()
        offsets.close()
        connector.close()


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
