"""MySQL connector configuration: Debezium property names, the example files in conf/, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.registration import coordinator_snapshot_mode, load_mysql_config
from lakecdc.errors import ConfigError

CONF = Path(__file__).resolve().parents[4] / "conf"
BASE = {"topic.prefix": "dbz", "database.user": "cdc", "database.password": "pw"}


@pytest.mark.parametrize("name", ["mysql-connector.properties", "mysql.yaml"])
def test_example_configurations_load(name, monkeypatch):
    monkeypatch.setenv("MYSQL_PASSWORD", "secret-value")
    config = load_mysql_config(CONF / name)
    assert config.connector_type == "mysql"
    assert config.topic_prefix == "dbserver1" and config.database_server_id == 184054
    assert config.table_filter.matches("inventory", "customers")
    assert not config.table_filter.matches("mysql", "user")
    assert config.schema_history_kind == "file" and config.provide_transaction_metadata
    assert config.connection_kwargs()["password"] == "secret-value"
    assert "secret-value" not in repr(config)
    assert config.ignored_properties() == []


def test_defaults_follow_debezium_mysql():
    config = MySqlConnectorConfig.from_properties(BASE)
    assert config.time_precision_mode == "adaptive_time_microseconds"
    assert config.bigint_unsigned_handling_mode == "long"
    assert config.snapshot_locking_mode == "minimal"
    assert config.database_port == 3306 and not config.include_query
    assert config.skipped_operation_codes == frozenset({"t"})


def test_mariadb_connector_class_and_unknown_class():
    config = MySqlConnectorConfig.from_properties({**BASE,
                                                   "connector.class": "io.debezium.connector.mariadb.MariaDbConnector"})
    assert config.connector_type == "mariadb"
    with pytest.raises(ConfigError, match="connector.class"):
        _ = MySqlConnectorConfig.from_properties({**BASE, "connector.class": "com.example.Other"}).connector_type


def test_snapshot_modes_and_their_coordinator_plans():
    for mode, planned in [("initial", "initial"), ("schema_only", "no_data"), ("recovery", "no_data"),
                          ("schema_only_recovery", "no_data"), ("never", "no_data"), ("when_needed", "when_needed"),
                          ("initial_only", "initial_only"), ("always", "always")]:
        config = MySqlConnectorConfig.from_properties({**BASE, "snapshot.mode": mode})
        assert coordinator_snapshot_mode(config) == planned, mode
    with pytest.raises(ConfigError, match="snapshot.mode"):
        MySqlConnectorConfig.from_properties({**BASE, "snapshot.mode": "exported"})


def test_legacy_names_are_accepted():
    config = MySqlConnectorConfig.from_properties(
        {"database.server.name": "legacy", "database.user": "u", "database.whitelist": "inv",
         "database.history.file.filename": "/tmp/h.jsonl"}
    )
    assert config.topic_prefix == "legacy" and config.table_filter.matches("inv", "t")
    assert config.schema_history_kind == "file"


def test_replica_server_id_is_stable_without_database_server_id():
    a = MySqlConnectorConfig.from_properties(BASE).replica_server_id
    b = MySqlConnectorConfig.from_properties(BASE).replica_server_id
    assert a == b and 5400 <= a < 6400
