"""Schema history in a single-partition Kafka topic (the local tansu broker)."""

from __future__ import annotations

import uuid

import pytest

from lakecdc.capture.mysql.ddl.model import TableId
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.errors import MySqlSetupError
from lakecdc.capture.mysql.schema_history import HistoryRecord, KafkaHistoryStore, SchemaHistory

pytestmark = pytest.mark.integration


def test_history_topic_round_trip_and_replay(broker):
    topic = f"schema-history-{uuid.uuid4().hex[:8]}"
    store = KafkaHistoryStore(broker.bootstrap_servers, topic, "dbz")
    history = SchemaHistory(store)
    assert not history.exists()
    pos = {"file": "binlog.000001", "server_id": 1}
    history.record({**pos, "pos": 100, "snapshot": True, "snapshot_first": True}, "inv", "CREATE DATABASE inv")
    history.record({**pos, "pos": 100, "snapshot": True}, "inv", "CREATE TABLE t (id INT PRIMARY KEY)")
    history.record({**pos, "pos": 200}, "inv", "ALTER TABLE t ADD COLUMN v INT")
    history.record({**pos, "pos": 300}, "inv", "ALTER TABLE t ADD COLUMN w INT")
    store.close()
    # a new process reads the topic back in order
    reread = SchemaHistory(KafkaHistoryStore(broker.bootstrap_servers, topic, "dbz"))
    records = list(reread.store.records())
    assert [r.ddl for r in records] == ["CREATE DATABASE inv", "CREATE TABLE t (id INT PRIMARY KEY)",
                                        "ALTER TABLE t ADD COLUMN v INT", "ALTER TABLE t ADD COLUMN w INT"]
    assert isinstance(records[0], HistoryRecord) and records[0].is_snapshot
    # replay stops before the restart position: at 300 the second ALTER is not applied yet
    tables = Tables()
    assert reread.recover("binlog.000001", 300, tables) == 3
    assert [c.name for c in tables.get(TableId("inv", "t")).columns] == ["id", "v"]


def test_history_topic_with_more_than_one_partition_is_refused(broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"schema-history-multi-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).values():
        future.result(10)
    with pytest.raises(MySqlSetupError, match="3 partitions; it must have exactly 1"):
        KafkaHistoryStore(broker.bootstrap_servers, topic, "dbz")
