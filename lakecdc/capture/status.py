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
highest LSN CDC has recorded and whether the stored commit LSN has reached it. Nothing here holds credentials:
errors are scrubbed by the connectors' own connect helpers, and only the masked target is named.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.capture.registration import CaptureStatus
from lakecdc.capture.registry import registration_for
from lakecdc.config.base import load_properties
from lakecdc.errors import LakecdcError
from lakecdc.transport.offsets import OffsetStore, offset_key, offsets_file, open_offsets

__all__ = ["CaptureStatus", "capture_status", "is_capture_config"]


def is_capture_config(properties: dict[str, str]) -> bool:
    return "connector.class" in properties or "database.hostname" in properties


def capture_status(config_path: str | Path) -> CaptureStatus:
    """The status of the capture configured in ``config_path`` (never raises for a source that is down:
    the problem is reported in ``error``). The connector's registration (``capture/registry.py``)
    reads the configuration and probes the source."""
    path = Path(config_path)
    registration = registration_for(load_properties(path))
    config = registration.load_config(path, None)
    store, storage_text, stored_at = _open_store(config, path)
    status = CaptureStatus("capture", registration.name, config.connector_name, storage_text, stored_at=stored_at)
    try:
        status.offset = store.load(offset_key(config.connector_name, registration.partition(config)))
    finally:
        store.close()
    try:
        registration.probe(config, status)
    except LakecdcError as exc:
        status.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a status command reports, it does not crash
        status.error = f"{config.describe_target()}: {type(exc).__name__}: {exc}"
    return status


def _open_store(config: Any, path: Path) -> tuple[OffsetStore, str, str | None]:
    """The capture's offset store (opened as the runner opens it), how to name it, and when its
    file was last written."""
    file = offsets_file(config, path)
    stored_at = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).isoformat() \
        if file is not None and file.exists() else None
    text = f"file {file}" if file is not None else f"kafka topic {config.offset_storage_topic}"
    return open_offsets(config, path), text, stored_at
