"""Schema history stores shared by the connectors that keep one (MySQL/MariaDB, Oracle).

One record per DDL statement (and per table structure a snapshot read), Debezium's layout::

    {"source": {"server": "server1"}, "position": {...the connector's offset...},
     "ts_ms": 1700000000123, "databaseName": "ORCLPDB1", "schemaName": "DEBEZIUM",
     "ddl": "CREATE TABLE ...", "tableChanges": [...]}

``position`` is connector-specific (binlog file/pos, SCN); ordering and replay are the connector's
(``mysql.schema_history``, ``oracle.schema_history``). Snapshot records carry ``"snapshot": true``
in their position and the first of a snapshot ``"snapshot_first": true``: a new snapshot
supersedes every record before it. Stores: a local file (``schema.history.internal.file.filename``,
appended and fsync'ed per record), a Kafka topic with exactly one partition
(``schema.history.internal.kafka.topic``; never partitioned, or the order is lost), or memory.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lakecdc.errors import SourceTerminalError

log = logging.getLogger(__name__)


class SchemaHistoryError(SourceTerminalError):
    """The schema history store cannot be read or written as it must be."""


@dataclass(frozen=True)
class HistoryRecord:
    position: dict[str, Any]
    database: str | None
    ddl: str
    table_changes: list[dict[str, Any]] = field(default_factory=list)
    ts_ms: int = 0
    schema: str | None = None  # Oracle, SQL Server: the schema the statement ran in

    @property
    def is_snapshot(self) -> bool:
        return bool(self.position.get("snapshot"))

    def to_json(self, server: str) -> dict[str, Any]:
        return {
            "source": {"server": server},
            "position": self.position,
            "ts_ms": self.ts_ms,
            "databaseName": self.database,
            "schemaName": self.schema,
            "ddl": self.ddl,
            "tableChanges": self.table_changes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HistoryRecord:
        return cls(
            position=dict(data["position"]),
            database=data.get("databaseName"),
            ddl=data["ddl"],
            table_changes=list(data.get("tableChanges") or []),
            ts_ms=int(data.get("ts_ms") or 0),
            schema=data.get("schemaName"),
        )


class HistoryStore(Protocol):
    def append(self, record: HistoryRecord) -> None:
        """Durably store one record before returning."""

    def records(self) -> Iterator[HistoryRecord]: ...

    def exists(self) -> bool: ...

    def close(self) -> None: ...


class MemoryHistoryStore:
    def __init__(self) -> None:
        self._records: list[HistoryRecord] = []

    def append(self, record: HistoryRecord) -> None:
        self._records.append(record)

    def records(self) -> Iterator[HistoryRecord]:
        return iter(list(self._records))

    def exists(self) -> bool:
        return bool(self._records)

    def close(self) -> None:
        pass


class FileHistoryStore:
    """JSON lines, one record per line, fsync'ed after each append (a crash keeps whole lines)."""

    def __init__(self, path: str | Path, server: str, error: type[Exception] = SchemaHistoryError) -> None:
        self.path = Path(path)
        self._error = error
        self.server = server
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = None

    def append(self, record: HistoryRecord) -> None:
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for appends
        self._file.write(json.dumps(record.to_json(self.server), separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def records(self) -> Iterator[HistoryRecord]:
        if not self.path.exists():
            return iter(())
        out = []
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    out.append(HistoryRecord.from_json(json.loads(line)))
                except (json.JSONDecodeError, KeyError) as exc:
                    if not line.endswith("\n"):
                        log.warning("ignoring the unfinished last line of schema history %s", self.path)
                        break
                    raise self._error(f"schema history file {self.path} line {n} is not a history record: {exc}") from exc
        return iter(out)

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class KafkaHistoryStore:
    """A single-partition Kafka topic; created with one partition, and refused if it has more."""

    def __init__(self, bootstrap_servers: str, topic: str, server: str, client_config: dict[str, Any] | None = None,
                 error: type[Exception] = SchemaHistoryError):
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        self.topic = topic
        self.server = server
        self._error = error
        self._config = {"bootstrap.servers": bootstrap_servers, **(client_config or {})}
        admin = AdminClient(self._config)
        metadata = admin.list_topics(timeout=10)
        if topic not in metadata.topics:
            futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                                    config={"cleanup.policy": "delete", "retention.ms": "-1"})])
            for future in futures.values():
                try:
                    future.result(10)
                except Exception as exc:  # already created by a concurrent start
                    if "exist" not in str(exc).lower():
                        raise
        else:
            partitions = len(metadata.topics[topic].partitions)
            if partitions != 1:
                raise self._error(
                    f"schema history topic '{topic}' has {partitions} partitions; it must have exactly 1 "
                    "or the order of DDL statements is lost"
                )
        self._producer = Producer({**self._config, "enable.idempotence": True, "acks": "all", "linger.ms": 0})

    def append(self, record: HistoryRecord) -> None:
        errors: list[str] = []
        self._producer.produce(
            self.topic, key=None, value=json.dumps(record.to_json(self.server), separators=(",", ":")).encode(),
            partition=0, on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )
        self._producer.flush(30)
        if errors:
            raise self._error(f"schema history topic '{self.topic}' rejected a record: {errors[0]}")

    def records(self) -> Iterator[HistoryRecord]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self._config, "group.id": f"lakecdc-history-{self.server}-{time.time_ns()}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        out = []
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)
            consumer.assign([TopicPartition(self.topic, 0, low)])
            idle_polls = 0
            while idle_polls < 5:
                msg = consumer.poll(0.5)
                if msg is None:
                    idle_polls += 1
                    continue
                if msg.error():
                    continue
                idle_polls = 0
                if msg.value():
                    out.append(HistoryRecord.from_json(json.loads(msg.value())))
        finally:
            consumer.close()
        return iter(out)

    def exists(self) -> bool:
        return next(self.records(), None) is not None

    def close(self) -> None:
        self._producer.flush(10)


def open_store(config: Any, error: type[Exception] = SchemaHistoryError) -> HistoryStore:
    """The history store named by the configuration (file, Kafka topic, or memory)."""
    kind = config.schema_history_kind
    server = config.topic_prefix
    if kind == "file":
        return FileHistoryStore(config.schema_history_internal_file_filename, server, error)
    if kind == "kafka":
        bootstrap = config.schema_history_internal_kafka_bootstrap_servers or config.bootstrap_servers
        if not bootstrap:
            raise error("Kafka schema history needs 'schema.history.internal.kafka.bootstrap.servers'")
        return KafkaHistoryStore(bootstrap, config.schema_history_internal_kafka_topic, server, error=error)
    log.warning("no schema history storage configured: table structures are kept in memory only and a "
                "restart needs a new snapshot (set schema.history.internal.file.filename)")
    return MemoryHistoryStore()
