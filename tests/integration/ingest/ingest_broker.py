"""Helpers for ingest integration tests: topics and records on the real (tansu) broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from shared_paths import SHARED_ROOT

from lakecdc.devstack.broker import kafka_client_defaults

GOLDEN = SHARED_ROOT / "conformance/postgres/workload.jsonl"


def unique_prefix(label: str) -> str:
    return f"{label}{uuid.uuid4().hex[:8]}"


def golden_records(prefix: str = "dbz") -> list[dict[str, Any]]:
    """The real Debezium records, with their topics moved under ``prefix``."""
    records = [orjson.loads(line) for line in GOLDEN.read_bytes().splitlines() if line.strip()]
    for record in records:
        record["topic"] = prefix + record["topic"][len("dbz"):]
    return records


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, partitions, 1) for t in sorted(set(topics))])
    for future in futures.values():
        future.result(timeout=30)


def publish(bootstrap: str, rows: Iterable[tuple[str, bytes | None, bytes | None]],
            headers: list[tuple[str, bytes]] | None = None) -> int:
    """Produce ``(topic, key, value)`` rows in order (value None = tombstone); returns the count."""
    producer = Producer({"bootstrap.servers": bootstrap, **kafka_client_defaults("producer")})
    n = 0
    for topic, key, value in rows:
        producer.produce(topic, key=key, value=value, headers=headers)
        n += 1
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records not delivered"
    return n


def encode(doc: Any) -> bytes | None:
    return None if doc is None else orjson.dumps(doc)


def publish_records(bootstrap: str, records: list[dict[str, Any]]) -> int:
    return publish(bootstrap, ((r["topic"], encode(r["key"]), encode(r["value"])) for r in records))
