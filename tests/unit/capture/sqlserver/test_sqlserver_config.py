"""SQL Server connector properties: Debezium names and defaults, did-you-mean, one database."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.registration import load_sqlserver_config
from lakecdc.errors import ConfigError

REPO = Path(__file__).resolve().parents[4]


def config(**props: str) -> SqlServerConnectorConfig:
    base = {"topic.prefix": "server1", "database.names": "testDB"}
    base.update({k.replace("__", "."): v for k, v in props.items()})
    return SqlServerConnectorConfig.from_properties(base)


def test_defaults_are_debeziums() -> None:
    c = config()
    assert (c.database_port, c.snapshot_mode, c.snapshot_isolation_mode, c.time_precision_mode) == (
        1433, "initial", "repeatable_read", "adaptive")
    assert (c.decimal_handling_mode, c.binary_handling_mode, c.tombstones_on_delete) == ("precise", "bytes", True)
    assert (c.provide_transaction_metadata, c.poll_interval_ms, c.heartbeat_interval_ms) == (False, 500, 0)
    assert c.skipped_operation_codes == frozenset({"t"})
    assert c.database == "testDB"


def test_typo_gets_did_you_mean() -> None:
    with pytest.raises(ConfigError, match="did you mean 'snapshot.isolation.mode'"):
        config(snapshot__isolation__mod="snapshot")


@pytest.mark.parametrize(("prop", "value"), [("snapshot.isolation.mode", "serializable"),
                                             ("snapshot.mode", "never"), ("time.precision.mode", "isostring"),
                                             ("binary.handling.mode", "octal"), ("decimal.handling.mode", "exact")])
def test_invalid_choices_are_refused_naming_the_property(prop: str, value: str) -> None:
    with pytest.raises(ConfigError, match=prop.replace(".", r"\.")):
        SqlServerConnectorConfig.from_properties({"topic.prefix": "s", "database.names": "d", prop: value})


def test_exactly_one_database() -> None:
    with pytest.raises(ConfigError, match="exactly one database"):
        config(database__names="a,b")
    with pytest.raises(ConfigError, match="names no database"):
        SqlServerConnectorConfig.from_properties({"topic.prefix": "s"})
    legacy = SqlServerConnectorConfig.from_properties({"topic.prefix": "s", "database.dbname": "old"})
    assert legacy.database == "old"


def test_include_and_exclude_lists_are_exclusive() -> None:
    with pytest.raises(ConfigError, match="table.include.list"):
        config(table__include__list="dbo.a", table__exclude__list="dbo.b")


def test_read_only_intent_forces_snapshot_isolation() -> None:
    assert config(database__applicationIntent="ReadOnly").effective_isolation_mode == "snapshot"
    assert config(snapshot__mode="schema_only").snapshot_mode_normalized == "no_data"


def test_connection_kwargs_resolve_the_password_only_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSSQL_PASSWORD", "s3cret!")
    c = config(database__password="env:MSSQL_PASSWORD", database__instance="SQLEXPRESS")
    kwargs = c.connection_kwargs()
    assert kwargs["password"] == "s3cret!" and kwargs["server"] == "localhost\\SQLEXPRESS"
    assert "s3cret!" not in repr(c) and "s3cret!" not in c.describe_target()


def test_example_file_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSSQL_PASSWORD", "x")
    c = load_sqlserver_config(REPO / "conf" / "sqlserver-connector.properties")
    assert c.database == "testDB" and c.provide_transaction_metadata
    assert c.table_filter.matches("dbo", "orders") and not c.table_filter.matches("dbo", "secrets")


def test_properties_accepted_but_not_applied_are_listed() -> None:
    c = config(data__query__mode="direct", streaming__fetch__size="100")
    assert c.ignored_properties() == ["data.query.mode", "streaming.fetch.size"]
    assert config().ignored_properties() == []


def test_the_seeds_1_4_example_loads() -> None:
    """Seed 1.4.12's registration (Debezium 1.x names): database.server.name, database.dbname,
    database.history.kafka.*."""
    c = SqlServerConnectorConfig.from_properties({
        "connector.class": "io.debezium.connector.sqlserver.SqlServerConnector", "database.hostname": "192.168.99.100",
        "database.port": "1433", "database.user": "sa", "database.password": "Password!", "database.dbname": "testDB",
        "database.server.name": "fullfillment", "table.include.list": "dbo.customers",
        "database.history.kafka.bootstrap.servers": "kafka:9092",
        "database.history.kafka.topic": "dbhistory.fullfillment"})
    assert (c.topic_prefix, c.database) == ("fullfillment", "testDB")


def test_signal_properties_and_the_signal_table_in_the_filter() -> None:
    c = config(table__include__list="dbo.customers", signal__data__collection="testDB.dbo.debezium_signal",
               incremental__snapshot__chunk__size="2")
    assert (c.signal_table.schema, c.signal_table.table) == ("dbo", "debezium_signal")  # type: ignore[union-attr]
    assert c.signal_channels == ("source",) and c.incremental_snapshot_chunk_size == 2
    # captured though table.include.list leaves it out, as Debezium's RelationalTableFilters
    assert c.table_filter.matches("dbo", "debezium_signal") and not c.table_filter.matches("dbo", "orders")
    with pytest.raises(ConfigError, match="signal.kafka.topic"):
        config(signal__data__collection="testDB.dbo.debezium_signal", signal__enabled__channels="source,kafka")
