"""The PostgreSQL connector as the coordinator drives it (see ``lakecdc/capture/spi.py``)."""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.postgres import connection as pgconn
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.offset import resume_point, snapshot_completed
from lakecdc.capture.postgres.snapshot import PostgresSnapshotSource
from lakecdc.capture.postgres.streaming import PostgresStreamingSource
from lakecdc.capture.postgres.types import TypeModes
from lakecdc.capture.snapshot_modes import normalize_mode
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


class PostgresConnector:
    def __init__(self, config: PostgresConnectorConfig, show_progress: bool | None = None) -> None:
        self.config = config
        self.name = config.connector_name
        self.partition: dict[str, Any] = {"server": config.topic_prefix}
        self.modes = TypeModes.from_config(config)
        self.namer = TopicNamer(
            config.topic_prefix, "postgresql", delimiter=config.topic_delimiter,
            transaction_suffix=config.topic_transaction, heartbeat_prefix=config.topic_heartbeat_prefix,
            schema_name_adjustment=config.schema_name_adjustment_mode,
        )
        self.show_progress = show_progress
        self.headers = config.data_headers()  # one runId for the whole run, as Debezium
    def snapshot_source(self, stored: dict[str, Any] | None) -> PostgresSnapshotSource:
        with_data = normalize_mode(self.config.snapshot_mode) != "no_data"
        return PostgresSnapshotSource(self.config, self.modes, self.namer, with_data=with_data,
                                      show_progress=self.show_progress, headers=self.headers)

    def streaming_source(self) -> PostgresStreamingSource:
        return PostgresStreamingSource(self.config, self.modes, self.namer, headers=self.headers)

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)

    def can_resume_streaming(self, stored: dict[str, Any]) -> bool:
        """The slot must exist, hold its WAL, and not be past the stored position."""
        conn = pgconn.connect(self.config)
        try:
            state = pgconn.slot_state(conn, self.config.slot_name)
        finally:
            conn.close()
        if not state.exists:
            log.warning("replication slot %s is gone; the stored offset cannot be resumed", self.config.slot_name)
            return False
        if state.wal_status == "lost":
            log.warning("replication slot %s lost its WAL; the stored offset cannot be resumed",
                        self.config.slot_name)
            return False
        point = resume_point(stored)
        if state.confirmed_flush_lsn is not None and point.start_lsn and point.start_lsn < state.confirmed_flush_lsn:
            # Changes between the stored offset and the slot's position were released: they are gone.
            log.warning("slot %s is at %s, past the stored offset %s: changes in between are lost",
                        self.config.slot_name, state.confirmed_flush_lsn, point.start_lsn)
            return False
        return True

    def close(self) -> None:
        pass
