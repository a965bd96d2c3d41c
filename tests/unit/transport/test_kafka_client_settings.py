"""client_settings: one SASL/SSL setting given once reaches every Kafka client capture builds."""

from __future__ import annotations

import pytest

from lakecdc.config.redact import redact
from lakecdc.transport.kafka_config import ROLE_PREFIXES, client_settings, describe, producer_settings

SECRET = "kafka-pa55word-never-logged"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="cdc-user" password="{SECRET}";'


@pytest.fixture
def sasl_properties() -> dict[str, str]:
    return {
        "producer.bootstrap.servers": "broker-1:9096",
        "producer.security.protocol": "SASL_SSL",
        "producer.sasl.mechanism": "PLAIN",
        "producer.sasl.jaas.config": JAAS,
        "producer.ssl.ca.location": "/etc/ssl/ca.pem",
        "producer.linger.ms": "50",
        "producer.transactional.id": "capture-1",
        "consumer.fetch.max.bytes": "1048576",
        "schema.history.internal.consumer.max.poll.records": "10",
    }


@pytest.mark.parametrize("role", sorted(ROLE_PREFIXES))
def test_producer_sasl_reaches_every_role(role: str, sasl_properties: dict[str, str]) -> None:
    settings = client_settings(sasl_properties, role)  # type: ignore[arg-type]
    assert settings["bootstrap.servers"] == "broker-1:9096"
    assert settings["security.protocol"] == "SASL_SSL"
    assert settings["sasl.mechanism"] == "PLAIN"
    assert settings["sasl.username"] == "cdc-user" and settings["sasl.password"] == SECRET
    assert settings["ssl.ca.location"] == "/etc/ssl/ca.pem"
    assert "sasl.jaas.config" not in settings  # translated for librdkafka
    # producer tuning and the transactional id belong to the data producer only: another client with
    # the same transactional.id would fence it
    if role == "producer":
        assert settings["transactional.id"] == "capture-1" and settings["linger.ms"] == "50"
    else:
        assert "transactional.id" not in settings and settings.get("linger.ms") != "50"
    assert SECRET not in describe(settings) and "cdc-user" in describe(settings)
    assert SECRET not in redact(repr(settings))  # registered for redaction once resolved


def test_role_prefixes_layer_over_the_shared_connection(sasl_properties: dict[str, str]) -> None:
    props = {**sasl_properties,
             "schema.history.internal.kafka.bootstrap.servers": "history:9092",
             "schema.history.internal.producer.security.protocol": "SSL",
             "signal.kafka.bootstrap.servers": "signals:9092",
             "admin.request.timeout.ms": "7000"}
    assert client_settings(props, "offsets.consumer")["fetch.max.bytes"] == "1048576"
    history_producer = client_settings(props, "history.producer")
    assert history_producer["bootstrap.servers"] == "history:9092"
    assert history_producer["security.protocol"] == "SSL"  # Debezium's own prefix wins
    assert history_producer["sasl.password"] == SECRET
    # Debezium's KafkaSchemaHistory builds its admin client from the consumer's settings
    assert client_settings(props, "history.admin")["max.poll.records"] == "10"
    assert client_settings(props, "signal.consumer")["bootstrap.servers"] == "signals:9092"
    assert client_settings(props, "admin")["request.timeout.ms"] == "7000"
    assert client_settings(props, "offsets.consumer")["isolation.level"] == "read_committed"


def test_worker_level_settings_reach_internal_clients_and_producer_star_wins_for_data() -> None:
    props = {"bootstrap.servers": "worker:9092", "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "producer.sasl.mechanism": "PLAIN",
             "producer.bootstrap.servers": "data:9092"}
    offsets = client_settings(props, "offsets.producer")
    assert offsets["bootstrap.servers"] == "worker:9092"  # Kafka Connect: the worker's cluster
    assert offsets["sasl.mechanism"] == "SCRAM-SHA-512" and offsets["security.protocol"] == "SASL_SSL"
    data = client_settings(props, "producer")
    assert data["bootstrap.servers"] == "data:9092" and data["sasl.mechanism"] == "PLAIN"
    assert data["security.protocol"] == "SASL_SSL"


def test_producer_settings_keeps_its_contract() -> None:
    settings = producer_settings("b:1", {"acks": "1", "key.serializer": "x"}, transactional_id="t")
    assert settings["acks"] == "1" and settings["transactional.id"] == "t"
    assert settings["enable.idempotence"] is True and "key.serializer" not in settings
