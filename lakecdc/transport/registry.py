"""``make_sink(spec)``: capture outputs by name, imported only when used.

Specs (the CLI's ``--sink``):

- ``kafka`` — :class:`~lakecdc.transport.kafka.KafkaSink` on ``bootstrap.servers`` (or
  ``producer.bootstrap.servers``) from the connector configuration;
- ``kafka:HOST:PORT[,HOST:PORT]`` — the same on the given brokers;
- ``jsonl:PATH`` — :class:`~lakecdc.transport.jsonl.JsonlSink` appending to ``PATH``.

A missing optional dependency gives ``pip install 'lakecdc[kafka]'`` in the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lakecdc.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from lakecdc.config.connector import CommonConnectorConfig
    from lakecdc.transport.sink import Sink


def _make_jsonl(target: str, config: CommonConnectorConfig | None, options: dict[str, Any]) -> Sink:
    from lakecdc.transport.jsonl import JsonlSink

    if not target:
        raise ConfigError("sink 'jsonl' needs a path: --sink jsonl:PATH")
    if config is not None:
        options.setdefault("key_schemas_enable", config.key_schemas_enable)
        options.setdefault("value_schemas_enable", config.value_schemas_enable)
    return JsonlSink(target, **options)


def _make_kafka(target: str, config: CommonConnectorConfig | None, options: dict[str, Any]) -> Sink:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("the Kafka sink", "kafka", str(exc)) from None
    from lakecdc.transport.kafka import KafkaSink

    producer = dict(config.producer_properties()) if config is not None else {}
    configured = producer.pop("bootstrap.servers", None)
    bootstrap = target or configured or (config.bootstrap_servers if config else None)
    if not bootstrap:
        raise ConfigError(
            "the Kafka sink needs brokers: set 'bootstrap.servers' in the configuration or use --sink kafka:HOST:PORT",
            "bootstrap.servers",
        )
    if config is not None:
        creation = config.topic_creation_properties()
        partitions = creation.pop("partitions", None)
        replication = creation.pop("replication.factor", None)
        options.setdefault("producer_config", producer)
        options.setdefault("key_schemas_enable", config.key_schemas_enable)
        options.setdefault("value_schemas_enable", config.value_schemas_enable)
        options.setdefault("topic_config", creation)
        if partitions is not None:
            options.setdefault("topic_partitions", _int(partitions, "topic.creation.default.partitions"))
        if replication is not None:
            options.setdefault("topic_replication_factor",
                               _int(replication, "topic.creation.default.replication.factor"))
        single = [t for t in (config.offset_storage_topic, config.schema_history_internal_kafka_topic) if t]
        options.setdefault("single_partition_topics", single)
        from lakecdc.transport.kafka_config import client_settings, connector_kafka_properties, is_connection_setting

        # the worker level's connection settings (unprefixed security.*/sasl.*/ssl.*) reach the producer
        # too, under producer.*, as a Kafka Connect worker's reach its clients
        properties = connector_kafka_properties(config)
        worker = {k: v for k, v in properties.items() if is_connection_setting(k) and k != "bootstrap.servers"}
        options["producer_config"] = {**worker, **options["producer_config"]}
        options.setdefault("admin_config", client_settings(properties, "admin", bootstrap))
    return KafkaSink(bootstrap, **options)


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"invalid value '{value}' for property '{name}': expected an integer", name) from None


SINK_FACTORIES: dict[str, Callable[[str, Any, dict[str, Any]], Sink]] = {
    "jsonl": _make_jsonl,
    "kafka": _make_kafka,
}


def make_sink(spec: str, config: CommonConnectorConfig | None = None, **options: Any) -> Sink:
    """Build the sink named by ``spec`` (``kafka``, ``kafka:BROKERS``, ``jsonl:PATH``).

    ``config`` supplies converter flags, ``producer.*`` and ``topic.creation.default.*``;
    ``options`` are passed to the sink's constructor and win over the configuration.
    """
    kind, _, target = spec.partition(":")
    factory = SINK_FACTORIES.get(kind.strip().lower())
    if factory is None:
        known = ", ".join(f"{k}:PATH" if k == "jsonl" else k for k in SINK_FACTORIES)
        raise ConfigError(f"unknown sink '{spec}': use one of {known}")
    return factory(target.strip(), config, dict(options))
