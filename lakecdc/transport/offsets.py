"""Where a capture stores its source position between runs.

Both stores keep Kafka Connect's key/value shape, so a Debezium user recognises them: the key is
the JSON array ``[connector name, source partition]`` and the value the connector's offset map::

    key   ["inventory-connector", {"server": "dbz"}]
    value {"lsn_proc": 99100312, "lsn_commit": 99099792, "lsn": 99100312, "txId": 1271,
           "ts_usec": 1795336045083801}

- ``FileOffsetStore``: the file named by ``offset.storage.file.filename``. Kafka Connect's own
  FileOffsetBackingStore writes Java-serialized maps; lakecdc writes the same key/value pairs as a
  JSON object ``{key JSON text: value}`` instead, replaced atomically (write a temporary file,
  fsync, rename) so a crash leaves either the old or the new offset, never half of one.
- ``KafkaOffsetStore``: a compacted Kafka topic (``offset.storage.topic``) holding the same
  JSON key/value records as Kafka Connect's offsets topic; the last record for a key wins. With a
  transactional producer the capture writes the offset record itself, in the transaction of the
  events it covers (:meth:`KafkaOffsetStore.record`, ``capture/coordinator.py``).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lakecdc.config.redact import redact
from lakecdc.errors import ConfigError, SourceTerminalError

log = logging.getLogger(__name__)

Offset = dict[str, Any]


def offset_key(connector_name: str, partition: dict[str, Any]) -> str:
    """The Kafka Connect offset key text: ``["name",{"server":"dbz"}]`` (compact JSON)."""
    return json.dumps([connector_name, partition], separators=(",", ":"))


class OffsetStore(Protocol):
    def load(self, key: str) -> Offset | None: ...

    def save(self, key: str, offset: Offset) -> None:
        """Durably store ``offset`` under ``key`` before returning."""

    def delete(self, key: str) -> None: ...

    def close(self) -> None: ...


class OffsetStoreError(SourceTerminalError):
    """The stored offsets cannot be read or written."""


class FileOffsetStore:
    """Offsets in one local JSON file, replaced atomically on every save."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._entries: dict[str, Offset] = self._read()

    def _read(self) -> dict[str, Offset]:
        if not self.path.exists():
            return {}
        try:
            text = self.path.read_text(encoding="utf-8")
            if not text.strip():
                return {}
            data = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise OffsetStoreError(
                f"offset file {self.path} is not lakecdc's JSON offset format ({exc}); a Kafka "
                "Connect FileOffsetBackingStore file (Java serialization) cannot be read - "
                "point offset.storage.file.filename at a new file"
            ) from exc
        if not isinstance(data, dict):
            raise OffsetStoreError(f"offset file {self.path} does not hold a JSON object")
        return data

    def load(self, key: str) -> Offset | None:
        return self._entries.get(key)

    def save(self, key: str, offset: Offset) -> None:
        self._entries[key] = offset
        self._write()

    def delete(self, key: str) -> None:
        if self._entries.pop(key, None) is not None:
            self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self._entries, fh, separators=(",", ":"))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        pass


class KafkaOffsetStore:
    """Offsets in a Kafka topic, as Kafka Connect's KafkaOffsetBackingStore keeps them.

    The topic is created at open, as Kafka Connect's worker creates it: compacted
    (``cleanup.policy=compact``: the last record of a key is kept forever, whatever the retention),
    ``offset.storage.partitions`` partitions and ``offset.storage.replication.factor`` replicas (-1:
    the broker's ``default.replication.factor``). An existing topic that is not compacted is refused
    (Kafka Connect refuses it too: time-based retention would delete a stopped connector's offset).
    A key goes to the partition Kafka's Java partitioner gives it (murmur2), whichever producer
    writes it: this store's own, or the capture's transactional producer (:meth:`record`).
    """

    def __init__(self, bootstrap_servers: str | None, topic: str, client_config: dict[str, Any] | None = None, *,
                 properties: Mapping[str, str] | None = None, partitions: int = 1,
                 replication_factor: int = -1) -> None:
        """``properties``: the connector's properties, for :func:`client_settings` (each client gets
        the connection settings of ``producer.*`` and the worker level, the reader ``consumer.*``,
        topic creation ``admin.*``); ``client_config``: librdkafka settings added to every client."""
        try:
            from confluent_kafka import Producer
        except ImportError as exc:  # pragma: no cover - extra missing
            from lakecdc.errors import MissingExtraError

            raise MissingExtraError("the Kafka offset store", "kafka", str(exc)) from exc
        from lakecdc.transport.kafka_config import client_settings, describe

        self.topic = topic
        props = dict(properties or {})
        extra = dict(client_config or {})
        #: the librdkafka settings each client is built with, by role (kept for ``describe`` and tests)
        self.settings: dict[str, dict[str, Any]] = {}
        for role in ("producer", "consumer", "admin"):
            built = client_settings(props, f"offsets.{role}" if role != "admin" else "admin",  # type: ignore[arg-type]
                                    bootstrap_servers)
            built.update(extra)
            if not built.get("bootstrap.servers"):
                raise ConfigError("Kafka offset storage needs 'bootstrap.servers'", "bootstrap.servers")
            self.settings[role] = built
            log.debug("offset store %s settings: %s", role, describe(built))
        self.bootstrap_servers = self.settings["producer"]["bootstrap.servers"]
        self.partitions = self._ensure_topic(partitions, replication_factor)
        self._producer = _client(Producer, self.settings["producer"], "producer")
        self._entries = self._read_all()

    @classmethod
    def from_config(cls, config: Any) -> KafkaOffsetStore:
        """The store ``offset.storage.*`` and the connector's Kafka client properties describe."""
        from lakecdc.transport.kafka_config import connector_kafka_properties

        return cls(None, config.offset_storage_topic, properties=connector_kafka_properties(config),
                   partitions=config.offset_storage_partitions,
                   replication_factor=config.offset_storage_replication_factor)

    def _ensure_topic(self, partitions: int, replication_factor: int) -> int:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

        admin = _client(AdminClient, self.settings["admin"], "admin")
        try:
            # all topics: a Metadata request naming the topic makes some brokers auto-create it
            existing = admin.list_topics(timeout=30).topics.get(self.topic)
        except KafkaException as exc:
            raise OffsetStoreError(f"cannot reach Kafka for offsets topic '{self.topic}': "
                                   f"{redact(exc.args[0].str())}") from None
        if existing is None or existing.error is not None or not existing.partitions:
            topic = NewTopic(self.topic, num_partitions=partitions, replication_factor=replication_factor,
                             config=dict(OFFSETS_TOPIC_CONFIG))
            future = admin.create_topics([topic], operation_timeout=30)[self.topic]
            try:
                future.result()
                log.info("created offsets topic %s (%d partitions, compacted)", self.topic, partitions)
                return partitions
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise OffsetStoreError(f"cannot create offsets topic '{self.topic}': "
                                           f"{redact(exc.args[0].str())}") from None
            existing = admin.list_topics(timeout=30).topics[self.topic]
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.topic)
        try:
            configs = admin.describe_configs([resource])[resource].result(timeout=30)
        except KafkaException as exc:  # no DescribeConfigs permission: the topic is taken as it is
            log.warning("cannot check the cleanup.policy of offsets topic %s: %s", self.topic,
                        redact(exc.args[0].str()))
            return len(existing.partitions)
        policy = configs["cleanup.policy"].value if "cleanup.policy" in configs else "compact"
        if {p.strip() for p in (policy or "").split(",")} != {"compact"}:
            raise OffsetStoreError(
                f"offsets topic '{self.topic}' (offset.storage.topic) has cleanup.policy={policy}; it must be "
                "'compact' so that no offset is ever deleted by retention (as Kafka Connect requires). Change it "
                f"with: kafka-configs --alter --entity-type topics --entity-name {self.topic} "
                "--add-config cleanup.policy=compact")
        return len(existing.partitions)

    def _read_all(self) -> dict[str, Offset]:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = _client(Consumer, {**self.settings["consumer"],
                                      "group.id": f"lakecdc-offsets-reader-{os.getpid()}-{time.time_ns()}"},
                           "consumer")
        entries: dict[str, Offset] = {}
        try:
            partitions = [TopicPartition(self.topic, p, 0) for p in range(self.partitions)]
            consumer.assign(partitions)
            remaining = {p.partition for p in partitions}
            deadline = time.monotonic() + 30
            # The end is detected by partition EOF, not by watermarks (which some brokers misreport).
            # read_committed: offsets of aborted transactions are never read back (real Kafka).
            while remaining and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        remaining.discard(msg.partition())
                        continue
                    raise OffsetStoreError(f"reading offsets topic '{self.topic}': {redact(str(msg.error()))}")
                key = msg.key().decode() if msg.key() else None
                if key is None:
                    continue
                value = msg.value()
                if value is None:
                    entries.pop(key, None)
                else:
                    entries[key] = json.loads(value)
            if remaining:
                raise OffsetStoreError(f"timed out reading offsets topic '{self.topic}'")
        finally:
            consumer.close()
        return entries

    def load(self, key: str) -> Offset | None:
        return self._entries.get(key)

    def record(self, key: str, offset: Offset | None) -> OffsetRecord:
        """The Kafka record storing ``offset`` (None: a tombstone) under ``key``, for a producer
        that writes it in the same transaction as the events it covers; then :meth:`remember`."""
        value = None if offset is None else json.dumps(offset, separators=(",", ":")).encode()
        raw = key.encode()
        return OffsetRecord(self.topic, raw, value, java_partition(raw, self.partitions))

    def remember(self, key: str, offset: Offset) -> None:
        """``offset`` is stored (its record's transaction committed): loads return it from now on."""
        self._entries[key] = offset

    def save(self, key: str, offset: Offset) -> None:
        self._produce(self.record(key, offset))
        self._entries[key] = offset

    def delete(self, key: str) -> None:
        self._produce(self.record(key, None))
        self._entries.pop(key, None)

    def _produce(self, record: OffsetRecord) -> None:
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        self._producer.produce(record.topic, key=record.key, value=record.value, partition=record.partition,
                               on_delivery=on_delivery)
        left = self._producer.flush(30)
        if left or errors:
            raise OffsetStoreError(
                f"offsets topic '{self.topic}' did not accept the offset: {redact(str(errors or 'timeout'))}"
            )

    def close(self) -> None:
        self._producer.flush(10)


#: Kafka Connect's offsets topic configuration (the worker adds it to every topic it creates)
OFFSETS_TOPIC_CONFIG = {"cleanup.policy": "compact"}


@dataclass(frozen=True)
class OffsetRecord:
    topic: str
    key: bytes
    value: bytes | None
    partition: int


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's Java producer picks for ``key`` (``Utils.toPositive(murmur2(key)) % n``),
    so records written by Kafka Connect, by this store and by the capture's producer agree."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as an unsigned 32-bit value."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def _client(cls: Any, settings: dict[str, Any], role: str) -> Any:
    """A confluent-kafka client; a setting librdkafka refuses is a ConfigError, secrets masked."""
    from confluent_kafka import KafkaException

    try:
        return cls({**settings, "logger": logging.getLogger("lakecdc.transport.librdkafka")})
    except KafkaException as exc:
        raise ConfigError(f"invalid Kafka {role} setting for the offset store: {redact(exc.args[0].str())}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid Kafka {role} setting for the offset store: {redact(str(exc))}") from None


def offsets_file(config: Any, config_path: Path) -> Path | None:
    """The file a connector's offsets live in (None: a Kafka topic): ``offset.storage.file.filename``,
    or for memory storage a file beside the configuration. Debezium's MemoryOffsetBackingStore
    forgets everything at exit; lakecdc keeps that file instead so a restart resumes."""
    kind = config.offset_storage_kind
    if kind == "kafka":
        return None
    if kind == "file":
        return Path(config.offset_storage_file_filename)
    return config_path.with_name(config_path.stem + ".offsets.json")


def open_offsets(config: Any, config_path: Path) -> OffsetStore:
    """The offset store a connector configuration's ``offset.storage.*`` names (``config_path``: the
    configuration's own file, beside which memory storage is kept)."""
    file = offsets_file(config, config_path)
    if file is None:
        return KafkaOffsetStore.from_config(config)
    if config.offset_storage_kind != "file":
        log.info("no offset storage configured; keeping offsets in %s", file)
    return FileOffsetStore(file)
