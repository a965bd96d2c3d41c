"""Property names Debezium files carry that belong to Kafka Connect or Debezium's JVM runtime.

``CommonConnectorConfig`` accepts and keeps them so that a Debezium ``.properties`` file loads
unchanged; names in ``NOT_APPLIED_*`` are reported by ``ignored_properties()`` because setting
them changes Debezium's behaviour in a way lakecdc does not reproduce (plug-in classes). Kafka
Connect transforms (``transforms*``, ``predicates*``) are accepted here and applied by
``lakecdc.transforms``.
Also the storage class names of ``offset.storage`` / ``schema.history.internal``.
"""

from __future__ import annotations

from typing import Literal

OffsetStorageKind = Literal["file", "kafka", "memory"]
OFFSET_STORES: dict[str, OffsetStorageKind] = {
    "file": "file",
    "kafka": "kafka",
    "memory": "memory",
    "org.apache.kafka.connect.storage.FileOffsetBackingStore": "file",
    "org.apache.kafka.connect.storage.KafkaOffsetBackingStore": "kafka",
    "org.apache.kafka.connect.storage.MemoryOffsetBackingStore": "memory",
}
HISTORY_STORES: dict[str, OffsetStorageKind] = {
    "file": "file",
    "kafka": "kafka",
    "memory": "memory",
    "io.debezium.storage.file.history.FileSchemaHistory": "file",
    "io.debezium.storage.kafka.history.KafkaSchemaHistory": "kafka",
    "io.debezium.relational.history.MemorySchemaHistory": "memory",
}

# Accepted because Debezium files carry them; lakecdc does not apply them (see ignored_properties):
# plug-in classes and integrations of the JVM runtime.
NOT_APPLIED_NAMES = frozenset(
    {
        "converters", "post.processors", "topic.naming.strategy",
        "transaction.metadata.factory", "sourceinfo.struct.maker", "memory.management.schemas.class",
        "memory.management.tables.class", "guardrail.collections.max", "guardrail.collections.limit.action",
        "snapshot.mode.custom.name", "snapshot.locking.mode.custom.name", "snapshot.query.mode.custom.name",
        # Old names Debezium 3.6 still defines but no longer uses for topic names (checked against
        # its SchemaTopicNamingStrategy): topic.heartbeat.prefix and topic.transaction decide.
        "heartbeat.topics.prefix", "transaction.topic",
        # Debezium's embedded engine only (no_effect.KAFKA_CONNECT says why)
        "errors.retry.delay.initial.ms",
    }
)
# errors.deadletterqueue.*: Kafka Connect's dead letter queue, which a source connector has not
NOT_APPLIED_PREFIXES = ("openlineage.", "errors.deadletterqueue.")
# Kafka Connect single message transforms and predicates: applied by lakecdc.transforms, validated
# when the configuration loads (CommonConnectorConfig.transform_chain).
TRANSFORM_NAMES = frozenset({"transforms", "predicates"})
TRANSFORM_PREFIXES = ("transforms.", "predicates.")
# Debezium and Kafka Connect settings that tune the JVM runtime (timeouts, metrics, threads):
# meaningful there, kept here so a Debezium file loads unchanged.
RUNTIME_NAMES = frozenset(
    {
        "connector.class", "tasks.max", "header.converter", "header.converter.schemas.enable",
        "offset.flush.timeout.ms", "offset.commit.policy", "config.action.reload",
        "custom.metric.tags", "snapshot.tables.order.by.row.count", "topic.cache.size",
        "snapshot.max.threads.multiplier",
        "connection.validation.timeout.ms", "custom.sanitize.pattern", "executor.shutdown.timeout.ms",
        "include.schema.comments", "incremental.snapshot.watermarking.strategy", "legacy.snapshot.max.threads",
        "statistics.metrics.enabled",
    }
)
# Kafka Connect's error handling (ConnectorConfig's errors.*, applied by lakecdc.transforms.errors; the
# dead letter queue's names of SinkConnectorConfig, accepted without effect): listed by name, not by the
# errors. prefix, so that a misspelt one is refused with the closest name instead of silently ignored.
ERROR_HANDLING_NAMES = frozenset(
    {
        "errors.tolerance", "errors.log.enable", "errors.log.include.messages", "errors.retry.timeout",
        "errors.retry.delay.max.ms", "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.topic.replication.factor", "errors.deadletterqueue.context.headers.enable",
    }
)
KAFKA_CONNECT_NAMES = RUNTIME_NAMES | NOT_APPLIED_NAMES | TRANSFORM_NAMES | ERROR_HANDLING_NAMES
KAFKA_CONNECT_PREFIXES = (
    "database.", "driver.", "producer.", "consumer.", "admin.", "signal.", "notification.",
    "key.converter.", "value.converter.", "header.converter.", "offset.storage.",
    "schema.history.internal.", "topic.creation.", "internal.", "metrics.",
    "snapshot.mode.configuration.based.", *NOT_APPLIED_PREFIXES, *TRANSFORM_PREFIXES,
)
