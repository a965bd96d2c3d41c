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
  JSON key/value records as Kafka Connect's offsets topic; the last record for a key wins.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

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
    """Offsets in a Kafka topic, as Kafka Connect's distributed mode keeps them."""

    def __init__(self, bootstrap_servers: str, topic: str, client_config: dict[str, Any] | None = None):
        try:
            from confluent_kafka import Consumer, Producer
        except ImportError as exc:  # pragma: no cover - extra missing
            from lakecdc.errors import MissingExtraError

            raise MissingExtraError("the Kafka offset store", "kafka", str(exc)) from exc
        self.topic = topic
        extra = dict(client_config or {})
        self._producer = Producer(
            {"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "linger.ms": 5, **extra}
        )
        self._entries = self._read_all(Consumer, bootstrap_servers, extra)

    def _read_all(self, consumer_cls: Any, bootstrap: str, extra: dict[str, Any]) -> dict[str, Offset]:
        from confluent_kafka import KafkaError, TopicPartition

        consumer = consumer_cls(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"lakecdc-offsets-reader-{os.getpid()}-{time.time_ns()}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                **{k: v for k, v in extra.items() if not k.startswith("linger")},
            }
        )
        entries: dict[str, Offset] = {}
        try:
            metadata = consumer.list_topics(self.topic, timeout=10)
            topic_meta = metadata.topics.get(self.topic)
            if topic_meta is None or topic_meta.error is not None or not topic_meta.partitions:
                return entries  # no offsets stored yet; the first save creates the topic
            partitions = [TopicPartition(self.topic, p, 0) for p in topic_meta.partitions]
            consumer.assign(partitions)
            remaining = {p.partition for p in partitions}
            deadline = time.monotonic() + 30
            # The end is detected by partition EOF, not by watermarks (which some brokers misreport).
            while remaining and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        remaining.discard(msg.partition())
                        continue
                    raise OffsetStoreError(f"reading offsets topic '{self.topic}': {msg.error()}")
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

    def save(self, key: str, offset: Offset) -> None:
        self._entries[key] = offset
        self._produce(key, json.dumps(offset, separators=(",", ":")).encode())

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)
        self._produce(key, None)

    def _produce(self, key: str, value: bytes | None) -> None:
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        self._producer.produce(self.topic, key=key.encode(), value=value, on_delivery=on_delivery)
        left = self._producer.flush(30)
        if left or errors:
            raise OffsetStoreError(
                f"offsets topic '{self.topic}' did not accept the offset: {errors or 'timeout'}"
            )

    def close(self) -> None:
        self._producer.flush(10)


def open_offset_store(properties: dict[str, str], default_dir: Path | None = None) -> OffsetStore:
    """The store Debezium's ``offset.storage`` properties describe.

    ``offset.storage`` = ...FileOffsetBackingStore (default) with ``offset.storage.file.filename``,
    or ...KafkaOffsetBackingStore with ``offset.storage.topic`` and ``bootstrap.servers``.
    """
    storage = properties.get("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore")
    if storage.endswith("KafkaOffsetBackingStore"):
        topic = properties.get("offset.storage.topic")
        bootstrap = properties.get("bootstrap.servers") or properties.get("kafka.bootstrap.servers")
        if not topic or not bootstrap:
            raise ConfigError(
                "offset.storage=KafkaOffsetBackingStore needs offset.storage.topic and bootstrap.servers",
                "offset.storage.topic",
            )
        return KafkaOffsetStore(bootstrap, topic)
    if storage.endswith("FileOffsetBackingStore") or storage in ("file", ""):
        filename = properties.get("offset.storage.file.filename")
        if not filename:
            base = default_dir or Path.cwd()
            filename = str(base / "offsets.json")
            log.info("offset.storage.file.filename not set; storing offsets in %s", filename)
        return FileOffsetStore(filename)
    raise ConfigError(
        f"offset.storage '{storage}' is not supported; use FileOffsetBackingStore or "
        "KafkaOffsetBackingStore",
        "offset.storage",
    )
