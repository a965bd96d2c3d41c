"""PostgreSQL capture into a Kafka-protocol broker, with offsets in a Kafka topic (Kafka Connect's
KafkaOffsetBackingStore layout); a restart resumes from the offset read back from the broker. With
``producer.transactional.id`` every offset is committed in the transaction of its events."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from confluent_kafka import Consumer, TopicPartition
from pg_capture_support import fresh_database, slot_is_streaming, wait_for, write_properties

from lakecdc.capture.runner import run_capture
from lakecdc.devstack.broker import kafka_client_defaults

pytestmark = pytest.mark.integration


def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 30.0) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{time.time_ns()}",
                         "enable.auto.commit": False, **kafka_client_defaults("consumer")})
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                messages.append(msg)
        # nothing more than expected arrives
        extra = consumer.poll(2.0)
        if extra is not None and not extra.error():
            messages.append(extra)
    finally:
        consumer.close()
    return messages


@pytest.mark.parametrize("transactional", [False, True], ids=["idempotent", "transactional"])
def test_capture_to_kafka_with_kafka_offsets(pg: Any, broker: Any, tmp_path: Path, transactional: bool,
                                             caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG, logger="lakecdc.capture.coordinator")
    dsn = fresh_database(pg, "kafkacap")
    prefix = "dbztx" if transactional else "dbz"  # topics of their own: the session's broker is shared
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items VALUES (1, 'one'), (2, 'two')")
    offsets_topic = f"lakecdc-offsets-{time.time_ns()}"
    config = write_properties(tmp_path / "kafka.properties", pg, "kafkacap", {
        "table.include.list": "public.items", "bootstrap.servers": broker.bootstrap_servers,
        "producer.linger.ms": "5", "topic.prefix": prefix,
        **({"producer.transactional.id": f"kafkacap-{time.time_ns()}"} if transactional else {}),
    })
    text = config.read_text().replace("FileOffsetBackingStore", "KafkaOffsetBackingStore")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("offset.storage.file.filename"))
    config.write_text(text + f"\noffset.storage.topic={offsets_topic}\n")

    def run(workload: str, name: str) -> None:
        errors: list[BaseException] = []

        def target() -> None:
            try:
                run_capture(config, "kafka", stop_when_idle=3.0, show_progress=False)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        wait_for(lambda: slot_is_streaming(dsn, "kafkacap_slot") or not thread.is_alive(), what=f"{name} streaming")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(workload)
        thread.join(120)
        assert not errors, errors

    run("INSERT INTO items VALUES (3, 'three')", "first")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (4, 'four')")  # while stopped
    run("INSERT INTO items VALUES (5, 'five')", "second")

    messages = read_topic(broker.bootstrap_servers, f"{prefix}.public.items", expected=5)
    events = [(json.loads(m.value())["payload"]["op"], json.loads(m.key())["payload"]["id"]) for m in messages]
    assert events == [("r", 1), ("r", 2), ("c", 3), ("c", 4), ("c", 5)]
    headers = dict(messages[0].headers() or [])
    assert json.loads(headers["__debezium.context.connectorLogicalName"])["payload"] == prefix
    stored = read_topic(broker.bootstrap_servers, offsets_topic, expected=1, timeout=10)
    assert json.loads(stored[-1].key()) == [prefix, {"server": prefix}]
    assert "lsn" in json.loads(stored[-1].value())
    in_transaction = [r for r in caplog.records if "in the Kafka transaction of its events" in r.getMessage()]
    # both runs: the snapshot's offset, then streaming commits, each in its events' transaction
    assert bool(in_transaction) == transactional
    if transactional:
        assert len(in_transaction) >= 2
