"""The Kafka signaling channel: ``{"type": ..., "data": {...}}`` messages on ``signal.kafka.topic``.

A message is a signal for this connector only when its key equals ``topic.prefix`` (others are
skipped with a log line), as Debezium's ``KafkaSignalChannel``. The consumer
(``transport/signal_consumer.py``) joins group ``signal.kafka.groupId`` (default ``kafka-signal``)
and reads the topic's partition 0 from the group's committed position (earliest when none); the
channel commits each message once its signal has been handed to the processor.

The channel is polled between batches of the change stream, so a Kafka signal lands between two
WAL messages; an ``execute-snapshot`` then writes its first window to the signal table, which
the source channel's machinery reads back from the WAL (MySQL with ``read.only=true`` writes
nothing: GTIDs bound its windows, ``mysql/read_only.py``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lakecdc.capture.signals import Signal
from lakecdc.transport.signal_consumer import signal_consumer, signal_consumer_settings

log = logging.getLogger(__name__)


class KafkaSignalChannel:
    def __init__(self, topic: str, bootstrap_servers: str, key: str, group_id: str,
                 consumer_settings: dict[str, Any] | None = None) -> None:
        self._topic = topic
        self._key = key
        self._consumer = signal_consumer(topic, bootstrap_servers, group_id, consumer_settings)
        log.info("reading signals from Kafka topic %s (key %s, group %s)", topic, key, group_id)

    @classmethod
    def from_config(cls, config: Any) -> KafkaSignalChannel:
        servers, settings = signal_consumer_settings(config)
        return cls(config.signal_kafka_topic, servers, config.topic_prefix, config.signal_kafka_groupid, settings)

    def poll(self, timeout: float = 0.0, max_messages: int = 100) -> list[Signal]:
        """Signals that arrived since the last call (non-blocking with ``timeout=0``)."""
        out: list[Signal] = []
        messages = self._consumer.consume(max_messages, timeout)
        for message in messages:
            if message.error():
                log.warning("reading signal topic %s: %s", self._topic, message.error())
                continue
            signal = self._parse(message)
            if signal is not None:
                out.append(signal)
        if messages:
            self._consumer.commit(asynchronous=False)
        return out

    def _parse(self, message: Any) -> Signal | None:
        key = message.key().decode("utf-8", "replace") if message.key() is not None else None
        if key != self._key:
            log.info("signal message at offset %s has key %r, not this connector's topic.prefix %r: skipped",
                     message.offset(), key, self._key)
            return None
        try:
            value = json.loads(message.value() or b"")
        except ValueError:
            log.warning("signal message at offset %s is not JSON: skipped", message.offset())
            return None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            log.warning("signal message at offset %s has no type: skipped", message.offset())
            return None
        data = value.get("data") or {}
        if not isinstance(data, dict):
            log.warning("signal message at offset %s: data is not a JSON object: skipped", message.offset())
            return None
        return Signal(str(message.offset()), value["type"], data, "kafka")

    def close(self) -> None:
        self._consumer.close()
