"""The Oracle connector's registration (``capture/registration.py``): Debezium's
``io.debezium.connector.oracle.OracleConnector``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lakecdc.capture.oracle.config import ORACLE_CLASSES, OracleConnectorConfig
from lakecdc.capture.registration import (
    CaptureStatus,
    ConnectorParts,
    ConnectorRegistration,
    commit_interval_s,
    load_connector_config,
    reconnect_retries,
)


def load_oracle_config(config_path: str | Path, overrides: dict[str, str] | None = None) -> OracleConnectorConfig:
    config: OracleConnectorConfig = load_connector_config(
        config_path, overrides, ORACLE_CLASSES, OracleConnectorConfig, "Oracle")
    return config


def oracle_parts(config: OracleConnectorConfig, stop_when_idle: float | None,
                 show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.coordinator import CoordinatorSettings
    from lakecdc.capture.oracle.connector import OracleConnector

    settings = CoordinatorSettings(
        snapshot_mode=config.snapshot_mode_normalized,
        commit_interval_s=commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_retries=reconnect_retries(config),
    )
    return ConnectorParts(config, OracleConnector(config, show_progress=show_progress), settings)


def oracle_status(config: OracleConnectorConfig, status: CaptureStatus) -> None:
    """The stored SCN, and how many SCNs the database's current SCN is ahead of it."""
    from lakecdc.capture.oracle import connection as oraconn

    offset = status.offset
    if offset:
        status.position = f"SCN {offset.get('scn')}" + \
            (f" (commits {offset['commit_scn']})" if offset.get("commit_scn") else "") + \
            (" (snapshot)" if offset.get("snapshot_scn") else "")
    conn = oraconn.connect(config)
    try:
        conn.use_root()
        current = conn.current_scn()
    finally:
        conn.close()
    info: dict[str, Any] = {"current_scn": current}
    if offset and offset.get("scn") is not None:
        info["scn_lag"] = max(0, current - int(offset["scn"]))
    status.redo = info


ORACLE = ConnectorRegistration("oracle", "Oracle", ORACLE_CLASSES, load_oracle_config, oracle_parts, oracle_status)
