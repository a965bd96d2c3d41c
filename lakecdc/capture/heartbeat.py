"""Heartbeats (``heartbeat.interval.ms``): a record on ``__debezium-heartbeat.<prefix>`` every
interval, and optionally ``heartbeat.action.query`` run on the source, so that a slot whose
tables are idle still advances when other tables of the server are busy.

Record (Debezium's)::

    key   {"serverName": "dbz"}   schema io.debezium.connector.common.ServerNameKey
    value {"ts_ms": 1795336045083} schema io.debezium.connector.common.Heartbeat
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import INT64, STRING, struct

log = logging.getLogger(__name__)

HEARTBEAT_KEY_SCHEMA = struct([("serverName", STRING)], name="io.debezium.connector.common.ServerNameKey")
HEARTBEAT_VALUE_SCHEMA = struct([("ts_ms", INT64)], name="io.debezium.connector.common.Heartbeat")


class Heartbeat:
    def __init__(self, interval_ms: int, topic: str, server_name: str, action_query: str | None = None,
                 sql_connection: Any = None) -> None:
        self.interval_s = interval_ms / 1000.0
        self.topic = topic
        self.server_name = server_name
        self.action_query = action_query
        self._conn = sql_connection
        self._next = time.monotonic() + self.interval_s

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0

    def due(self, now: float) -> bool:
        return self.enabled and now >= self._next

    def beat(self) -> ChangeRecord | None:
        """Run the action query (if any) and return the heartbeat record."""
        self._next = time.monotonic() + self.interval_s
        if self.action_query and self._conn is not None:
            try:
                self._conn.execute(self.action_query)
            except Exception as exc:  # a failing query must not stop capture; Debezium logs it
                log.warning("heartbeat.action.query failed: %s", exc)
        return ChangeRecord(
            self.topic, HEARTBEAT_KEY_SCHEMA, {"serverName": self.server_name},
            HEARTBEAT_VALUE_SCHEMA, {"ts_ms": time.time_ns() // 1_000_000}, [], None,
        )
