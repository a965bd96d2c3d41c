"""The MySQL and MariaDB registrations (``capture/registration.py``): Debezium 3 ships two
connectors, ``io.debezium.connector.mysql.MySqlConnector`` and
``io.debezium.connector.mariadb.MariaDbConnector``; lakecdc captures both with one connector, whose
``connector_type`` follows ``connector.class``."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.capture.mysql.config import MARIADB_CLASSES, MYSQL_CLASSES, MySqlConnectorConfig
from lakecdc.capture.registration import (
    CaptureStatus,
    ConnectorParts,
    ConnectorRegistration,
    commit_interval_s,
    load_connector_config,
    reconnect_retries,
)


def load_mysql_config(config_path: str | Path, overrides: dict[str, str] | None = None) -> MySqlConnectorConfig:
    config: MySqlConnectorConfig = load_connector_config(
        config_path, overrides, MYSQL_CLASSES + MARIADB_CLASSES, MySqlConnectorConfig, "MySQL or MariaDB")
    return config


def coordinator_snapshot_mode(config: MySqlConnectorConfig) -> str:
    """The mode the coordinator plans with (it knows no ``recovery``): ``recovery`` and ``never``
    take no data snapshot, and the streaming source handles the structures itself."""
    mode = config.snapshot_mode_normalized
    return "no_data" if mode in ("recovery", "never") else mode


def mysql_parts(config: MySqlConnectorConfig, stop_when_idle: float | None,
                show_progress: bool | None) -> ConnectorParts:
    from lakecdc.capture.coordinator import CoordinatorSettings
    from lakecdc.capture.mysql.connector import MySqlConnector

    settings = CoordinatorSettings(
        snapshot_mode=coordinator_snapshot_mode(config),
        commit_interval_s=commit_interval_s(config),
        stop_when_idle_s=stop_when_idle,
        max_batch_size=max(config.max_batch_size, 2048),
        max_retries=reconnect_retries(config),
    )
    return ConnectorParts(config, MySqlConnector(config, show_progress=show_progress), settings)


def mysql_status(config: MySqlConnectorConfig, status: CaptureStatus) -> None:
    """The stored binlog position, and the bytes of binlog the server wrote after it."""
    from lakecdc.capture.mysql import connection as myconn

    offset = status.offset
    if offset:
        status.position = f"{offset.get('file')}:{offset.get('pos')}" + \
            (f" gtids {offset['gtids']}" if offset.get("gtids") else "")
        if offset.get("ts_sec") is not None:
            status.source_ts = datetime.fromtimestamp(int(offset["ts_sec"]), timezone.utc).isoformat()
    conn = myconn.connect(config)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            files = [(str(r[0]), int(r[1])) for r in cur.fetchall()]
    finally:
        conn.close()
    info: dict[str, Any] = {"current_file": files[-1][0] if files else None,
                            "current_pos": files[-1][1] if files else None}
    if offset and files:
        info["lag_bytes"] = binlog_bytes_behind(files, str(offset.get("file")), int(offset.get("pos", 0)))
    status.binlog = info


def binlog_bytes_behind(files: list[tuple[str, int]], file: str, pos: int) -> int | None:
    """Bytes written to the binlog after ``file:pos`` (None when ``file`` was purged).

    >>> binlog_bytes_behind([("b.000001", 1000), ("b.000002", 300)], "b.000001", 400)
    900
    """
    names = [name for name, _ in files]
    if file not in names:
        return None
    index = names.index(file)
    return max(0, files[index][1] - pos) + sum(size for _, size in files[index + 1:])


MYSQL = ConnectorRegistration("mysql", "MySQL", MYSQL_CLASSES, load_mysql_config, mysql_parts, mysql_status)
MARIADB = ConnectorRegistration("mariadb", "MariaDB", MARIADB_CLASSES, load_mysql_config, mysql_parts,
                                mysql_status)
