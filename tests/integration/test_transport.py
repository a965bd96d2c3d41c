"""KafkaSink against the real tansu broker: durable flush, order, topics, transactions, failures."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from shared_paths import SHARED_ROOT

from lakecdc.devstack.broker import Broker, kafka_client_defaults
from lakecdc.errors import SinkDeliveryError, SinkTransientError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import INT32, OPTIONAL_STRING, struct
from lakecdc.transport import make_sink, read_jsonl
from lakecdc.transport.jsonl import change_records_from_jsonl
from lakecdc.transport.kafka import KafkaSink

pytestmark = pytest.mark.integration

GOLDEN = SHARED_ROOT / "conformance/postgres/workload.jsonl"
KEY = struct([("id", INT32)], name="k.Key")
VALUE = struct([("id", INT32), ("note", OPTIONAL_STRING)], name="k.Value", optional=True)


def consume(bootstrap: str, topics: list[str], count: int, timeout_s: float = 30.0,
            isolation: str = "read_committed") -> list[Any]:
    from confluent_kafka import Consumer

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"test-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        **kafka_client_defaults("consumer"),
    })
    consumer.subscribe(topics)
    messages: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
    finally:
        consumer.close()
    return messages


def as_line(message: Any) -> dict[str, Any]:
    return {
        "topic": message.topic(),
        "key": json.loads(message.key()) if message.key() is not None else None,
        "value": json.loads(message.value()) if message.value() is not None else None,
        "headers": [{"key": k, "value": json.loads(v)} for k, v in (message.headers() or [])],
    }


def unique_prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def renamed(records: list[ChangeRecord], prefix: str) -> list[ChangeRecord]:
    from dataclasses import replace

    return [replace(r, topic=prefix + r.topic) for r in records]


def test_debezium_workload_published_in_order_and_acknowledged(broker: Broker) -> None:
    prefix = unique_prefix()
    records = renamed(change_records_from_jsonl(GOLDEN), prefix)
    with KafkaSink(broker.bootstrap_servers, producer_config={"linger.ms": "5"}) as sink:
        sink.send(records[:20])
        sink.send(records[20:])
        sink.flush()
    topics = sorted({r.topic for r in records})
    received = [as_line(m) for m in consume(broker.bootstrap_servers, topics, len(records))]
    expected = [{**{k: v for k, v in r.items() if k != "seq"}, "topic": prefix + r["topic"]}
                for r in read_jsonl(GOLDEN)]
    assert len(received) == len(expected)
    for topic in topics:  # Kafka orders within a partition: compare each topic's sequence
        assert [r for r in received if r["topic"] == topic] == [r for r in expected if r["topic"] == topic]
    assert sum(1 for r in received if r["value"] is None) == 4  # tombstones arrive as Kafka nulls


def test_topics_created_with_debezium_partition_defaults(broker: Broker) -> None:
    from confluent_kafka.admin import AdminClient

    prefix = unique_prefix()
    history = f"{prefix}.schema-history"
    with KafkaSink(broker.bootstrap_servers, topic_partitions=3, single_partition_topics=[history]) as sink:
        sink.send([ChangeRecord(f"{prefix}.data", KEY, {"id": 1}, VALUE, {"id": 1, "note": None})])
        sink.send_raw(history, None, b'{"ddl":"CREATE TABLE t (id int)"}')
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics[f"{prefix}.data"].partitions) == 3
    assert len(metadata.topics[history].partitions) == 1
    with KafkaSink(broker.bootstrap_servers) as sink:  # default: one partition per table topic
        sink.send([ChangeRecord(f"{prefix}.other", KEY, {"id": 2}, VALUE, None)])
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics[f"{prefix}.other"].partitions) == 1


def test_transactional_sink_commits_data_and_offsets_together(broker: Broker) -> None:
    prefix = unique_prefix()
    offsets_topic = f"{prefix}.offsets"
    sink = KafkaSink(broker.bootstrap_servers, transactional_id=f"{prefix}-capture",
                     single_partition_topics=[offsets_topic])
    assert sink.transactional
    sink.send([ChangeRecord(f"{prefix}.data", KEY, {"id": i}, VALUE, {"id": i, "note": "n"}) for i in range(5)])
    sink.send_raw(offsets_topic, b'["cap",{"server":"p"}]', b'{"lsn":123}')
    sink.flush()  # commits the transaction
    sink.send([ChangeRecord(f"{prefix}.data", KEY, {"id": 5}, VALUE, {"id": 5, "note": "second"})])
    sink.close()  # commits the second transaction
    messages = consume(broker.bootstrap_servers, [f"{prefix}.data", offsets_topic], 7)
    data = [json.loads(m.value())["payload"]["id"] for m in messages if m.topic() == f"{prefix}.data"]
    assert data == [0, 1, 2, 3, 4, 5]
    assert [m.value() for m in messages if m.topic() == offsets_topic] == [b'{"lsn":123}']


def test_make_sink_from_connector_config(broker: Broker) -> None:
    from lakecdc.config import CommonConnectorConfig

    prefix = unique_prefix()
    cfg = CommonConnectorConfig.from_properties({
        "topic.prefix": prefix,
        "bootstrap.servers": broker.bootstrap_servers,
        "producer.compression.type": "zstd",
        "value.converter.schemas.enable": "false",
    })
    sink = make_sink("kafka", cfg)
    assert isinstance(sink, KafkaSink)
    sink.send([ChangeRecord(f"{prefix}.t", KEY, {"id": 7}, VALUE, {"id": 7, "note": "z"})])
    sink.close()
    (message,) = consume(broker.bootstrap_servers, [f"{prefix}.t"], 1)
    assert json.loads(message.value()) == {"id": 7, "note": "z"}  # schemas disabled for values
    assert json.loads(message.key())["payload"] == {"id": 7}


def test_flush_raises_naming_the_topic_when_the_broker_is_gone(tmp_path: Path) -> None:
    (tmp_path / "again").mkdir()
    with Broker(base_dir=tmp_path) as own:
        sink = KafkaSink(own.bootstrap_servers, producer_config={"message.timeout.ms": "3000"})
        sink.send([ChangeRecord("lost.public.t", KEY, {"id": 1}, VALUE, {"id": 1, "note": None})])
        sink.flush()  # the broker is up: acknowledged
        own.stop()
        sink.send([ChangeRecord("lost.public.t", KEY, {"id": 2}, VALUE, {"id": 2, "note": None})])
        started = time.monotonic()
        with pytest.raises(SinkTransientError) as info:
            sink.flush()
        assert time.monotonic() - started < 30
        assert "topic 'lost.public.t'" in str(info.value) and "unavailable" in str(info.value)
        assert info.value.failures and info.value.failures[0][0] == "lost.public.t"
        assert info.value.category == "transient"  # the capture reconnects and re-sends
        # The broker comes back empty (tansu keeps memory storage only), so it no longer knows the
        # idempotent producer: librdkafka fails fatally. The sink replaces its producer and says
        # "retry" (the capture re-sends from its last commit); the re-sent records then arrive.
        with Broker(port=own.port, base_dir=tmp_path / "again") as again:
            retry = [ChangeRecord("lost.public.t", KEY, {"id": i}, VALUE, {"id": i, "note": None}) for i in (2, 3)]
            delivered = False
            for _attempt in range(3):
                try:
                    sink.send(retry)
                    sink.flush()
                    delivered = True
                    break
                except SinkTransientError as exc:
                    assert "lost.public.t" in str(exc) or "producer" in str(exc)
            assert delivered
            # Keys 2 and 3 may land in different partitions, and a failed attempt may have delivered
            # one of them already, so the check is that both arrived, not their interleaving.
            arrived: set[int] = set()
            deadline = time.monotonic() + 30
            while arrived != {2, 3} and time.monotonic() < deadline:
                arrived |= {json.loads(m.value())["payload"]["id"]
                            for m in consume(again.bootstrap_servers, ["lost.public.t"], 2, timeout_s=5)}
            assert arrived == {2, 3}
            sink.close()


def test_record_larger_than_the_producer_allows_names_the_topic(broker: Broker) -> None:
    sink = KafkaSink(broker.bootstrap_servers, producer_config={"message.max.bytes": "2000"})
    huge = ChangeRecord(f"{unique_prefix()}.big", KEY, {"id": 1}, VALUE, {"id": 1, "note": "x" * 5000})
    with pytest.raises(SinkDeliveryError, match=r"topic '.*\.big'"):
        sink.send([huge])
    sink.close()


def test_make_sink_transactional_from_producer_properties(broker: Broker) -> None:
    from lakecdc.config import CommonConnectorConfig

    prefix = unique_prefix()
    cfg = CommonConnectorConfig.from_properties({
        "topic.prefix": prefix,
        "producer.bootstrap.servers": broker.bootstrap_servers,
        "producer.transactional.id": f"{prefix}-tx",
        "offset.storage.topic": f"{prefix}.offsets",
    })
    sink = make_sink("kafka", cfg)
    assert isinstance(sink, KafkaSink) and sink.transactional
    sink.send([ChangeRecord(f"{prefix}.t", KEY, {"id": 1}, VALUE, {"id": 1, "note": None})])
    sink.abort()  # nothing since the last flush is kept (tansu still shows aborted records: not asserted)
    sink.send([ChangeRecord(f"{prefix}.t", KEY, {"id": 2}, VALUE, {"id": 2, "note": None})])
    sink.send_raw(f"{prefix}.offsets", b"k", b"v")
    sink.close()
    messages = consume(broker.bootstrap_servers, [f"{prefix}.t", f"{prefix}.offsets"], 2)
    assert any(m.topic() == f"{prefix}.t" and json.loads(m.value())["payload"]["id"] == 2 for m in messages)
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics[f"{prefix}.offsets"].partitions) == 1


def test_checkpoint_settles_once_the_broker_holds_every_record_sent_before_it(broker: Broker) -> None:
    """Commits without flushing (lakecdc.transport.acks): a checkpoint settles only when everything
    sent before it is on the broker; records sent after it do not hold it back."""
    prefix = unique_prefix()
    sink = KafkaSink(broker.bootstrap_servers, topic_partitions=3)
    records = [ChangeRecord(f"{prefix}.t", KEY, {"id": i}, VALUE, {"id": i, "note": None}) for i in range(300)]
    sink.send(records[:200])
    checkpoint = sink.checkpoint()
    assert checkpoint is not None
    sink.send(records[200:])
    deadline = time.monotonic() + 30
    while not sink.settled(checkpoint):
        assert time.monotonic() < deadline, "the checkpoint never settled"
        time.sleep(0.01)
    # settled without a flush: the 200 records before the checkpoint are on the broker (the
    # consumer reads until it has all 300 or 30 s pass: the 100 after it may not be there yet)
    sink._producer.purge()  # nothing not yet sent leaves after this point
    messages = consume(broker.bootstrap_servers, [f"{prefix}.t"], 300, timeout_s=10)
    assert set(range(200)) <= {json.loads(m.key())["payload"]["id"] for m in messages}
    sink._producer.flush(5)
    sink._closed = True  # the purged records report failures that this test does not check


def test_checkpoint_never_settles_when_the_broker_is_gone_and_names_the_topic() -> None:
    from lakecdc.devstack.ports import free_port

    sink = KafkaSink(f"127.0.0.1:{free_port()}", create_topics=False,
                     producer_config={"message.timeout.ms": "1500"})
    sink.send([ChangeRecord("gone.public.t", KEY, {"id": 1}, VALUE, {"id": 1, "note": None})])
    checkpoint = sink.checkpoint()
    assert checkpoint is not None
    deadline = time.monotonic() + 30
    with pytest.raises(SinkTransientError, match="topic 'gone.public.t'"):
        while time.monotonic() < deadline:
            assert not sink.settled(checkpoint)
            time.sleep(0.05)
    sink._closed = True  # nothing to flush into a broker that does not exist


def test_user_asking_for_failure_reports_only_gets_flushing_commits(broker: Broker) -> None:
    sink = KafkaSink(broker.bootstrap_servers, producer_config={"delivery.report.only.error": "true"})
    assert sink.checkpoint() is None  # the coordinator then flushes at each commit
    sink.close()
