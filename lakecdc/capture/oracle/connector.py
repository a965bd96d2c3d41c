"""The Oracle connector as the capture coordinator drives it (``lakecdc/capture/spi.py``).

``snapshot.mode`` (Debezium 3.x Oracle, the modes lakecdc implements): ``initial`` (default),
``initial_only``, ``when_needed`` (snapshot again when the redo for the stored SCN is gone),
``always``, ``no_data`` (= ``schema_only``: stream from the current SCN).
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.logminer.session import resumable
from lakecdc.capture.oracle.offset import OracleOffset, snapshot_completed
from lakecdc.capture.oracle.schema_history import OracleSchemaHistory, open_history
from lakecdc.capture.oracle.snapshot import OracleSnapshotSource
from lakecdc.capture.oracle.streaming import OracleStreamingSource
from lakecdc.capture.oracle.types import TypeModes
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


class OracleConnector:
    def __init__(self, config: OracleConnectorConfig, show_progress: bool | None = None) -> None:
        self.config = config
        self.name = config.connector_name
        self.partition: dict[str, Any] = {"server": config.topic_prefix}
        self.modes = TypeModes.from_config(config)
        self.namer = TopicNamer(
            config.topic_prefix, "oracle", delimiter=config.topic_delimiter,
            transaction_suffix=config.topic_transaction, heartbeat_prefix=config.topic_heartbeat_prefix,
            schema_name_adjustment=config.schema_name_adjustment_mode,
        )
        self.show_progress = show_progress
        self.headers = config.data_headers()  # one runId for the whole run, as Debezium
        self._first_scn: list[int] = []
        self._history: OracleSchemaHistory | None = None

    @property
    def history(self) -> OracleSchemaHistory:
        """The schema history, opened once per run (snapshot and streaming share it)."""
        if self._history is None:
            self._history = open_history(self.config)
        return self._history

    def snapshot_source(self, stored: dict[str, Any] | None) -> OracleSnapshotSource:
        with_data = self.config.snapshot_mode_normalized != "no_data"
        return OracleSnapshotSource(self.config, self.modes, self.namer, with_data=with_data,
                                    show_progress=self.show_progress, headers=self.headers,
                                    history=self.history)

    def streaming_source(self) -> OracleStreamingSource:
        return OracleStreamingSource(self.config, self.modes, self.namer, headers=self.headers,
                                     first_scn=self._first_scn, history=self.history)

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)

    def can_resume_streaming(self, stored: dict[str, Any]) -> bool:
        """The redo after the stored SCN must still be in the online or archived logs."""
        conn = oraconn.connect(self.config)
        try:
            conn.use_root()
            return resumable(conn, OracleOffset.from_offset(stored).scn, self.config.archive_log_hours)
        finally:
            conn.close()

    def close(self) -> None:
        if self._history is not None:
            self._history.close()
            self._history = None
