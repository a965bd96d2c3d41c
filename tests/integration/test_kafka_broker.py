"""What Apache Kafka itself promises, on the local stack's real Kafka (``kafka_broker``, KRaft).

tansu (the fast default broker) returns aborted transactions' records to ``read_committed``
consumers and never compacts (see ENVIRONMENT.md); these are the guarantees lakecdc's transactional
offsets and compacted offset topics rely on, checked where they hold.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from lakecdc.devstack.broker import kafka_client_defaults
from lakecdc.devstack.errors import PartStartError
from lakecdc.devstack.kafka import KafkaBroker

pytestmark = pytest.mark.integration


def create_topic(servers: str, name: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": servers})  # kept alive until the result arrives
    futures = admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1, config=config or {})])
    futures[name].result(timeout=60)


def consumer(servers: str, group: str, **extra: Any) -> Consumer:
    return Consumer({"bootstrap.servers": servers, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **kafka_client_defaults("consumer"), **extra})


def read_all(c: Consumer, topic: str, expected_end: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every data record up to the partition's end (control records are skipped)."""
    c.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[int, bytes]] = []
    idle = 0
    while idle < 20:
        message = c.poll(0.5)
        if message is None:
            idle += 1
            position = c.position([TopicPartition(topic, 0)])[0].offset
            if position >= expected_end:
                break
            continue
        assert message.error() is None, message.error()
        seen.append((message.offset(), message.value()))
    return seen


def test_read_committed_hides_records_of_aborted_transactions(kafka_broker: KafkaBroker) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = f"tx-{uuid.uuid4().hex[:8]}"
    create_topic(servers, topic)
    producer = Producer({"bootstrap.servers": servers, "transactional.id": f"lakecdc-{topic}",
                         **kafka_client_defaults("producer")})
    producer.init_transactions(60)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2", b"a3"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
    watermarks = consumer(servers, "wm")
    low, high = watermarks.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    watermarks.close()
    # 6 data records and 3 transaction markers (commit, abort, commit)
    assert (low, high) == (0, 9)
    committed = consumer(servers, f"rc-{topic}", **{"isolation.level": "read_committed"})
    uncommitted = consumer(servers, f"ru-{topic}", **{"isolation.level": "read_uncommitted"})
    try:
        assert [v for _, v in read_all(committed, topic, high)] == [b"c1", b"c2", b"c3"]
        assert [v for _, v in read_all(uncommitted, topic, high)] == [b"c1", b"c2", b"a1", b"a2", b"a3", b"c3"]
    finally:
        committed.close()
        uncommitted.close()


def test_offsets_sent_in_an_aborted_transaction_are_not_committed(kafka_broker: KafkaBroker) -> None:
    servers = kafka_broker.bootstrap_servers
    topic, group = f"off-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(servers, topic)
    plain = Producer({"bootstrap.servers": servers, **kafka_client_defaults("producer")})
    for n in range(5):
        plain.produce(topic, str(n).encode())
    plain.flush(30)
    reader = consumer(servers, group)
    reader.assign([TopicPartition(topic, 0)])  # not a group member: its offsets commit with generation -1
    try:
        producer = Producer({"bootstrap.servers": servers, "transactional.id": f"lakecdc-{group}",
                             **kafka_client_defaults("producer")})
        producer.init_transactions(60)
        for offset, commit in ((3, True), (5, False)):
            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)],
                                                 reader.consumer_group_metadata(), 60)
            (producer.commit_transaction if commit else producer.abort_transaction)(60)
        assert reader.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 3
    finally:
        reader.close()
    # a new member of the group resumes where the committed transaction left it
    resumed = consumer(servers, group)
    resumed.subscribe([topic])
    try:
        first = None
        for _ in range(60):
            first = resumed.poll(1.0)
            if first is not None:
                break
        assert first is not None and first.error() is None
        assert (first.offset(), first.value()) == (3, b"3")
    finally:
        resumed.close()


def test_consumer_offsets_commit_and_reset_per_group(kafka_broker: KafkaBroker) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = f"grp-{uuid.uuid4().hex[:8]}"
    create_topic(servers, topic)
    one, other = consumer(servers, f"one-{topic}"), consumer(servers, f"other-{topic}")
    try:
        one.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        assert one.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 7
        # another group has its own (none yet: OFFSET_INVALID, -1001)
        assert other.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == -1001
        one.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        assert one.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 2
    finally:
        one.close()
        other.close()


def test_compacted_topic_config_is_accepted_and_described_back(kafka_broker: KafkaBroker) -> None:
    servers = kafka_broker.bootstrap_servers
    topic = f"compact-{uuid.uuid4().hex[:8]}"
    create_topic(servers, topic, {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"})
    admin = AdminClient({"bootstrap.servers": servers})
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    config = next(iter(described.values())).result(timeout=30)
    assert config["cleanup.policy"].value == "compact"
    assert config["min.compaction.lag.ms"].value == "0"
    # Kafka validates topic configs (tansu accepts anything): a wrong policy is refused
    bad = admin.create_topics([NewTopic(f"{topic}-bad", 1, 1, config={"cleanup.policy": "shred"})])
    with pytest.raises(KafkaException, match="(?i)invalid"):
        next(iter(bad.values())).result(timeout=30)


def test_a_kafka_that_cannot_start_names_itself_and_its_log() -> None:
    from lakecdc.devstack.maven import cached_jars

    if cached_jars("kafka") is None:
        pytest.skip("Apache Kafka's jars are not in the jar cache (scripts/bootstrap.sh fetches them)")
    with pytest.raises(PartStartError) as raised:
        KafkaBroker(settings={"node.id": "not-a-number"}, start_timeout=60).start()
    error = raised.value
    assert error.part == "kafka" and error.log_path is not None and error.log_path.exists()
    assert "Invalid value not-a-number" in error.log_path.read_text(errors="replace")
    assert str(error.log_path) in str(error)
    error.log_path.unlink()


def test_without_the_jars_the_start_error_names_the_bootstrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECDC_JAR_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(PartStartError, match=r"^kafka failed to start: .*jar cache: run scripts/bootstrap.sh"):
        KafkaBroker().start()
