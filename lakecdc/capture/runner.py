"""``run_capture``: configuration file -> connector + sink + offset store -> coordinator.

>>> run_capture("conf/postgres.properties", "jsonl:/tmp/events.jsonl", stop_when_idle=5)  # doctest: +SKIP

The configuration is a Debezium connector ``.properties`` file (used unchanged) or YAML; the
connector is chosen by ``connector.class`` (PostgreSQL when absent).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lakecdc.capture.coordinator import CaptureCoordinator, CaptureStats, CoordinatorSettings
from lakecdc.capture.offsets import FileOffsetStore, KafkaOffsetStore, OffsetStore
from lakecdc.config.base import load_properties
from lakecdc.config.redact import install_log_redaction, register_secret
from lakecdc.errors import ConfigError

log = logging.getLogger(__name__)

POSTGRES_CLASSES = ("io.debezium.connector.postgresql.PostgresConnector", "postgres", "postgresql")


def load_postgres_config(config_path: str | Path, overrides: dict[str, str] | None = None) -> Any:
    from lakecdc.capture.postgres.config import PostgresConnectorConfig

    properties = load_properties(config_path)
    properties.update(overrides or {})
    connector_class = properties.get("connector.class", POSTGRES_CLASSES[0])
    if connector_class not in POSTGRES_CLASSES:
        raise ConfigError(
            f"connector.class '{connector_class}' is not handled by this capture; expected "
            f"{POSTGRES_CLASSES[0]}",
            "connector.class",
        )
    config = PostgresConnectorConfig.from_properties(properties)
    if config.database_password is not None:
        register_secret(config.database_password.get_secret_value())
    return config


def open_offsets(config: Any, config_path: Path) -> OffsetStore:
    kind = config.offset_storage_kind
    if kind == "kafka":
        bootstrap = config.bootstrap_servers or config.producer_properties().get("bootstrap.servers")
        if not bootstrap:
            raise ConfigError("Kafka offset storage needs 'bootstrap.servers'", "bootstrap.servers")
        return KafkaOffsetStore(bootstrap, config.offset_storage_topic)
    if kind == "file":
        return FileOffsetStore(config.offset_storage_file_filename)
    # Debezium's MemoryOffsetBackingStore forgets everything at exit; lakecdc keeps a file beside
    # the configuration instead so a restart resumes.
    fallback = config_path.with_name(config_path.stem + ".offsets.json")
    log.info("no offset storage configured; keeping offsets in %s", fallback)
    return FileOffsetStore(fallback)


def run_capture(
    config_path: str | Path,
    sink: Any = "kafka",
    stop_when_idle: float | None = None,
    overrides: dict[str, str] | None = None,
    install_signals: bool = False,
    show_progress: bool | None = None,
) -> CaptureStats:
    """Capture per the configuration into ``sink`` (a Sink, or a spec ``kafka`` / ``jsonl:PATH``)."""
    from lakecdc.capture.postgres.connector import PostgresConnector
    from lakecdc.transport import make_sink

    install_log_redaction()
    path = Path(config_path)
    config = load_postgres_config(path, overrides)
    ignored = config.ignored_properties()
    if ignored:
        log.warning("these properties are accepted but not applied by lakecdc: %s", ", ".join(ignored))
    connector = PostgresConnector(config, show_progress=show_progress)
    offsets = open_offsets(config, path)
    owns_sink = isinstance(sink, str)
    the_sink = make_sink(sink, config) if owns_sink else sink
    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode,
        commit_interval_s=min(config.offset_flush_interval_ms, 1000) / 1000.0 or 1.0,
        stop_when_idle_s=stop_when_idle,
        max_retries=config.slot_max_retries,
        retry_backoff_s=min(config.slot_retry_delay_ms / 1000.0, 2.0),
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
