"""Apache Kafka for the local stack and tests: one KRaft node (broker and controller) from its jars.

The jars come from Maven Central through the bootstrap (``lakecdc.devstack.maven``; set ``kafka`` of
``lakecdc.spark.jar_cache``).
Where tansu (``lakecdc.devstack.broker``) is the fast default, this is the broker that keeps what
Kafka itself promises and tansu does not: ``read_committed`` consumers never see records of aborted
transactions, compaction runs, watermarks are exact. Like every part it has its own ports,
directory (``server.properties``, ``data/``, ``server.log``) and process group; the data directory
is formatted with Kafka's ``StorageTool`` (what ``kafka-storage.sh format`` runs) before the first
start, and a restart keeps the topics.
"""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from typing import Any

from lakecdc.devstack.part import ServicePart
from lakecdc.devstack.ports import free_port, port_is_open
from lakecdc.devstack.process import run_checked
from lakecdc.spark.session import extra_jvm_options

#: small heap: a test broker holds a few topics; Kafka's own scripts default to 1 GB
JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
#: settings for one node (every replication factor 1) that answers tests quickly
BROKER_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    # the log cleaner checks for dirty compacted logs every 15 s by default
    "log.cleaner.backoff.ms": "1000",
}


def kafka_classpath() -> str:
    """The broker's classpath from the jar cache; FileNotFoundError naming the bootstrap if absent
    (``start()`` reports it as the part's start error)."""
    from lakecdc.spark.jar_cache import cached_jars

    jars = cached_jars("kafka")
    if jars is None:
        raise FileNotFoundError("Apache Kafka's jars are not in the jar cache: run scripts/bootstrap.sh "
                                "on a machine that reaches Maven Central (org.apache.kafka:kafka_2.13)")
    return os.pathsep.join(str(jar) for jar in jars)


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 without padding (``kafka-storage random-uuid``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaBroker(ServicePart):
    """Apache Kafka in KRaft mode on its own loopback ports.

    >>> with KafkaBroker() as kafka:                   # doctest: +SKIP
    ...     Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": "t1"})
    """

    part_name = "kafka"

    def __init__(self, port: int | None = None, base_dir: Path | str | None = None,
                 start_timeout: float = 120.0, settings: dict[str, str] | None = None) -> None:
        super().__init__(port=port, base_dir=base_dir, start_timeout=start_timeout)
        self.settings = {**BROKER_SETTINGS, **(settings or {})}
        self.controller_port = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        assert self.root_dir is not None
        return self.root_dir / "server.properties"

    def _prepare(self) -> None:
        assert self.root_dir is not None
        self._classpath = kafka_classpath()
        self.controller_port = free_port()
        settings = {
            **self.settings,
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "log.dirs": str(self.root_dir / "data"),
        }
        self.config_path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        # --cluster-id=ID: a base64 id may start with "-", which argparse would take for an option
        run_checked([*self._java(), "kafka.tools.StorageTool", "format", "--ignore-formatted",
                     f"--cluster-id={new_cluster_id()}", "--config", str(self.config_path)],
                    self.root_dir / "storage-format.log", timeout=120)

    def _java(self) -> list[str]:
        return ["java", *JVM_OPTIONS, *extra_jvm_options(), "-cp", self._classpath]

    def _command(self) -> tuple[list[str], str | None]:
        return [*self._java(), "kafka.Kafka", str(self.config_path)], None

    def _ready(self) -> bool:
        # The listener opens before the node has registered with its controller: ask for metadata.
        if not port_is_open(self.port, self.host):
            return False
        from confluent_kafka.admin import AdminClient

        try:
            metadata = AdminClient({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - KafkaException while the node is still starting
            return False
        return bool(metadata.brokers)

    def _extra_state(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers, "controller_port": self.controller_port}
