"""Where a capture stands: its stored offset, and how far the source log has moved past it.

``capture_status(config_path)`` reads the connector configuration (Debezium ``.properties`` or
YAML), the offset store it names, and asks the source how much log the capture has not yet
acknowledged. The result as ``lakecdc status --json`` prints it (PostgreSQL)::

    {"kind": "capture", "connector": "postgres", "name": "demo",
     "offset_storage": "file /data/capture.offsets.json",
     "offset": {"lsn": 24023128, "lsn_commit": 24023128, "txId": 771, "ts_usec": 1795336045083801},
     "position": "LSN 0/16E9058", "source_ts": "2026-11-22T09:41:12.083801+00:00",
     "stored_at": "2026-11-22T09:41:12.340000+00:00",
     "slot": {"name": "demo_slot", "active": true, "confirmed_flush_lsn": "0/16E9058",
              "current_wal_lsn": "0/16E9000", "lag_bytes": 168},
     "error": null}

MySQL/MariaDB report ``binlog`` instead of ``slot``: the server's current file and position and
the bytes of binlog written after the stored position. Oracle reports ``redo``: the current SCN and
how many SCNs the stored restart SCN is behind it. SQL Server reports ``change_tables``: the
highest LSN CDC has recorded and whether the stored commit LSN has reached it. Nothing here holds credentials: errors are
scrubbed by the connectors' own connect helpers, and only the masked target is named.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.capture.offsets import FileOffsetStore, KafkaOffsetStore, OffsetStore, offset_key
from lakecdc.config.base import load_properties
from lakecdc.errors import LakecdcError
from lakecdc.events.position_text import sqlserver_lsn_from_text

POSTGRES_CLASSES = ("io.debezium.connector.postgresql.PostgresConnector", "postgres", "postgresql")
ORACLE_CLASSES = ("io.debezium.connector.oracle.OracleConnector", "oracle")
SQLSERVER_CLASSES = ("io.debezium.connector.sqlserver.SqlServerConnector", "sqlserver")


@dataclass
class CaptureStatus:
    """One capture's position (see the module docstring for the JSON form)."""

    kind: str
    connector: str
    name: str
    offset_storage: str
    offset: dict[str, Any] | None = None
    position: str | None = None
    source_ts: str | None = None
    stored_at: str | None = None
    slot: dict[str, Any] | None = None
    binlog: dict[str, Any] | None = None
    redo: dict[str, Any] | None = None
    change_tables: dict[str, Any] | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_lsn(lsn: int) -> str:
    """PostgreSQL's text form of an LSN: ``format_lsn(24023128) == '0/16E9058'``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def is_capture_config(properties: dict[str, str]) -> bool:
    return "connector.class" in properties or "database.hostname" in properties


def capture_status(config_path: str | Path) -> CaptureStatus:
    """The status of the capture configured in ``config_path`` (never raises for a source that is down:
    the problem is reported in ``error``)."""
    path = Path(config_path)
    properties = load_properties(path)
    connector_class = properties.get("connector.class", POSTGRES_CLASSES[0])
    if connector_class in POSTGRES_CLASSES:
        from lakecdc.capture.runner import load_postgres_config

        config = load_postgres_config(path)
        connector = "postgres"
    elif connector_class in ORACLE_CLASSES:
        from lakecdc.capture.oracle.connector import load_oracle_config

        config = load_oracle_config(path)
        connector = "oracle"
    elif connector_class in SQLSERVER_CLASSES:
        from lakecdc.capture.sqlserver.connector import load_sqlserver_config

        config = load_sqlserver_config(path)
        connector = "sqlserver"
    else:
        from lakecdc.capture.mysql.connector import load_mysql_config

        config = load_mysql_config(path)
        connector = config.connector_type
    store, storage_text, stored_at = _open_store(config, path)
    status = CaptureStatus("capture", connector, config.connector_name, storage_text, stored_at=stored_at)
    try:
        partition: dict[str, Any] = {"server": config.topic_prefix}
        if connector == "sqlserver":  # Debezium 2+: one source partition per captured database
            partition["database"] = config.database
        status.offset = store.load(offset_key(config.connector_name, partition))
    finally:
        store.close()
    try:
        if connector == "postgres":
            _postgres_position(config, status)
        elif connector == "oracle":
            _oracle_position(config, status)
        elif connector == "sqlserver":
            _sqlserver_position(config, status)
        else:
            _mysql_position(config, status)
    except LakecdcError as exc:
        status.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a status command reports, it does not crash
        status.error = f"{config.describe_target()}: {type(exc).__name__}: {exc}"
    return status


def _open_store(config: Any, path: Path) -> tuple[OffsetStore, str, str | None]:
    kind = config.offset_storage_kind
    if kind == "kafka":
        return (KafkaOffsetStore.from_config(config),
                f"kafka topic {config.offset_storage_topic}", None)
    file = Path(config.offset_storage_file_filename) if kind == "file" \
        else path.with_name(path.stem + ".offsets.json")  # the runner's fallback for memory storage
    stored_at = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).isoformat() if file.exists() else None
    return FileOffsetStore(file), f"file {file}", stored_at


def _postgres_position(config: Any, status: CaptureStatus) -> None:
    from lakecdc.capture.postgres import connection as pgconn
    from lakecdc.capture.postgres.offset import flush_lsn

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
        current = parse_lsn(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
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


def _mysql_position(config: Any, status: CaptureStatus) -> None:
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


def _oracle_position(config: Any, status: CaptureStatus) -> None:
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


def _sqlserver_position(config: Any, status: CaptureStatus) -> None:
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
