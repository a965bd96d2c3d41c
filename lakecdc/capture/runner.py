"""``run_capture``: configuration file -> connector + sink + offset store -> coordinator.

>>> run_capture("conf/postgres.properties", "jsonl:/tmp/events.jsonl", stop_when_idle=5)  # doctest: +SKIP

The configuration is a Debezium connector ``.properties`` file (used unchanged) or YAML; the
connector is chosen by ``connector.class`` among the registrations of ``registry.py`` (PostgreSQL
when absent).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lakecdc.capture.coordinator import CaptureCoordinator, CaptureStats
from lakecdc.capture.registry import registration_for
from lakecdc.config.base import load_properties
from lakecdc.config.redact import install_log_redaction
from lakecdc.transport.offsets import open_offsets

log = logging.getLogger(__name__)


def run_capture(
    config_path: str | Path,
    sink: Any = "kafka",
    stop_when_idle: float | None = None,
    overrides: dict[str, str] | None = None,
    install_signals: bool = False,
    show_progress: bool | None = None,
) -> CaptureStats:
    """Capture per the configuration into ``sink`` (a Sink, or a spec ``kafka`` / ``jsonl:PATH``);
    the connector is chosen by ``connector.class``."""
    from lakecdc.transport import make_sink

    install_log_redaction()
    path = Path(config_path)
    properties = load_properties(path)
    properties.update(overrides or {})
    registration = registration_for(properties)
    config = registration.load_config(path, overrides)
    parts = registration.parts(config, stop_when_idle, show_progress)
    connector = parts.connector
    config.log_not_applied(log)
    offsets = open_offsets(config, path)
    owns_sink = isinstance(sink, str)
    the_sink = make_sink(sink, config) if owns_sink else sink
    coordinator = CaptureCoordinator(connector, the_sink, offsets, parts.settings)
    restore_signals = coordinator.install_signal_handlers() if install_signals else None
    log.info("capturing %s into %s", config.describe_target(), sink if owns_sink else type(sink).__name__)
    try:
        return coordinator.run()
    finally:
        if restore_signals is not None:
            restore_signals()
        if owns_sink:
            the_sink.close()
        offsets.close()
        connector.close()
