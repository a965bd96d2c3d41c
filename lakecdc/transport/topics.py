"""Creating the topics capture writes to, the way Debezium's topic auto-creation does.

Data, transaction and heartbeat topics get ``topic.creation.default.partitions`` partitions (1
unless configured, Debezium's default) and the broker's replication factor; schema history and
offsets topics always get exactly one partition (ordering is their whole point). Topics that
exist are left alone. Each topic is checked once per process; the check happens on the first
record for it, never per record.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from lakecdc.errors import SinkTransientError, TopicCreationError

log = logging.getLogger(__name__)


class TopicCreator:
    """Ensures topics exist through a confluent-kafka ``AdminClient``.

    ``single_partition_topics`` (schema history, offsets) always get one partition.
    """

    def __init__(self, admin_config: Mapping[str, Any], *, partitions: int = 1, replication_factor: int = -1,
                 topic_config: Mapping[str, str] | None = None,
                 single_partition_topics: Iterable[str] = (), timeout_s: float = 30.0) -> None:
        from confluent_kafka.admin import AdminClient

        # librdkafka otherwise prints its own log lines on stderr, unredacted. (confluent-kafka takes a
        # logging.Logger for "logger"; its stub types config values as str | int | float only.)
        logger = logging.getLogger("lakecdc.transport.librdkafka")
        self._admin = AdminClient({**admin_config, "logger": logger})  # type: ignore[dict-item]
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.topic_config = dict(topic_config or {})
        self.single_partition_topics = set(single_partition_topics)
        self.timeout_s = timeout_s
        self._known: set[str] = set()

    def ensure(self, topics: Iterable[str]) -> None:
        """Create every topic of ``topics`` that does not exist yet."""
        missing = {t for t in topics if t not in self._known}
        if not missing:
            return
        existing = self._existing(missing)
        self._known |= existing
        to_create = sorted(missing - existing)
        if to_create:
            self._create(to_create)
            self._known.update(to_create)

    def _existing(self, topics: set[str]) -> set[str]:
        from confluent_kafka import KafkaException

        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise SinkTransientError(f"cannot list Kafka topics: {exc.args[0].str()}") from exc
        return {t for t in topics if t in metadata.topics and metadata.topics[t].error is None}

    def _create(self, topics: list[str]) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        new_topics = [
            NewTopic(
                topic,
                num_partitions=1 if self._single(topic) else self.partitions,
                replication_factor=self.replication_factor,
                config=dict(self.topic_config),
            )
            for topic in topics
        ]
        futures = self._admin.create_topics(new_topics, operation_timeout=self.timeout_s,
                                            request_timeout=self.timeout_s)
        for topic, future in futures.items():
            try:
                future.result()
                log.info("created Kafka topic %s", topic)
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue  # another process created it first: fine
                message = f"cannot create Kafka topic '{topic}': {error.str()}"
                if error.retriable():
                    raise SinkTransientError(message) from exc
                raise TopicCreationError(message) from exc

    def _single(self, topic: str) -> bool:
        return topic in self.single_partition_topics
