"""The Oracle connector's schema history in a single-partition Kafka topic (the local tansu broker):
what ``schema.history.internal.kafka.*`` names is written, read back by a new process and replayed
up to a restart SCN."""

from __future__ import annotations

import uuid

import pytest

from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.ddl.model import OracleTables
from lakecdc.capture.oracle.schema_history import open_history

pytestmark = pytest.mark.integration


def test_oracle_history_topic_round_trip_and_replay(broker):
    topic = f"oracle-history-{uuid.uuid4().hex[:8]}"
    config = OracleConnectorConfig.from_properties({
        "topic.prefix": "server1", "database.hostname": "db", "database.dbname": "ORCLCDB",
        "database.pdb.name": "ORCLPDB1", "schema.history.internal.kafka.topic": topic,
        "schema.history.internal.kafka.bootstrap.servers": broker.bootstrap_servers})
    history = open_history(config)
    assert not history.exists()
    history.record(1000, "ORCLPDB1", "DEBEZIUM", 'CREATE TABLE "DEBEZIUM"."T" ("ID" NUMBER(9,0) NOT NULL, '
                   'PRIMARY KEY ("ID"))', [], snapshot=True, first=True)
    history.record(1010, "ORCLPDB1", "DEBEZIUM", "ALTER TABLE T ADD (V VARCHAR2(5))", [])
    history.record(1020, "ORCLPDB1", "DEBEZIUM", "ALTER TABLE T ADD (W DATE)", [])
    history.close()

    reread = open_history(config)
    records = list(reread.store.records())
    assert [(r.position["scn"], r.schema, r.database) for r in records] == [
        ("1000", "DEBEZIUM", "ORCLPDB1"), ("1010", "DEBEZIUM", "ORCLPDB1"), ("1020", "DEBEZIUM", "ORCLPDB1")]
    tables = OracleTables()
    assert reread.recover(1015, tables) == 2  # the ALTER at 1020 is mined again after the restart
    table = tables.get("DEBEZIUM", "T")
    assert table is not None and [c.name for c in table.columns] == ["ID", "V"]
    assert table.primary_key == ("ID",)
    reread.close()
