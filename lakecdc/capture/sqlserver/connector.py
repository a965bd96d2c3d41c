"""The SQL Server connector as the capture coordinator drives it (``lakecdc/capture/spi.py``).

``snapshot.mode`` (Debezium 3.x SQL Server connector, ``SqlServerConnectorConfig.SnapshotMode``):
``initial`` (default), ``initial_only``, ``no_data`` (= ``schema_only``: structures only, then stream
changes committed from now on), ``when_needed`` and ``always``.

Connections come from ``pymssql.connect`` unless a factory is given (``connection_factory``
argument, or ``LAKECDC_SQLSERVER_CONNECTION_FACTORY``; see ``connection.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.database_schema import DatabaseSchema
from lakecdc.capture.sqlserver.offset import ResumePoint, snapshot_completed, source_partition
from lakecdc.capture.sqlserver.snapshot import SqlServerSnapshotSource
from lakecdc.capture.sqlserver.streaming import SqlServerStreamingSource
from lakecdc.capture.sqlserver.types import TypeModes
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


class SqlServerConnector:
    def __init__(self, config: SqlServerConnectorConfig, show_progress: bool | None = None,
                 connection_factory: sq.ConnectionFactory | None = None) -> None:
        self.config = config
        self.name = config.connector_name
        self.partition: dict[str, Any] = source_partition(config)
        self.modes = TypeModes.from_config(config)
        self.namer = TopicNamer(
            config.topic_prefix, "sqlserver", delimiter=config.topic_delimiter,
            transaction_suffix=config.topic_transaction, heartbeat_prefix=config.topic_heartbeat_prefix,
            schema_name_adjustment=config.schema_name_adjustment_mode,
        )
        self.show_progress = show_progress
        self.connection_factory = connection_factory
        self.schema = DatabaseSchema(config, self.modes, self.namer)
        self.headers = config.data_headers()  # one runId for the whole run, as Debezium

    def connect(self) -> Any:
        return sq.connect(self.config, self.connection_factory)

    def snapshot_source(self, stored: dict[str, Any] | None) -> SqlServerSnapshotSource:
        with_data = self.config.snapshot_mode_normalized != "no_data"
        return SqlServerSnapshotSource(self.config, self.schema, self.connect, with_data=with_data,
                                       show_progress=self.show_progress, headers=self.headers)

    def streaming_source(self) -> SqlServerStreamingSource:
        return SqlServerStreamingSource(self.config, self.schema, self.namer, self.connect, headers=self.headers)

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)

    def can_resume_streaming(self, stored: dict[str, Any]) -> bool:
        """False when every captured change table starts after the stored position: CDC cleanup
        (``retention``, 3 days by default) removed the changes in between."""
        point = ResumePoint.from_offset(stored)
        conn = self.connect()
        try:
            self.schema.load(conn)
        finally:
            conn.close()
        starts = [i.start_lsn or 0 for insts in self.schema.instances.values() for i in insts]
        if starts and min(starts) > point.commit_lsn + 1:
            log.warning("the stored commit LSN %s is older than every change table (oldest starts at %s); "
                        "a new snapshot is needed", sq.lsn_text(point.commit_lsn), sq.lsn_text(min(starts)))
            return False
        return True

    def close(self) -> None:
        """Connections belong to the sources, which close them."""
