"""Heartbeat records on ``__debezium-heartbeat.<prefix>`` (Debezium ``heartbeat.interval.ms``).

Key and value as Debezium 3.x writes them::

    key   {"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],
           "optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},
           "payload":{"serverName":"dbz"}}
    value {"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],
           "optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},
           "payload":{"ts_ms":1795336045068}}

A heartbeat carries the connector's current position, so offsets advance (and PostgreSQL can
recycle WAL) even when the captured tables are quiet.
"""

from __future__ import annotations

from typing import Any

from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import INT64, STRING, struct

HEARTBEAT_KEY_SCHEMA = struct(
    [("serverName", STRING)], name="io.debezium.connector.common.ServerNameKey", version=1
)
HEARTBEAT_VALUE_SCHEMA = struct([("ts_ms", INT64)], name="io.debezium.connector.common.Heartbeat", version=1)


def heartbeat_record(topic: str, server_name: str, ts_ms: int, position: Any = None) -> ChangeRecord:
    """The heartbeat record for ``server_name`` (``topic.prefix``) at ``ts_ms``."""
    return ChangeRecord(
        topic=topic,
        key_schema=HEARTBEAT_KEY_SCHEMA,
        key={"serverName": server_name},
        value_schema=HEARTBEAT_VALUE_SCHEMA,
        value={"ts_ms": ts_ms},
        headers=[],
        position=position,
    )
