"""Offset store and schema history on the real local broker: client settings, topic creation.

Kafka Connect creates its offsets topic compacted with ``offset.storage.partitions`` partitions;
Debezium's KafkaSchemaHistory creates one partition kept forever. The configs are read back with
``describe_configs``. A SASL/SSL setting given once in ``producer.*`` reaches every client: here
``producer.bootstrap.servers`` and ``producer.security.protocol=PLAINTEXT`` are the only connection
settings, so the stores work only if they got them.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from lakecdc.config import CommonConnectorConfig
from lakecdc.devstack.broker import Broker
from lakecdc.transport.history_store import HistoryRecord, KafkaHistoryStore, SchemaHistoryError
from lakecdc.transport.offsets import KafkaOffsetStore, OffsetStoreError, java_partition

pytestmark = pytest.mark.integration

SECRET = "offsets-pa55word-not-in-logs"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="cdc" password="{SECRET}";'


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def partitions(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30).topics[topic].partitions)


def config_for(broker: Broker, prefix: str, **extra: str) -> CommonConnectorConfig:
    return CommonConnectorConfig.from_properties({
        "topic.prefix": prefix,
        "producer.bootstrap.servers": broker.bootstrap_servers,  # no top-level bootstrap.servers
        "producer.security.protocol": "PLAINTEXT",
        "producer.sasl.mechanism": "PLAIN",
        "producer.sasl.jaas.config": JAAS,
        "offset.storage.topic": f"{prefix}.offsets",
        "offset.storage.partitions": "3",
        "offset.storage.replication.factor": "-1",
        "schema.history.internal.kafka.topic": f"{prefix}.history",
        **extra,
    })


def test_offsets_topic_compacted_with_configured_partitions_and_producer_settings(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    prefix = f"s{uuid.uuid4().hex[:8]}"
    cfg = config_for(broker, prefix)
    caplog.set_level(logging.DEBUG)
    store = KafkaOffsetStore.from_config(cfg)
    for role in ("producer", "consumer", "admin"):
        built = store.settings[role]
        assert built["bootstrap.servers"] == broker.bootstrap_servers
        assert built["security.protocol"] == "PLAINTEXT" and built["sasl.password"] == SECRET
    assert topic_config(broker.bootstrap_servers, f"{prefix}.offsets")["cleanup.policy"] == "compact"
    assert partitions(broker.bootstrap_servers, f"{prefix}.offsets") == 3
    keys = [f'["conn-{i}",{{"server":"{prefix}"}}]' for i in range(12)]
    for i, key in enumerate(keys):
        store.save(key, {"lsn": i})
    store.close()
    reread = KafkaOffsetStore.from_config(cfg)  # reads every partition back
    assert [reread.load(k) for k in keys] == [{"lsn": i} for i in range(12)]
    assert {java_partition(k.encode(), 3) for k in keys} == {0, 1, 2}
    assert SECRET not in caplog.text


def test_offset_partitions_agree_with_kafkas_java_partitioner(broker: Broker) -> None:
    """librdkafka's ``murmur2`` partitioner is the Java client's: the store's choice must equal it."""
    from confluent_kafka import Producer

    prefix = f"p{uuid.uuid4().hex[:8]}"
    store = KafkaOffsetStore(broker.bootstrap_servers, f"{prefix}.offsets", partitions=4)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2", "linger.ms": 5})
    keys = [f"key-{i}".encode() for i in range(20)]
    delivered: dict[bytes, int] = {}
    for key in keys:
        producer.produce(f"{prefix}.offsets", b"{}", key,
                         on_delivery=lambda err, msg: delivered.__setitem__(msg.key(), msg.partition()))
    producer.flush(30)
    assert delivered == {key: java_partition(key, 4) for key in keys}
    store.close()


def test_existing_offsets_topic_that_is_not_compacted_is_refused(broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"d{uuid.uuid4().hex[:8]}.offsets"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, -1, config={"cleanup.policy": "delete"})])[topic].result(30)
    with pytest.raises(OffsetStoreError, match=r"cleanup.policy=delete.*compact"):
        KafkaOffsetStore(broker.bootstrap_servers, topic)


def test_history_topic_one_partition_kept_forever_with_producer_settings(broker: Broker) -> None:
    prefix = f"h{uuid.uuid4().hex[:8]}"
    cfg = config_for(broker, prefix)
    store = KafkaHistoryStore.from_config(cfg)
    for role in ("producer", "consumer", "admin"):
        assert store.settings[role]["bootstrap.servers"] == broker.bootstrap_servers
        assert store.settings[role]["sasl.username"] == "cdc"
    configs = topic_config(broker.bootstrap_servers, f"{prefix}.history")
    assert configs["cleanup.policy"] == "delete"
    assert configs["retention.ms"] == str(2**63 - 1) and configs["retention.bytes"] == "-1"
    assert partitions(broker.bootstrap_servers, f"{prefix}.history") == 1
    store.append(HistoryRecord({"scn": "1", "snapshot": True}, "DB", "CREATE TABLE t (id NUMBER)"))
    store.close()
    assert [r.ddl for r in KafkaHistoryStore.from_config(cfg).records()] == ["CREATE TABLE t (id NUMBER)"]


def test_replication_factors_are_configurable(broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient

    prefix = f"r{uuid.uuid4().hex[:8]}"
    cfg = config_for(broker, prefix, **{"schema.history.internal.kafka.replication.factor": "2",
                                        "offset.storage.replication.factor": "3"})
    KafkaHistoryStore.from_config(cfg).close()
    KafkaOffsetStore.from_config(cfg).close()
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=30).topics
    # tansu (one broker) reports the replica count it was asked for; a real cluster would place them
    assert len(topics[f"{prefix}.history"].partitions[0].replicas) == 2
    assert {len(p.replicas) for p in topics[f"{prefix}.offsets"].partitions.values()} == {3}
    default = config_for(broker, f"{prefix}d")  # -1: the broker's default.replication.factor (1 here)
    KafkaHistoryStore.from_config(default).close()
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=30).topics
    assert len(topics[f"{prefix}d.history"].partitions[0].replicas) == 1
    with pytest.raises(SchemaHistoryError, match="expected an integer"):
        KafkaHistoryStore.from_config(config_for(broker, prefix, **{
            "schema.history.internal.kafka.replication.factor": "three"}))


def test_signal_channel_gets_the_producer_connection_settings(broker: Broker) -> None:
    from lakecdc.capture.signal_kafka import KafkaSignalChannel
    from lakecdc.config.signaling import SignalingConnectorConfig

    prefix = f"g{uuid.uuid4().hex[:8]}"
    built: list[dict[str, Any]] = []
    original = KafkaSignalChannel.__init__

    def recording(self: Any, topic: str, servers: str, key: str, group: str, settings: Any = None) -> None:
        built.append({"bootstrap.servers": servers, **(settings or {})})
        original(self, topic, servers, key, group, settings)

    KafkaSignalChannel.__init__ = recording  # type: ignore[method-assign]
    try:
        cfg = SignalingConnectorConfig.from_properties({
            "topic.prefix": prefix, "producer.bootstrap.servers": broker.bootstrap_servers,
            "producer.security.protocol": "PLAINTEXT", "signal.enabled.channels": "kafka",
            "signal.kafka.topic": f"{prefix}.signals", "signal.consumer.client.id": "sig",
            "signal.data.collection": "public.debezium_signal"})
        channel = KafkaSignalChannel.from_config(cfg)
        assert channel.poll(0.5) == []
        channel.close()
    finally:
        KafkaSignalChannel.__init__ = original  # type: ignore[method-assign]
    assert built[0]["bootstrap.servers"] == broker.bootstrap_servers
    assert built[0]["security.protocol"] == "PLAINTEXT" and built[0]["client.id"] == "sig"


def test_topic_configs_on_real_kafka(request: pytest.FixtureRequest) -> None:
    """The same configs as Apache Kafka reports them (tansu only echoes what it was given)."""
    try:
        kafka = request.getfixturevalue("kafka_broker")
    except pytest.FixtureLookupError:
        pytest.skip("needs the kafka_broker fixture (real Apache Kafka)")
    prefix = f"k{uuid.uuid4().hex[:8]}"
    cfg = CommonConnectorConfig.from_properties({
        "topic.prefix": prefix, "bootstrap.servers": kafka.bootstrap_servers,
        "offset.storage.topic": f"{prefix}.offsets", "offset.storage.partitions": "5",
        "schema.history.internal.kafka.topic": f"{prefix}.history"})
    KafkaOffsetStore.from_config(cfg).close()
    KafkaHistoryStore.from_config(cfg).close()
    offsets = topic_config(kafka.bootstrap_servers, f"{prefix}.offsets")
    history = topic_config(kafka.bootstrap_servers, f"{prefix}.history")
    assert offsets["cleanup.policy"] == "compact" and partitions(kafka.bootstrap_servers, f"{prefix}.offsets") == 5
    assert history["cleanup.policy"] == "delete" and history["retention.ms"] == str(2**63 - 1)
    assert history["retention.bytes"] == "-1" and partitions(kafka.bootstrap_servers, f"{prefix}.history") == 1
