"""The MySQL/MariaDB connector as the capture coordinator drives it (``lakecdc/capture/spi.py``).

``snapshot.mode`` (Debezium 3.x MySQL): ``initial`` (default), ``initial_only``, ``when_needed``,
``always``, ``no_data`` (= ``schema_only``: structures only, then stream from the current
position), ``never`` (stream from the oldest binlog file, structures from its DDL) and ``recovery``
(= ``schema_only_recovery``: rebuild a lost schema history from the current structures, then resume
from the stored offset). The coordinator gets ``no_data`` for the last three
(``registration.coordinator_snapshot_mode``).
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.offset import resume_point, snapshot_completed
from lakecdc.capture.mysql.schema_history import SchemaHistory, open_history
from lakecdc.capture.mysql.snapshot import MySqlSnapshotSource, schema_only_snapshot
from lakecdc.capture.mysql.streaming import EmittedMark, MySqlStreamingSource
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)

class MySqlConnector:
    def __init__(self, config: MySqlConnectorConfig, show_progress: bool | None = None,
                 history: SchemaHistory | None = None) -> None:
        self.config = config
        self.name = config.connector_name
        self.partition: dict[str, Any] = {"server": config.topic_prefix}
        self.modes = TypeModes.from_config(config)
        self.namer = TopicNamer(
            config.topic_prefix, config.connector_type, delimiter=config.topic_delimiter,
            transaction_suffix=config.topic_transaction, heartbeat_prefix=config.topic_heartbeat_prefix,
            schema_name_adjustment=config.schema_name_adjustment_mode,
        )
        self.history = history or open_history(config)
        self.show_progress = show_progress
        self.emitted = EmittedMark()
        self.headers = config.data_headers()  # one runId for the whole run, as Debezium

    def snapshot_source(self, stored: dict[str, Any] | None) -> MySqlSnapshotSource:
        with_data = self.config.snapshot_mode_normalized not in ("no_data", "recovery", "never")
        schema = DatabaseSchema(self.config, self.modes, self.namer, self.history, self.headers)
        return MySqlSnapshotSource(self.config, schema, with_data=with_data, show_progress=self.show_progress)

    def streaming_source(self) -> MySqlStreamingSource:
        def schema_snapshot(schema: DatabaseSchema, emit: Any,
                            position: dict[str, Any] | None = None) -> dict[str, Any]:
            return schema_only_snapshot(self.config, schema, emit, position, self.show_progress)

        return MySqlStreamingSource(self.config, self.modes, self.namer, self.history, self.emitted,
                                    snapshot_for_schema=schema_snapshot, headers=self.headers)

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)

    def can_resume_streaming(self, stored: dict[str, Any]) -> bool:
        """The stored binlog file must still be on the server (not purged while stopped)."""
        point = resume_point(stored)
        conn = myconn.connect(self.config)
        try:
            files = myconn.binlog_files(conn)
        finally:
            conn.close()
        if point.file not in files:
            log.warning("binlog file %s of the stored offset was purged (oldest on the server: %s); "
                        "a new snapshot is needed", point.file, files[0] if files else "none")
            return False
        return True

    def close(self) -> None:
        self.history.close()
