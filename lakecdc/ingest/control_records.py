"""Records of the control topics: transaction BEGIN/END markers, heartbeats, schema changes.

A marker feeds the transaction buffer, which decides when a transaction's events may reach
silver, so one that is not exactly what Debezium's ``TransactionMonitor`` writes is refused here
(a ``RecordError``: the record becomes a dead letter) rather than trusted::

    {"status":"BEGIN","id":"1264:99091160","event_count":null,"data_collections":null,"ts_ms":...}
    {"status":"END","id":"1264:99092032","event_count":5,
     "data_collections":[{"data_collection":"public.customers","event_count":3}, ...],"ts_ms":...}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecdc.ingest.connect_types import json_type_name
from lakecdc.ingest.record_checks import RecordError, read_int


@dataclass(frozen=True)
class TxMarker:
    """A BEGIN or END record of the transaction metadata topic.

    ``collections`` maps Debezium's data collection name to its event count (END only).
    """

    topic: str
    partition: int
    offset: int
    status: str
    tx_id: str
    event_count: int | None
    collections: dict[str, int]
    ts_ms: int | None


@dataclass(frozen=True)
class SchemaChange:
    """A record of the schema change topic (DDL seen by the connector), kept as sent."""

    topic: str
    partition: int
    offset: int
    payload: dict[str, Any]

    @property
    def ddl(self) -> str | None:
        value = self.payload.get("ddl")
        return str(value) if value is not None else None


def tx_marker(topic: str, partition: int, offset: int, payload: dict[str, Any]) -> TxMarker:
    """The marker ``payload`` is, or ``RecordError`` naming the field that is not Debezium's."""
    status = payload.get("status")
    if status not in ("BEGIN", "END"):
        raise RecordError(f"field 'status': expected BEGIN or END, got {json_type_name(status)}")
    tx_id = payload.get("id")
    if not isinstance(tx_id, str) or not tx_id:
        raise RecordError(f"field 'id': expected the transaction id as text, got {json_type_name(tx_id)}")
    ts_ms = read_int(payload.get("ts_ms"), "ts_ms")
    count = payload.get("event_count")
    listed = payload.get("data_collections")
    if status == "BEGIN":
        if count is not None or listed is not None:
            raise RecordError("a BEGIN has null 'event_count' and 'data_collections', got "
                              f"{json_type_name(count)} and {json_type_name(listed)}")
        return TxMarker(topic, partition, offset, status, tx_id, None, {}, ts_ms)
    total = read_int(count, "event_count", optional=False, minimum=0)
    if not isinstance(listed, list):
        raise RecordError(f"field 'data_collections': expected an array, got {json_type_name(listed)}")
    collections: dict[str, int] = {}
    for j, entry in enumerate(listed):
        name = entry.get("data_collection") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise RecordError(f"field 'data_collections[{j}].data_collection': expected text, "
                              f"got {json_type_name(entry)}")
        if name in collections:
            raise RecordError(f"field 'data_collections': '{name}' is listed twice")
        collections[name] = read_int(entry.get("event_count"), f"data_collections[{j}].event_count",
                                     optional=False, minimum=0) or 0
    if sum(collections.values()) != total:  # the transaction buffer trusts the per-collection counts
        raise RecordError(f"field 'event_count': {total}, but the data_collections count "
                          f"{sum(collections.values())} events")
    return TxMarker(topic, partition, offset, status, tx_id, total, collections, ts_ms)


def heartbeat_ts_ms(payload: dict[str, Any]) -> int:
    """``ts_ms`` of a heartbeat (Debezium's ``Heartbeat`` value ``{"ts_ms": ...}``)."""
    return read_int(payload.get("ts_ms"), "ts_ms", optional=False) or 0
