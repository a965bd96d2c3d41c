"""The Kafka consumer of the signaling channel (``capture/signal_kafka.py`` reads signals from it).

As Debezium's ``KafkaSignalChannel``: the consumer joins group ``signal.kafka.groupId`` and reads
partition 0 of ``signal.kafka.topic`` (one ordered stream of signals, no group rebalancing to wait
for) from the group's committed position. Brokers: ``signal.kafka.bootstrap.servers``, else
``bootstrap.servers``; ``signal.consumer.*`` properties go to the consumer, over the connection
settings (SASL/SSL) of ``producer.*`` and the worker level (``kafka_config.client_settings``).
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.errors import ConfigError
from lakecdc.transport.kafka_config import client_settings, connector_kafka_properties


def signal_consumer_settings(config: Any) -> tuple[str, dict[str, Any]]:
    """The brokers and the librdkafka settings (without them) of a connector's signal consumer."""
    # signal.consumer.* over the connection settings of producer.* and the worker level
    settings = client_settings(connector_kafka_properties(config), "signal.consumer")
    servers = settings.pop("bootstrap.servers", None)
    if not servers:
        raise ConfigError("the kafka signaling channel needs signal.kafka.bootstrap.servers (or bootstrap.servers)",
                          "signal.kafka.bootstrap.servers")
    return servers, settings


def signal_consumer(topic: str, bootstrap_servers: str, group_id: str,
                    consumer_settings: dict[str, Any] | None = None) -> Any:
    """A confluent-kafka ``Consumer`` in ``group_id``, assigned partition 0 of ``topic``."""
    from confluent_kafka import Consumer, TopicPartition

    settings = client_settings({}, "signal.consumer", bootstrap_servers)
    settings.update(consumer_settings or {})
    settings["group.id"] = group_id
    consumer = Consumer({**settings, "logger": logging.getLogger("lakecdc.transport.librdkafka")})
    consumer.assign([TopicPartition(topic, 0)])
    return consumer
