"""The PostgreSQL connector's registration (``capture/registration.py``): Debezium's
``io.debezium.connector.postgresql.PostgresConnector``, also the default when a configuration
names no ``connector.class``."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.capture.postgres.config import POSTGRES_CLASSES, PostgresConnectorConfig
from lakecdc.capture.registration import (
    CaptureStatus,
    ConnectorParts,
    ConnectorRegistration,
    commit_interval_s,
    load_connector_config,
    reconnect_retries,
)


def load_postgres_config(config_path: str | Path, overrides: dict[str, str] | None = None) -> PostgresConnectorConfig:
    config: PostgresConnectorConfig = load_connector_config(
        config_path, overrides, POSTGRES_CLASSES, PostgresConnectorConfig, "PostgreSQL")
    return config


def postgres_parts(config: PostgresConnectorConfig, stop_when_idle: float | None,
                   show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.coordinator import CoordinatorSettings
    from lakecdc.capture.postgres.connector import PostgresConnector

    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode,
        commit_interval_s=commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_retries=reconnect_retries(config, config.slot_max_retries),
        retry_backoff_s=min(config.slot_retry_delay_ms / 1000.0, 2.0),
    )
    return ConnectorParts(config, PostgresConnector(config, show_progress=show_progress), settings)


def postgres_status(config: PostgresConnectorConfig, status: CaptureStatus) -> None:
    """The stored LSN, and the replication slot against ``pg_current_wal_lsn()``."""
    from lakecdc.capture.postgres import connection as pgconn
    from lakecdc.capture.postgres.offset import flush_lsn
    from lakecdc.capture.postgres.replication import format_lsn, parse_lsn

    offset = status.offset
    acknowledged = None
    if offset:
        lsn = int(offset.get("lsn", 0))
        status.position = f"LSN {format_lsn(lsn)}" + (" (snapshot)" if offset.get("snapshot") else "")
        if offset.get("ts_usec") is not None:
            status.source_ts = datetime.fromtimestamp(int(offset["ts_usec"]) / 1e6, timezone.utc).isoformat()
        acknowledged = flush_lsn(offset)
    conn = pgconn.connect(config)
    try:
        slot = pgconn.slot_state(conn, config.slot_name)
        current = parse_lsn(pgconn.one_row(conn.execute("SELECT pg_current_wal_lsn()::text"))[0])
    finally:
        conn.close()
    info: dict[str, Any] = {"name": config.slot_name, "exists": slot.exists, "active": slot.active,
                            "current_wal_lsn": format_lsn(current)}
    if slot.exists:
        confirmed = slot.confirmed_flush_lsn
        info.update(confirmed_flush_lsn=format_lsn(confirmed) if confirmed is not None else None,
                    wal_status=slot.wal_status,
                    lag_bytes=max(0, current - confirmed) if confirmed is not None else None)
    if acknowledged is not None:
        info["offset_lag_bytes"] = max(0, current - acknowledged)
    status.slot = info


POSTGRES = ConnectorRegistration("postgres", "PostgreSQL", POSTGRES_CLASSES, load_postgres_config,
                                 postgres_parts, postgres_status)
