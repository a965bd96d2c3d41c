"""Offsets committed in the Kafka transaction of their events (DESIGN.md §2.7), on real brokers.

What Kafka itself promises (a ``read_committed`` reader never sees an aborted or unfinished
transaction) needs real Apache Kafka: those tests use the ``kafka_broker`` fixture and are skipped
with that reason where it does not exist. tansu returns aborted records to ``read_committed``
consumers (ENVIRONMENT.md), so on tansu only what does not depend on that is tested: the offset goes
through the transactional producer and a restart reads it back.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.devstack.broker import Broker
from lakecdc.transport.kafka import KafkaSink
from lakecdc.transport.offsets import KafkaOffsetStore, offset_key

pytestmark = pytest.mark.integration

CONNECTOR = textwrap.dedent('''
    from typing import Any

    from lakecdc.capture.postgres.offset import snapshot_completed
    from lakecdc.capture.spi import SnapshotResult
    from lakecdc.events.envelope import ChangeRecord
    from lakecdc.events.schema import INT32, struct

    KEY = struct([("id", INT32)], name="k.Key")
    VALUE = struct([("id", INT32)], name="k.Value", optional=True)


    class Snapshot:
        def __init__(self, topic: str, rows: int) -> None:
            self.topic, self.rows = topic, rows

        def run(self, emit: Any) -> SnapshotResult:
            for i in range(0, self.rows, 10):
                emit([ChangeRecord(self.topic, KEY, {"id": n}, VALUE, {"id": n}) for n in range(i, i + 10)])
            return SnapshotResult({"lsn": 90, "snapshot": True, "last_snapshot_record": True}, self.rows, 1)


    class Stream:
        def start(self, offset: Any) -> None: self.offset = offset
        def poll(self, out: list, max_records: int, timeout: float) -> None: pass
        def committable_offset(self) -> None: return None
        def acknowledge(self, offset: Any) -> None: pass
        def idle_seconds(self) -> float: return 60.0
        def close(self) -> None: pass


    class Connector:
        name = "txtest"
        partition = {"server": "tx"}

        def __init__(self, topic: str, rows: int) -> None:
            self.topic, self.rows = topic, rows

        def snapshot_source(self, stored: Any) -> Snapshot: return Snapshot(self.topic, self.rows)
        def streaming_source(self) -> Stream: return Stream()
        def offset_has_completed_snapshot(self, stored: Any) -> bool: return snapshot_completed(stored)
        def can_resume_streaming(self, stored: Any) -> bool: return True
        def close(self) -> None: pass
''')

KILLED_CAPTURE = textwrap.dedent('''
    import os, signal, sys
    sys.path.insert(0, sys.argv[4])
    from scripted import Connector
    from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
    from lakecdc.transport.offsets import KafkaOffsetStore
    from lakecdc.transport.kafka import KafkaSink

    class KilledBeforeCommit(KafkaSink):
        def flush(self) -> None:
            self._producer.flush(30)  # events and offset are on the broker, in the open transaction
            os.kill(os.getpid(), signal.SIGKILL)

    bootstrap, prefix, txid = sys.argv[1:4]
    sink = KilledBeforeCommit(bootstrap, transactional_id=txid)
    store = KafkaOffsetStore(bootstrap, prefix + ".offsets")
    CaptureCoordinator(Connector(prefix + ".data", 30), sink, store, CoordinatorSettings(stop_when_idle_s=0.0)).run()
''')


@pytest.fixture
def scripted(tmp_path: Path) -> Path:
    (tmp_path / "scripted.py").write_text(CONNECTOR)
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("scripted", None)


def real_kafka(request: pytest.FixtureRequest) -> Any:
    try:
        return request.getfixturevalue("kafka_broker")
    except pytest.FixtureLookupError:
        pytest.skip("needs the kafka_broker fixture (real Apache Kafka): tansu returns aborted records to "
                    "read_committed consumers, so invisibility cannot be checked on it")


def committed(bootstrap: str, topics: list[str], wait_s: float = 10.0) -> list[Any]:
    from confluent_kafka import Consumer

    from lakecdc.devstack.broker import kafka_client_defaults

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         **kafka_client_defaults("consumer")})
    consumer.subscribe(topics)
    import time

    messages: list[Any] = []
    deadline = time.monotonic() + wait_s
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    return messages


def capture(bootstrap: str, prefix: str, rows: int, **settings: Any) -> tuple[CaptureCoordinator, KafkaOffsetStore]:
    from scripted import Connector  # type: ignore[import-not-found]

    sink = KafkaSink(bootstrap, transactional_id=f"{prefix}-capture")
    store = KafkaOffsetStore(bootstrap, f"{prefix}.offsets")
    coordinator = CaptureCoordinator(Connector(f"{prefix}.data", rows), sink, store,
                                     CoordinatorSettings(stop_when_idle_s=0.0, **settings))
    coordinator.run()
    sink.close()
    store.close()
    return coordinator, store


def test_offset_goes_through_the_transactional_producer_and_is_read_back(broker: Broker, scripted: Path) -> None:
    prefix = f"x{uuid.uuid4().hex[:8]}"
    coordinator, _ = capture(broker.bootstrap_servers, prefix, 40, max_unflushed_records=20)
    assert coordinator._offsets_in_transaction  # same cluster, transactional: one transaction per commit
    key = offset_key("txtest", {"server": "tx"})
    assert KafkaOffsetStore(broker.bootstrap_servers, f"{prefix}.offsets").load(key)["last_snapshot_record"]
    messages = committed(broker.bootstrap_servers, [f"{prefix}.data", f"{prefix}.offsets"], wait_s=5)
    assert sum(m.topic() == f"{prefix}.data" for m in messages) == 40
    # two in-progress commits (20 records each), then the snapshot's own offset
    assert sum(m.topic() == f"{prefix}.offsets" for m in messages) == coordinator.stats.commits == 3


def test_kill_between_sends_and_commit_leaves_neither_events_nor_offset(request: pytest.FixtureRequest,
                                                                         scripted: Path) -> None:
    kafka = real_kafka(request)
    prefix = f"k{uuid.uuid4().hex[:8]}"
    script = scripted / "killed.py"
    script.write_text(KILLED_CAPTURE)
    done = subprocess.run([sys.executable, str(script), kafka.bootstrap_servers, prefix, f"{prefix}-capture",
                           str(scripted)], timeout=120, capture_output=True)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    # the restarted capture's producer (same transactional.id) fences the dead one: its open
    # transaction is aborted, never committed
    KafkaSink(kafka.bootstrap_servers, transactional_id=f"{prefix}-capture").close()
    assert committed(kafka.bootstrap_servers, [f"{prefix}.data", f"{prefix}.offsets"]) == []
    key = offset_key("txtest", {"server": "tx"})
    assert KafkaOffsetStore(kafka.bootstrap_servers, f"{prefix}.offsets").load(key) is None
    # and the restart then commits both together
    capture(kafka.bootstrap_servers, prefix, 30)
    messages = committed(kafka.bootstrap_servers, [f"{prefix}.data", f"{prefix}.offsets"])
    assert sorted(int(m.key().decode().split('"id":')[1].rstrip("}")) for m in messages
                  if m.topic() == f"{prefix}.data") == list(range(30))
    assert KafkaOffsetStore(kafka.bootstrap_servers, f"{prefix}.offsets").load(key)["lsn"] == 90


def test_aborted_commit_is_invisible_to_read_committed(request: pytest.FixtureRequest) -> None:
    from lakecdc.events.envelope import ChangeRecord
    from lakecdc.events.schema import INT32, struct

    kafka = real_kafka(request)
    prefix = f"a{uuid.uuid4().hex[:8]}"
    key_schema = struct([("id", INT32)], name="k.Key")
    store = KafkaOffsetStore(kafka.bootstrap_servers, f"{prefix}.offsets")
    sink = KafkaSink(kafka.bootstrap_servers, transactional_id=f"{prefix}-capture")
    sink.send([ChangeRecord(f"{prefix}.data", key_schema, {"id": 1}, key_schema, {"id": 1})])
    record = store.record("k", {"lsn": 1})
    sink.send_raw(record.topic, record.key, record.value, partition=record.partition)
    sink.abort()
    sink.close()
    assert committed(kafka.bootstrap_servers, [f"{prefix}.data", f"{prefix}.offsets"]) == []
    assert KafkaOffsetStore(kafka.bootstrap_servers, f"{prefix}.offsets").load("k") is None
