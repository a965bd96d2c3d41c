"""Kafka client settings for every client capture builds, from one set of connector properties.

Debezium users configure the Java Kafka client; librdkafka accepts most of those names unchanged.
This module translates the few that differ and drops the Java-only ones (serializers, JVM buffer
settings):

- ``sasl.jaas.config`` with ``username="..." password="..."`` -> ``sasl.username`` / ``sasl.password``;
- values of password-like keys may be ``env:``/``file:`` references (see :class:`Secret`); every
  resolved value is registered with the log redaction, so it never shows in a log or an error.

Which properties reach which client (:func:`client_settings`), lowest precedence first, as Kafka
Connect and Debezium layer them:

1. lakecdc's defaults for the role (:data:`ROLE_DEFAULTS`);
2. the *connection* settings (``bootstrap.servers``, ``security.*``, ``sasl.*``, ``ssl.*``,
   ``client.dns.lookup``) of ``producer.*``, then of the worker level (unprefixed, as a Kafka
   Connect worker file has them): a SASL/SSL cluster configured once for the data producer is
   reached by the offset store, the schema history and the signal consumer too (in Kafka Connect
   the worker's settings reach its offset store, and users repeat them in ``producer.*``);
3. the role's own prefix, every setting: ``producer.*`` (the data producer), ``consumer.*`` /
   ``admin.*`` (Kafka Connect's other clients, here: the offset store's reader and topic creation),
   ``schema.history.internal.producer.*`` / ``schema.history.internal.consumer.*`` (Debezium's
   KafkaSchemaHistory; its admin client uses the consumer's settings, as Debezium's does),
   ``signal.consumer.*`` (Debezium's KafkaSignalChannel);
4. the role's own brokers (``schema.history.internal.kafka.bootstrap.servers``,
   ``signal.kafka.bootstrap.servers``) when given.

Producer defaults (exactly-once friendly, and what the tansu broker needs)::

    {"acks": "all", "enable.idempotence": true, "compression.type": "lz4", "linger.ms": 20,
     "delivery.report.only.error": false, "queue.buffering.max.kbytes": 32768}
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Literal

from lakecdc.config.redact import register_secret
from lakecdc.config.secret import Secret

log = logging.getLogger(__name__)

PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "compression.type": "lz4",
    # Measured on tansu with 3.5 KB JSON records: linger 10 ms ~20k rec/s, 20 ms ~32k, 50 ms ~36k.
    "linger.ms": 20,
    # Every record's delivery report reaches Python (~1 us each): the capture stores an offset once
    # the records before it are reported, without stopping to flush (lakecdc.transport.acks).
    "delivery.report.only.error": False,
    # The Java producer's buffer.memory default (32 MiB): what is queued and unacknowledged at once
    # is bounded, now that commits no longer wait for the queue to drain; a full queue blocks send.
    "queue.buffering.max.kbytes": 32768,
}

Role = Literal[
    "producer", "admin", "offsets.producer", "offsets.consumer",
    "history.producer", "history.consumer", "history.admin", "signal.consumer",
]

#: the property prefix whose every setting reaches the role's client (step 3 above)
ROLE_PREFIXES: dict[str, tuple[str, ...]] = {
    "producer": ("producer.",),
    "admin": ("admin.",),
    # Kafka Connect's offset store producer is the worker's: acks/idempotence are ours, not producer.*'s
    # (a producer.transactional.id there would fence the data producer).
    "offsets.producer": (),
    "offsets.consumer": ("consumer.",),
    "history.producer": ("schema.history.internal.producer.",),
    "history.consumer": ("schema.history.internal.consumer.",),
    "history.admin": ("schema.history.internal.consumer.",),
    "signal.consumer": ("signal.consumer.",),
}

#: the property naming the role's own brokers, over ``bootstrap.servers`` (step 4)
ROLE_BOOTSTRAP: dict[str, str] = {
    "history.producer": "schema.history.internal.kafka.bootstrap.servers",
    "history.consumer": "schema.history.internal.kafka.bootstrap.servers",
    "history.admin": "schema.history.internal.kafka.bootstrap.servers",
    "signal.consumer": "signal.kafka.bootstrap.servers",
}

_CONSUMER_DEFAULTS: dict[str, Any] = {"enable.auto.commit": False, "auto.offset.reset": "earliest",
                                      "isolation.level": "read_committed", "enable.partition.eof": True}
ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "producer": PRODUCER_DEFAULTS,
    "admin": {},
    # Offsets and DDL are tiny and must be durable before save() returns: no lingering, acks from all.
    "offsets.producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 5},
    "offsets.consumer": _CONSUMER_DEFAULTS,
    "history.producer": {"acks": "all", "enable.idempotence": True, "linger.ms": 0},
    "history.consumer": _CONSUMER_DEFAULTS,
    "history.admin": {},
    "signal.consumer": {"auto.offset.reset": "earliest", "enable.auto.commit": False,
                        "fetch.wait.max.ms": 100, "fetch.min.bytes": 1},
}

_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.")
_CONNECTION_NAMES = frozenset({"bootstrap.servers", "client.dns.lookup", "sasl.jaas.config"})

# Java client settings with no librdkafka meaning; dropping them changes nothing here.
JAVA_ONLY = frozenset(
    {
        "key.serializer", "value.serializer", "key.deserializer", "value.deserializer", "buffer.memory",
        "max.block.ms", "interceptor.classes", "metric.reporters", "metrics.num.samples",
        "metrics.sample.window.ms", "partitioner.class", "ssl.keystore.type", "ssl.truststore.type",
        "sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "security.providers",
        "auto.include.jmx.reporter",
    }
)

_SECRET_WORDS = ("password", "secret", "jaas")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def is_connection_setting(name: str) -> bool:
    """Settings every client of one cluster shares (where and how to connect, credentials)."""
    return name in _CONNECTION_NAMES or name.startswith(_CONNECTION_PREFIXES)


def connection_subset(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The connection settings of librdkafka ``settings`` (as translated: ``sasl.username`` ...)."""
    return {k: v for k, v in settings.items() if is_connection_setting(k)}


def translate(overrides: Mapping[str, str] | None, prefix: str = "") -> dict[str, Any]:
    """Java client names -> librdkafka settings; secrets resolved (and registered for redaction)."""
    settings: dict[str, Any] = {}
    for name, raw in (overrides or {}).items():
        if name in JAVA_ONLY:
            log.info("%s%s is a Java client setting with no effect here; ignored", prefix, name)
            continue
        value = _resolve(name, raw)
        if name == "sasl.jaas.config":
            settings.update(_jaas_to_sasl(value))
            continue
        settings[name] = value
    return settings


def client_settings(properties: Mapping[str, str], role: Role,
                    bootstrap_servers: str | None = None) -> dict[str, Any]:
    """librdkafka settings for ``role``'s client from the connector ``properties`` (all of them,
    prefixed names included, as a Debezium file has them); ``bootstrap_servers`` wins when given."""
    settings: dict[str, Any] = dict(ROLE_DEFAULTS[role])
    if role != "producer":  # the data producer takes all of producer.* below, over the worker's
        producer = _with_prefix(properties, "producer.")
        settings.update(translate({k: v for k, v in producer.items() if is_connection_setting(k)}, "producer."))
    settings.update(translate({k: v for k, v in properties.items() if is_connection_setting(k)}))
    for prefix in ROLE_PREFIXES[role]:
        settings.update(translate(_with_prefix(properties, prefix), prefix))
    own = ROLE_BOOTSTRAP.get(role)
    if own and properties.get(own):
        settings["bootstrap.servers"] = properties[own]
    if bootstrap_servers:
        settings["bootstrap.servers"] = bootstrap_servers
    if role == "producer" and settings.get("transactional.id"):
        settings["enable.idempotence"] = True
    return settings


def producer_settings(bootstrap_servers: str, overrides: Mapping[str, str] | None = None,
                      *, transactional_id: str | None = None) -> dict[str, Any]:
    """The data producer's settings: defaults, then ``overrides`` (``producer.*``, prefix stripped)."""
    properties = {f"producer.{k}": v for k, v in (overrides or {}).items()}
    if transactional_id:
        properties["producer.transactional.id"] = transactional_id
    return client_settings(properties, "producer", bootstrap_servers)


def connector_kafka_properties(config: Any) -> dict[str, str]:
    """The Kafka-related properties of a connector configuration as one flat map (its passthrough
    ``producer.*``/``consumer.*``/... and the modelled broker properties) for :func:`client_settings`."""
    properties = dict(config.passthrough)
    for name in ("bootstrap.servers", "schema.history.internal.kafka.bootstrap.servers",
                 "signal.kafka.bootstrap.servers"):
        value = getattr(config, name.replace(".", "_"), None)
        if value:
            properties[name] = value
    return properties


def describe(settings: Mapping[str, Any]) -> str:
    """``settings`` for a log line or an error: secret values masked, callbacks left out."""
    from lakecdc.config.redact import MASK

    shown = {k: (MASK if any(w in k for w in _SECRET_WORDS) else v) for k, v in settings.items()
             if not callable(v) and k != "logger"}
    return ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))


def _with_prefix(properties: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in properties.items() if k.startswith(prefix)}


def _resolve(name: str, value: str) -> str:
    if any(word in name for word in _SECRET_WORDS):
        return Secret(value).get_secret_value()
    return value


def _jaas_to_sasl(jaas: str) -> dict[str, str]:
    options = {key.lower(): val for key, val in _JAAS_OPTION.findall(jaas)}
    translated = {}
    if "username" in options:
        translated["sasl.username"] = options["username"]
    if "password" in options:
        translated["sasl.password"] = options["password"]
        register_secret(options["password"])
    return translated


def kafka_client_defaults(role: Literal["producer", "consumer"] | None = None) -> dict[str, Any]:
    """confluent-kafka settings every lakecdc client starts from: what the tansu broker of the
    development stack needs, and harmless on a real Kafka.

    - consumers: a short session so a group join takes ~1 s instead of ~23 s; fetches that wait
      at least 100 ms and return as soon as one byte is there;
    - producers: batch for a few ms (tansu is slow with one record per request).
    ``role=None`` returns both sets (librdkafka then logs that the other role's keys are ignored).
    """
    producer = {"linger.ms": 5}
    consumer = {
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "fetch.wait.max.ms": 100,
        "fetch.min.bytes": 1,
    }
    if role == "producer":
        return producer
    if role == "consumer":
        return consumer
    return {**producer, **consumer}
