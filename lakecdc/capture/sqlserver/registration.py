"""The SQL Server connector's registration (``capture/registration.py``): Debezium's
``io.debezium.connector.sqlserver.SqlServerConnector``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lakecdc.capture.registration import (
    CaptureStatus,
    ConnectorParts,
    ConnectorRegistration,
    commit_interval_s,
    load_connector_config,
    reconnect_retries,
)
from lakecdc.capture.sqlserver.config import SQLSERVER_CLASSES, SqlServerConnectorConfig
from lakecdc.capture.sqlserver.offset import source_partition
from lakecdc.events.position_text import sqlserver_lsn_from_text


def load_sqlserver_config(config_path: str | Path,
                          overrides: dict[str, str] | None = None) -> SqlServerConnectorConfig:
    config: SqlServerConnectorConfig = load_connector_config(
        config_path, overrides, SQLSERVER_CLASSES, SqlServerConnectorConfig, "SQL Server")
    return config


def sqlserver_parts(config: SqlServerConnectorConfig, stop_when_idle: float | None,
                    show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.coordinator import CoordinatorSettings
    from lakecdc.capture.sqlserver.connector import SqlServerConnector

    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode_normalized,
        commit_interval_s=commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_batch_size=max(config.max_batch_size, 2048),
        retry_backoff_s=min(config.retriable_restart_connector_wait_ms / 1000.0, 2.0),
        max_retries=reconnect_retries(config),
    )
    return ConnectorParts(config, SqlServerConnector(config, show_progress=show_progress), settings)


def sqlserver_status(config: SqlServerConnectorConfig, status: CaptureStatus) -> None:
    """The stored commit LSN, and whether it has reached the highest LSN CDC recorded."""
    from lakecdc.capture.sqlserver import connection as sqconn

    offset = status.offset
    stored = None
    if offset and offset.get("commit_lsn"):
        stored = str(offset["commit_lsn"])
        status.position = f"commit LSN {stored}" + \
            (f" change LSN {offset['change_lsn']}" if offset.get("change_lsn") else "") + \
            (" (snapshot)" if offset.get("snapshot") else "")
    conn = sqconn.connect(config)
    try:
        current = sqconn.max_lsn(conn)
    finally:
        conn.close()
    info: dict[str, Any] = {"max_lsn": sqconn.lsn_text(current)}
    if stored is not None and current is not None:
        info["caught_up"] = sqlserver_lsn_from_text(stored) >= current
    status.change_tables = info


SQLSERVER = ConnectorRegistration("sqlserver", "SQL Server", SQLSERVER_CLASSES, load_sqlserver_config,
                                  sqlserver_parts, sqlserver_status, partition=source_partition)
