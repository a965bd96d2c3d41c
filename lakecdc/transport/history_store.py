"""Schema history stores shared by the connectors that keep one (MySQL/MariaDB, Oracle).

One record per DDL statement (and per table structure a snapshot read), Debezium's layout::

    {"source": {"server": "server1"}, "position": {...the connector's offset...},
     "ts_ms": 1700000000123, "databaseName": "ORCLPDB1", "schemaName": "DEBEZIUM",
     "ddl": "CREATE TABLE ...", "tableChanges": [...]}

``position`` is connector-specific (binlog file/pos, SCN); ordering and replay are the connector's
(``capture/mysql/schema_history.py``, ``capture/oracle/schema_history.py``). Snapshot records carry ``"snapshot": true``
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from lakecdc.config.redact import redact
from lakecdc.errors import SourceTerminalError

log = logging.getLogger(__name__)


#: Debezium's KafkaSchemaHistory topic settings: DDL records are never deleted
HISTORY_TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(2**63 - 1), "retention.bytes": "-1"}
#: lakecdc's own (Debezium takes the broker's default.replication.factor and has no property)
REPLICATION_FACTOR_PROPERTY = "schema.history.internal.kafka.replication.factor"


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
        self._file: TextIO | None = None

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
                    raise self._error(f"schema history file {self.path} line {n} is not a history record: "
                                      f"{exc}") from exc
        return iter(out)

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class KafkaHistoryStore:
    """A single-partition Kafka topic; created with one partition, and refused if it has more.

    Created as Debezium's KafkaSchemaHistory creates it: one partition, ``cleanup.policy=delete``
    with ``retention.ms`` = Long.MAX_VALUE and ``retention.bytes=-1`` (never deleted), and the broker's
    default replication factor (``replication_factor=-1``; lakecdc also takes
    ``schema.history.internal.kafka.replication.factor``, which Debezium does not have). Clients get
    :func:`client_settings`: ``schema.history.internal.producer.*`` / ``.consumer.*`` (the admin
    client the consumer's, as Debezium), over the connection settings of ``producer.*`` and the
    worker level, so a SASL/SSL cluster configured once works here too.
    """

    def __init__(self, bootstrap_servers: str | None, topic: str, server: str,
                 client_config: dict[str, Any] | None = None, error: type[Exception] = SchemaHistoryError, *,
                 properties: Mapping[str, str] | None = None, replication_factor: int = -1):
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        from lakecdc.transport.kafka_config import client_settings, describe

        self.topic = topic
        self.server = server
        self._error = error
        props = dict(properties or {})
        #: the librdkafka settings each client is built with, by role
        self.settings: dict[str, dict[str, Any]] = {}
        for role in ("producer", "consumer", "admin"):
            built = client_settings(props, f"history.{role}", bootstrap_servers)  # type: ignore[arg-type]
            built.update(client_config or {})
            if not built.get("bootstrap.servers"):
                raise error("Kafka schema history needs 'schema.history.internal.kafka.bootstrap.servers'")
            self.settings[role] = built
            log.debug("schema history %s settings: %s", role, describe(built))
        admin = self._client(AdminClient, "admin")
        self._ensure_topic(admin, replication_factor)
        self._producer = self._client(Producer, "producer")

    @classmethod
    def from_config(cls, config: Any, error: type[Exception] = SchemaHistoryError) -> KafkaHistoryStore:
        from lakecdc.transport.kafka_config import connector_kafka_properties

        properties = connector_kafka_properties(config)
        factor = properties.get(REPLICATION_FACTOR_PROPERTY, "-1")
        try:
            replication = int(factor)
        except ValueError:
            raise error(f"invalid value '{factor}' for property '{REPLICATION_FACTOR_PROPERTY}': expected an "
                        "integer (-1: the broker's default.replication.factor)") from None
        return cls(None, config.schema_history_internal_kafka_topic, config.topic_prefix, error=error,
                   properties=properties, replication_factor=replication)

    def _client(self, cls: Any, role: str) -> Any:
        from confluent_kafka import KafkaException

        try:
            return cls({**self.settings[role], "logger": logging.getLogger("lakecdc.transport.librdkafka")})
        except (KafkaException, ValueError, TypeError) as exc:
            detail = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
            raise self._error(f"invalid Kafka {role} setting for the schema history: {redact(detail)}") from None

    def _ensure_topic(self, admin: Any, replication_factor: int) -> None:
        from confluent_kafka.admin import NewTopic

        metadata = admin.list_topics(timeout=30)
        if self.topic not in metadata.topics:
            futures = admin.create_topics([NewTopic(self.topic, num_partitions=1, replication_factor=replication_factor,
                                                    config=dict(HISTORY_TOPIC_CONFIG))])
            for future in futures.values():
                try:
                    future.result(30)
                    log.info("created schema history topic %s", self.topic)
                except Exception as exc:  # already created by a concurrent start
                    if "exist" not in str(exc).lower():
                        raise self._error(f"cannot create schema history topic '{self.topic}': "
                                          f"{redact(str(exc))}") from None
        else:
            partitions = len(metadata.topics[self.topic].partitions)
            if partitions != 1:
                raise self._error(
                    f"schema history topic '{self.topic}' has {partitions} partitions; it must have exactly 1 "
                    "or the order of DDL statements is lost"
                )

    def append(self, record: HistoryRecord) -> None:
        errors: list[str] = []
        self._producer.produce(
            self.topic, key=None, value=json.dumps(record.to_json(self.server), separators=(",", ":")).encode(),
            partition=0, on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )
        self._producer.flush(30)
        if errors:
            raise self._error(f"schema history topic '{self.topic}' rejected a record: {redact(errors[0])}")

    def records(self) -> Iterator[HistoryRecord]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.settings["consumer"], "enable.partition.eof": False,
                             "group.id": f"lakecdc-history-{self.server}-{time.time_ns()}",
                             "logger": logging.getLogger("lakecdc.transport.librdkafka")})
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
                value = msg.value()
                if value:
                    out.append(HistoryRecord.from_json(json.loads(value)))
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
        return KafkaHistoryStore.from_config(config, error)
    log.warning("no schema history storage configured: table structures are kept in memory only and a "
                "restart needs a new snapshot (set schema.history.internal.file.filename)")
    return MemoryHistoryStore()
