"""The outbox router's partition placement reaches Kafka: the Kafka sink produces each placed event to
its partition (the real broker), the others where the partitioner puts them."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace
from typing import Any

import pytest

from lakecdc.devstack.broker import Broker, kafka_client_defaults
from lakecdc.transport.kafka import KafkaSink

from .test_outbox import partitioned, router

pytestmark = [pytest.mark.integration]


def consume(bootstrap: str, topic: str, count: int, timeout_s: float = 30.0) -> list[Any]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **kafka_client_defaults("consumer")})
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                messages.append(message)
    finally:
        consumer.close()
    return messages


def placed(shard: int | None, n: int) -> Any:
    record = partitioned(shard)
    return replace(record, value={**record.value, "after": {**record.value["after"], "payload": f'{{"n": {n}}}'}})


def test_placed_events_land_in_their_partition(broker: Broker) -> None:
    topic = f"outbox.event.p{uuid.uuid4().hex[:8]}"
    chain = router(**{"table.fields.additional.placement": "shard:partition", "route.topic.replacement": topic})
    shards = [2, 0, 1, 2, 1]
    events = chain.apply([placed(shard, n) for n, shard in enumerate(shards)])
    assert [e.partition for e in events] == shards
    with KafkaSink(broker.bootstrap_servers, topic_partitions=3) as sink:
        sink.send(events)
        sink.flush()
    received = consume(broker.bootstrap_servers, topic, len(shards))
    where = {json.loads(json.loads(m.value())["payload"])["n"]: m.partition() for m in received}
    assert where == dict(enumerate(shards))
