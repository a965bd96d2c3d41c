"""``run_capture``: configuration file -> connector + sink + offset store -> coordinator.

>>> run_capture("conf/postgres.properties", "jsonl:/tmp/events.jsonl", stop_when_idle=5)  # doctest: +SKIP

The configuration is a Debezium connector ``.properties`` file (used unchanged) or YAML; the
connector is chosen by ``connector.class`` (PostgreSQL when absent; MySQL and MariaDB through
``CONNECTOR_PLUGINS``, as are Oracle and SQL Server).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lakecdc.capture.spi import CaptureConnector
from lakecdc.capture.coordinator import CaptureCoordinator, CaptureStats, CoordinatorSettings
from lakecdc.capture.offsets import FileOffsetStore, KafkaOffsetStore, OffsetStore
from lakecdc.config.base import load_properties
from lakecdc.config.redact import install_log_redaction, register_secret
from lakecdc.errors import ConfigError

log = logging.getLogger(__name__)

POSTGRES_CLASSES = ("io.debezium.connector.postgresql.PostgresConnector", "postgres", "postgresql")


def load_connector_config(config_path: str | Path, overrides: dict[str, str] | None,
                          classes: tuple[str, ...], model: Any, kind: str) -> Any:
    """Read a connector file (``connector.class`` defaults to ``classes[0]``), validate it with
    ``model`` and register its password with the log redaction before anything can log it."""
    properties = load_properties(config_path)
    properties.update(overrides or {})
    connector_class = properties.get("connector.class", classes[0])
    if connector_class not in classes:
        raise ConfigError(
            f"connector.class '{connector_class}' is not a {kind} connector; expected one of "
            + ", ".join(classes),
            "connector.class",
        )
    config = model.from_properties(properties)
    if config.database_password is not None:
        register_secret(config.database_password.get_secret_value())
    return config


def load_postgres_config(config_path: str | Path, overrides: dict[str, str] | None = None) -> Any:
    from lakecdc.capture.postgres.config import PostgresConnectorConfig

    return load_connector_config(config_path, overrides, POSTGRES_CLASSES, PostgresConnectorConfig, "PostgreSQL")


def open_offsets(config: Any, config_path: Path) -> OffsetStore:
    kind = config.offset_storage_kind
    if kind == "kafka":
        return KafkaOffsetStore.from_config(config)
    if kind == "file":
        return FileOffsetStore(config.offset_storage_file_filename)
    # Debezium's MemoryOffsetBackingStore forgets everything at exit; lakecdc keeps a file beside
    # the configuration instead so a restart resumes.
    fallback = config_path.with_name(config_path.stem + ".offsets.json")
    log.info("no offset storage configured; keeping offsets in %s", fallback)
    return FileOffsetStore(fallback)


@dataclass(frozen=True)
class ConnectorParts:
    """What ``run_capture`` needs from one connector module (a plug-in, dlt style)."""

    config: Any
    connector: CaptureConnector
    settings: CoordinatorSettings


def _postgres_parts(path: Path, overrides: dict[str, str] | None, stop_when_idle: float | None,
                    show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.postgres.connector import PostgresConnector

    config = load_postgres_config(path, overrides)
    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode,
        commit_interval_s=_commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_retries=config.slot_max_retries,
        retry_backoff_s=min(config.slot_retry_delay_ms / 1000.0, 2.0),
    )
    return ConnectorParts(config, PostgresConnector(config, show_progress=show_progress), settings)


def _mysql_parts(path: Path, overrides: dict[str, str] | None, stop_when_idle: float | None,
                 show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.mysql.connector import MySqlConnector, coordinator_snapshot_mode, load_mysql_config

    config = load_mysql_config(path, overrides)
    settings = CoordinatorSettings(
        snapshot_mode=coordinator_snapshot_mode(config),
        commit_interval_s=_commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_batch_size=max(config.max_batch_size, 2048),
    )
    return ConnectorParts(config, MySqlConnector(config, show_progress=show_progress), settings)


def _oracle_parts(path: Path, overrides: dict[str, str] | None, stop_when_idle: float | None,
                  show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.oracle.connector import OracleConnector, load_oracle_config

    config = load_oracle_config(path, overrides)
    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode_normalized,
        commit_interval_s=_commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
    )
    return ConnectorParts(config, OracleConnector(config, show_progress=show_progress), settings)


def _sqlserver_parts(path: Path, overrides: dict[str, str] | None, stop_when_idle: float | None,
                     show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.sqlserver.connector import SqlServerConnector, load_sqlserver_config

    config = load_sqlserver_config(path, overrides)
    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode_normalized,
        commit_interval_s=_commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_batch_size=max(config.max_batch_size, 2048),
        retry_backoff_s=min(config.retriable_restart_connector_wait_ms / 1000.0, 2.0),
    )
    return ConnectorParts(config, SqlServerConnector(config, show_progress=show_progress), settings)


def _commit_interval_s(config: Any) -> float:
    return min(config.offset_flush_interval_ms, 1000) / 1000.0 or 1.0


MYSQL_CLASSES = (
    "io.debezium.connector.mysql.MySqlConnector", "io.debezium.connector.mariadb.MariaDbConnector",
    "mysql", "mariadb",
)
#: connector.class -> how to build its parts; imports stay lazy so one connector's driver is
#: not needed to run another.
CONNECTOR_PLUGINS: dict[str, Callable[..., ConnectorParts]] = {
    **{name: _postgres_parts for name in POSTGRES_CLASSES},
    **{name: _mysql_parts for name in MYSQL_CLASSES},
    **{name: _oracle_parts for name in ("io.debezium.connector.oracle.OracleConnector", "oracle")},
    **{name: _sqlserver_parts for name in ("io.debezium.connector.sqlserver.SqlServerConnector", "sqlserver")},
}


def _parts_for(path: Path, overrides: dict[str, str] | None, stop_when_idle: float | None,
               show_progress: bool | None) -> ConnectorParts:
    properties = load_properties(path)
    properties.update(overrides or {})
    connector_class = properties.get("connector.class", POSTGRES_CLASSES[0])
    plugin = CONNECTOR_PLUGINS.get(connector_class)
    if plugin is None:
        raise ConfigError(
            f"connector.class '{connector_class}' has no lakecdc capture; supported: "
            + ", ".join(sorted(c for c in CONNECTOR_PLUGINS if "." in c)),
            "connector.class",
        )
    return plugin(path, overrides, stop_when_idle, show_progress)


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
    parts = _parts_for(path, overrides, stop_when_idle, show_progress)
    config, connector = parts.config, parts.connector
    config.log_not_applied(log)
    offsets = open_offsets(config, path)
    owns_sink = isinstance(sink, str)
    the_sink = make_sink(sink, config) if owns_sink else sink
    coordinator = CaptureCoordinator(connector, the_sink, offsets, parts.settings)
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
