"""Schema history: every DDL statement with the binlog position it was read at, for recovery.

The binlog holds row images without column names or types a consumer can trust, so the structure
of each table at a given position must be known. Each DDL (and each table structure read by a
snapshot) is appended here *before* any event that depends on it is emitted; on restart the records
up to the restart position are replayed through the DDL parser to rebuild the structures as they
were at that position (Debezium MySQL documentation, "Schema history topic"). One record per line, Debezium's layout::

    {"source": {"server": "dbserver1"},
     "position": {"file": "binlog.000003", "pos": 2046, "server_id": 223344, "gtids": "0-223344-9",
                  "ts_sec": 1700000000},
     "ts_ms": 1700000000123, "databaseName": "inventory", "schemaName": null,
     "ddl": "CREATE TABLE customers (...)", "tableChanges": [...]}

Snapshot records carry ``"snapshot": true`` in their position; a new snapshot supersedes every
record before it. Stores: a local file (``schema.history.internal.file.filename``, appended and
fsync'ed per record), a Kafka topic with exactly one partition
(``schema.history.internal.kafka.topic``; never partitioned, or the order is lost), or memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from lakecdc.capture.mysql.ddl.parser import DdlParseError, DdlParser
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.errors import MySqlSetupError
from lakecdc.events.positions import binlog_file_index
from lakecdc.transport import history_store
from lakecdc.transport.history_store import HistoryRecord, HistoryStore, MemoryHistoryStore, open_store

log = logging.getLogger(__name__)


__all__ = ["FileHistoryStore", "HistoryRecord", "HistoryStore", "KafkaHistoryStore", "MemoryHistoryStore",
           "SchemaHistory", "open_history"]


class FileHistoryStore(history_store.FileHistoryStore):
    """The shared file store, failing with the MySQL connector's setup error."""

    def __init__(self, path: Any, server: str) -> None:
        super().__init__(path, server, MySqlSetupError)


class KafkaHistoryStore(history_store.KafkaHistoryStore):
    """The shared Kafka topic store, failing with the MySQL connector's setup error."""

    def __init__(self, bootstrap_servers: str, topic: str, server: str,
                 client_config: dict[str, Any] | None = None) -> None:
        super().__init__(bootstrap_servers, topic, server, client_config, MySqlSetupError)


def _sort_key(record: HistoryRecord) -> tuple[int, int]:
    return (binlog_file_index(str(record.position["file"])), int(record.position["pos"]))


class SchemaHistory:
    """Appends DDL records and rebuilds ``Tables`` as of a restart position."""

    def __init__(self, store: HistoryStore, skip_unparseable_ddl: bool = False) -> None:
        self.store = store
        self.skip_unparseable_ddl = skip_unparseable_ddl

    def record(self, position: dict[str, Any], database: str | None, ddl: str,
               table_changes: Iterable[dict[str, Any]] = (), ts_ms: int | None = None) -> None:
        self.store.append(
            HistoryRecord(dict(position), database, ddl, list(table_changes),
                          ts_ms if ts_ms is not None else time.time_ns() // 1_000_000)
        )

    def exists(self) -> bool:
        return self.store.exists()

    def recover(self, restart_file: str, restart_pos: int, tables: Tables) -> int:
        """Replay the DDL recorded before ``restart_file:restart_pos`` into ``tables``.

        Only the latest snapshot and what follows it count (a snapshot restates every structure).
        Records at or after the restart position are left out: the binlog re-delivers them.
        Returns how many statements were applied.
        """
        records = list(self.store.records())
        start = 0
        for i, rec in enumerate(records):
            if rec.is_snapshot and rec.position.get("snapshot_first"):
                start = i
        limit = (binlog_file_index(restart_file), restart_pos)
        parser = DdlParser(tables)
        applied = 0
        seen: set[tuple[tuple[int, int], str]] = set()
        for rec in records[start:]:
            key = _sort_key(rec)
            if not rec.is_snapshot and key >= limit:
                continue
            if rec.is_snapshot and key > limit:
                continue
            if not rec.is_snapshot and (key, rec.ddl) in seen:
                continue  # recorded twice: the offset was not committed after the first time
            seen.add((key, rec.ddl))
            try:
                parser.parse(rec.ddl, rec.database)
            except DdlParseError as exc:
                if self.skip_unparseable_ddl:
                    log.warning("skipping unparseable DDL from the schema history: %s", exc)
                    continue
                raise exc.at(f"{rec.position['file']}:{rec.position['pos']}") from None
            applied += 1
        return applied

    def close(self) -> None:
        self.store.close()


def open_history(config: Any) -> SchemaHistory:
    """The history store named by the configuration (file, Kafka topic, or memory)."""
    return SchemaHistory(open_store(config, MySqlSetupError), config.schema_history_internal_skip_unparseable_ddl)
