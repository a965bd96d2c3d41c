"""Read-only incremental snapshots (Debezium ``read.only=true``): GTID watermarks, nothing written.

The chunk algorithm is the one of ``lakecdc/capture/incremental.py``; only the window's two ends
differ. Instead of inserting ``-open``/``-close`` rows into the signal table (which a read-only
account cannot do) the window is bounded by GTID sets:

- low watermark: the GTIDs the binlog stream has processed when the chunk is read. The window is
  open from there: a change of the chunk's table streamed from now on drops the buffered row with
  its key. Debezium takes the server's executed set as the low watermark and opens the window when
  the stream meets a GTID outside it; lakecdc opens it at the chunk read already (the stream is at
  or before the server's set then), because a server counts a transaction as executed once it is
  written to the binlog, a moment before the storage engine makes its rows visible (MariaDB's
  ``gtid_binlog_pos`` certainly so): such a transaction may be missing from the chunk, and its
  change must then win over the chunk's older row. Dropping a row the stream re-emits anyway is
  always safe; emitting a row older than a streamed change is not.
- high watermark: the server's executed GTID set read right after the chunk (MariaDB
  ``@@gtid_binlog_pos``, the transactions in its binlog, not ``gtid_current_pos``, which also
  counts replicated transactions a replica without ``log_slave_updates`` never writes to its
  binlog; MySQL ``@@gtid_executed``). The newest GTID of each stream (MariaDB domain, MySQL source
  uuid) that the stream had not yet processed at the low watermark is awaited; once the stream has
  processed all of them, every change the chunk can have seen has been streamed: the window closes
  and the remaining rows go out as ``op "r"`` events, followed by the next chunk's read. When
  nothing was committed meanwhile nothing is awaited and chunks follow each other at once.

The stream's GTIDs are checked after every transaction it processes and between batches of the
binlog (so an idle server, whose heartbeats bring no GTID, does not hold a window open).

GTIDs within one stream must follow binlog order: on a multi-threaded MySQL replica that needs
``replica_preserve_commit_order=ON`` (Debezium MySQL documentation, "Read-only incremental snapshots"); a
server without GTIDs cannot run these snapshots (:func:`check_prerequisites`). Signals come from the
Kafka channel (or rows others insert into the signal table, when one is configured); watermark rows met
in the signal table are not this connector's and are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lakecdc.capture.incremental import CLOSE, OPEN
from lakecdc.capture.mysql.connection import ServerInfo
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.errors import MySqlSetupError
from lakecdc.capture.mysql.incremental import MySqlIncrementalSnapshot
from lakecdc.events.gtid import GtidSet, MariaDbGtid, MySqlGtid
from lakecdc.events.source import BinlogSourceBuilder
from lakecdc.events.topics import TableId

log = logging.getLogger(__name__)

_PARALLEL_SETTINGS = ("replica_parallel_workers", "slave_parallel_workers",
                      "replica_preserve_commit_order", "slave_preserve_commit_order")


def check_prerequisites(conn: Any, info: ServerInfo) -> None:
    """Raise naming ``read.only`` and the missing setting when GTID watermarks cannot work."""
    if not info.gtid_enabled:
        raise MySqlSetupError(
            "read.only=true (read-only incremental snapshots) needs GTIDs, and the server's gtid_mode is not ON: "
            "set gtid_mode=ON and enforce_gtid_consistency=ON, or set read.only=false (watermarks are then "
            "written to the signal table)")
    if info.is_mariadb:
        return  # MariaDB's parallel replication commits in order within a domain
    placeholders = ", ".join(["%s"] * len(_PARALLEL_SETTINGS))
    with conn.cursor() as cur:
        cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", _PARALLEL_SETTINGS)
        settings = {str(name).lower(): str(value) for name, value in cur.fetchall()}
    workers = max((int(settings[k]) for k in _PARALLEL_SETTINGS[:2] if settings.get(k, "").isdigit()), default=0)
    ordered = any(settings.get(k, "").upper() in ("ON", "1") for k in _PARALLEL_SETTINGS[2:])
    if workers > 0 and not ordered:
        raise MySqlSetupError(
            f"read.only=true (read-only incremental snapshots) on a multi-threaded replica "
            f"(replica_parallel_workers={workers}) needs replica_preserve_commit_order=ON "
            "(slave_preserve_commit_order=ON before MySQL 8.0.26): GTIDs must reach the binlog in order")


class ReadOnlyIncrementalSnapshot(MySqlIncrementalSnapshot):
    def __init__(self, conn: Any, schema: DatabaseSchema, config: Any, source: BinlogSourceBuilder,
                 signal_table: TableId | None, is_mariadb: bool, stream_gtids: Callable[[], GtidSet]) -> None:
        super().__init__(conn, schema, config, source, signal_table)
        self._executed_variable = "@@GLOBAL.gtid_binlog_pos" if is_mariadb else "@@GLOBAL.gtid_executed"
        self._stream_gtids = stream_gtids
        self._low = GtidSet()
        #: GTIDs the stream must process before the buffered chunk goes out (None: no high watermark yet)
        self._awaited: tuple[MySqlGtid | MariaDbGtid, ...] | None = None

    # -- the watermarks (read_chunk calls these around the chunk query) ---------------------------
    def write_watermark(self, watermark_id: str, kind: str, data: str) -> None:
        if kind == OPEN:
            self._low = self._stream_gtids()
            self._awaited = None
            self.window_open = True
            return
        high = self.executed_gtids()
        self._awaited = tuple(g for g in high.latest() if not self._low.contains(g))
        log.debug("chunk window: low watermark %s, high watermark %s, awaiting %s", self._low, high,
                  [str(g) for g in self._awaited])

    def executed_gtids(self) -> GtidSet:
        rows = self.run_query(f"SELECT {self._executed_variable}", ())
        text = str(rows[0][0] or "") if rows else ""
        return GtidSet.parse(text.replace("\n", ""))

    # -- streaming hooks ---------------------------------------------------------------------------
    def on_watermark(self, kind: str, watermark_id: str, position: Any, out: list[Any]) -> None:
        """A watermark row in the signal table: some other connector's, never this one's."""
        log.info("read.only=true: watermark row '%s' in the signal table is not this connector's; ignored",
                 watermark_id)

    def on_stream(self, stream_gtids: GtidSet, position: Any, out: list[Any], limit: int) -> None:
        """The stream has processed ``stream_gtids`` (it is at ``position``): close the windows whose
        high watermark it has passed, emitting each chunk and reading the next, while ``out`` holds
        fewer than ``limit`` records. A window left open for the next call is safe: it only lets
        more streamed changes supersede its rows."""
        while len(out) < limit and self._chunk_id is not None and self._awaited is not None and all(
                stream_gtids.contains(g) for g in self._awaited):
            self._awaited = None
            super().on_watermark(CLOSE, self._chunk_id, position, out)
