"""DatabaseSchema: DDL applied and recorded, unparseable DDL of databases that are not captured."""

from __future__ import annotations

import pytest

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.ddl.cursor import DdlParseError
from lakecdc.capture.mysql.schema_history import MemoryHistoryStore, SchemaHistory
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.topics import TopicNamer

POS = {"file": "binlog.000001", "pos": 100}


def schema(**props: str) -> DatabaseSchema:
    config = MySqlConnectorConfig.from_properties(
        {"topic.prefix": "dbz", "database.user": "u", "database.include.list": "shop", **props})
    return DatabaseSchema(config, TypeModes(), TopicNamer("dbz", "mysql"), SchemaHistory(MemoryHistoryStore()))


def test_every_ddl_is_recorded_and_structures_of_all_databases_are_kept():
    s = schema()
    s.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY)", "shop", POS, "binlog.000001:100")
    s.apply_ddl("CREATE TABLE o (id INT PRIMARY KEY)", "other", POS, "binlog.000001:200")
    assert [r.ddl for r in s.history.store.records()] == ["CREATE TABLE t (id INT PRIMARY KEY)",
                                                          "CREATE TABLE o (id INT PRIMARY KEY)"]
    assert s.factory("shop", "t") is not None and s.factory("other", "o") is None
    assert s.structure("other", "o") is not None


def test_store_only_captured_tables_ddl():
    s = schema(**{"schema.history.internal.store.only.captured.tables.ddl": "true"})
    s.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY)", "shop", POS, "binlog.000001:100")
    s.apply_ddl("CREATE TABLE o (id INT PRIMARY KEY)", "other", POS, "binlog.000001:200")
    assert [r.ddl for r in s.history.store.records()] == ["CREATE TABLE t (id INT PRIMARY KEY)"]


def test_unparseable_ddl_stops_for_captured_databases_and_is_skipped_for_others():
    s = schema()
    s.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY)", "shop", POS, "binlog.000001:100")
    with pytest.raises(DdlParseError, match="binlog.000001:300"):
        s.apply_ddl("ALTER TABLE t ADD c VARCHAR2(10)", "shop", POS, "binlog.000001:300")
    # session database not captured, no captured database named: skipped
    assert s.apply_ddl("ALTER TABLE x ADD c VARCHAR2(10)", "other", POS, "binlog.000001:400") == []
    # session database not captured, but the statement names a captured one: still an error
    with pytest.raises(DdlParseError):
        s.apply_ddl("ALTER TABLE shop.t ADD c VARCHAR2(10)", "other", POS, "binlog.000001:500")
    skipping = schema(**{"schema.history.internal.skip.unparseable.ddl": "true"})
    assert skipping.apply_ddl("ALTER TABLE t ADD c VARCHAR2(10)", "shop", POS, "binlog.000001:300") == []


def test_alter_of_an_unknown_table_is_ignored_only_when_it_is_not_captured():
    # a session in a captured database altering another database's table nobody recorded (Debezium's
    # AlterTableParserListener ignores it): skipped, not a stop of the capture
    s = schema()
    assert s.apply_ddl("ALTER TABLE other.x ADD COLUMN note VARCHAR(5)", "shop", POS, "binlog.000001:600") == []
    assert list(s.history.store.records()) == []
    with pytest.raises(DdlParseError, match="'shop.y', whose structure is not known.*binlog|binlog.000001:700"):
        s.apply_ddl("ALTER TABLE y ADD COLUMN note VARCHAR(5)", "shop", POS, "binlog.000001:700")
