"""Signal parsing and dispatch (lakecdc/capture/signals.py); the PostgreSQL channel and the
incremental snapshot are tested on a real server in tests/integration/capture/postgres."""

from __future__ import annotations

import logging

import pytest

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.signals import Signal, SignalProcessor, parse_channels, parse_table_id, signal_from_row
from lakecdc.errors import ConfigError
from lakecdc.events.topics import TableId


def test_table_ids_with_quotes_and_default_schema() -> None:
    assert parse_table_id("public.debezium_signal") == TableId(None, "public", "debezium_signal")
    assert parse_table_id('"public"."My.Table"') == TableId(None, "public", "My.Table")
    assert parse_table_id("signals") == TableId(None, "public", "signals")
    with pytest.raises(ConfigError):
        parse_table_id('"public.x')


def test_rows_become_signals_by_position() -> None:
    row = {"id": "a", "type": "log", "data": '{"message": "hi"}'}
    assert signal_from_row(row) == Signal("a", "log", {"message": "hi"})
    assert signal_from_row({"k": "b", "t": "pause-snapshot", "d": None}) == Signal("b", "pause-snapshot", {})
    assert signal_from_row({"id": "c", "type": "log", "data": "{not json"}) is None
    assert signal_from_row({"id": "c", "type": "log"}) is None


def test_dispatch_logs_and_warns_on_unknown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    seen: list[Signal] = []
    processor = SignalProcessor(offset=lambda: {"lsn": 42})
    processor.register("execute-snapshot", seen.append)
    processor.process(Signal("1", "log", {"message": "at offset {}"}))
    processor.process(Signal("2", "nope", {}))
    processor.process(Signal("3", "execute-snapshot", {"data-collections": ["public.t"]}))
    processor.process(Signal("4", "log", {}))
    assert "at offset {'lsn': 42}" in caplog.text
    assert "Signal '2' has been received but the type 'nope' is not recognized" in caplog.text
    assert "field 'message' is missing" in caplog.text
    assert [s.id for s in seen] == ["3"]


def test_channel_property_is_validated() -> None:
    assert parse_channels("source, kafka") == ("source", "kafka")
    with pytest.raises(ConfigError, match="did you mean 'source'"):
        parse_channels("sorce")
    base = {"topic.prefix": "x"}
    with pytest.raises(ValueError, match="set signal.kafka.topic"):
        PostgresConnectorConfig.model_validate({**base, "signal.enabled.channels": "source,kafka"})
    with pytest.raises(ValueError, match="did you mean 'signal.kafka.topic'"):
        PostgresConnectorConfig.model_validate({**base, "signal.kafka.topc": "s"})


def test_signal_table_is_captured_even_outside_the_include_list() -> None:
    config = PostgresConnectorConfig.model_validate({
        "topic.prefix": "x", "table.include.list": "public.items", "signal.data.collection": "ops.signals"})
    assert config.table_filter.matches("ops", "signals")
    assert config.table_filter.matches("public", "items")
    assert not config.table_filter.matches("public", "other")
    plain = PostgresConnectorConfig.model_validate({"topic.prefix": "x", "table.include.list": "public.items"})
    assert not plain.table_filter.matches("ops", "signals")


def test_mysql_signal_table_and_kafka_channel_properties() -> None:
    from lakecdc.capture.mysql.config import MySqlConnectorConfig

    config = MySqlConnectorConfig.model_validate({
        "topic.prefix": "x", "database.include.list": "shop", "signal.data.collection": "ops.debezium_signal",
        "signal.enabled.channels": "kafka", "signal.kafka.topic": "sig", "signal.kafka.groupId": "g"})
    assert config.signal_table == TableId(None, "ops", "debezium_signal")
    assert config.table_filter.matches("ops", "debezium_signal") and config.table_filter.matches_schema("ops")
    assert not config.table_filter.matches("ops", "other")
    assert config.signal_channels == ("kafka",) and config.signal_kafka_groupid == "g"
    with pytest.raises(ValueError, match="set signal.data.collection too"):
        MySqlConnectorConfig.model_validate({"topic.prefix": "x", "signal.enabled.channels": "source,kafka",
                                             "signal.kafka.topic": "sig"})


def test_chunk_bounds_are_written_out_as_debezium_does() -> None:
    from lakecdc.capture.chunk_query import key_after
    from lakecdc.capture.mysql.connection import quote as mysql_quote
    from lakecdc.capture.sqlserver.connection import quote as sqlserver_quote

    assert key_after(["id"], [7], mysql_quote) == ("(`id` > %s)", [7])
    assert key_after(["a", "b", "c"], [1, "x", 3], mysql_quote) == (
        "(`a` > %s) OR (`a` = %s AND `b` > %s) OR (`a` = %s AND `b` = %s AND `c` > %s)", [1, 1, "x", 1, "x", 3])
    assert key_after(["a", "b"], [1, "x"], sqlserver_quote) == ("([a] > %s) OR ([a] = %s AND [b] > %s)", [1, 1, "x"])


def test_chunk_statements_in_each_dialect() -> None:
    """One builder, three dialects: the row limit where each database writes it, and a '%' of the
    condition doubled only where the driver %-interpolates the statement (pymssql: only with
    parameters; python-oracledb never, its binds being numbered)."""
    from lakecdc.capture.chunk_query import ChunkQueries
    from lakecdc.capture.mysql.incremental import MySqlDialect
    from lakecdc.capture.oracle.incremental import OracleDialect
    from lakecdc.capture.sqlserver.incremental import SqlServerDialect

    cond = "label LIKE 'a%'"
    my = ChunkQueries(MySqlDialect(), ("db", "t"), ["a", "b"], cond)
    assert my.max_key() == ("SELECT `a`, `b` FROM `db`.`t` WHERE (label LIKE 'a%%') ORDER BY `a` DESC, `b` DESC "
                            "LIMIT 1", [])
    assert my.chunk("`a`, `b`, `label`", [1, "x"], [9, "z"], 2) == (
        "SELECT `a`, `b`, `label` FROM `db`.`t` WHERE ((`a` > %s) OR (`a` = %s AND `b` > %s)) AND "
        "(NOT ((`a` > %s) OR (`a` = %s AND `b` > %s))) AND (label LIKE 'a%%') ORDER BY `a`, `b` LIMIT 2",
        [1, 1, "x", 9, 9, "z"])
    ms = ChunkQueries(SqlServerDialect(), ("db", "dbo", "t"), ["id"], cond)
    assert ms.max_key() == ("SELECT TOP 1 [id] FROM [db].[dbo].[t] WHERE (label LIKE 'a%') ORDER BY [id] DESC", [])
    assert ms.chunk("[id], [label]", None, [9], 5) == (
        "SELECT TOP 5 [id], [label] FROM [db].[dbo].[t] WHERE (NOT (([id] > %s))) AND (label LIKE 'a%%') "
        "ORDER BY [id]", [9])
    ora = ChunkQueries(OracleDialect(), ("S", "T"), ["ID"], "NOTE LIKE '%s'")
    assert ora.chunk('"ID"', [1], [9], 3) == (
        'SELECT "ID" FROM "S"."T" WHERE (("ID" > :1)) AND (NOT (("ID" > :2))) AND (NOTE LIKE \'%s\') '
        'ORDER BY "ID" FETCH FIRST 3 ROWS ONLY', [1, 9])
    assert ChunkQueries(MySqlDialect(), ("db", "t"), ["id"], None).max_key() == (
        "SELECT `id` FROM `db`.`t` ORDER BY `id` DESC LIMIT 1", [])


def test_blocking_selects_name_tables_as_debezium(caplog: pytest.LogCaptureFixture) -> None:
    """A blocking snapshot's additional conditions: data-collection is one table's name (with or
    without the database for three-part ids; no regex), the filter its whole SELECT; the older
    additional-condition string is not applied. Parsed by the incremental snapshot's parser."""
    from lakecdc.capture.blocking import blocking_selects
    from lakecdc.capture.incremental import AdditionalCondition, additional_conditions

    data = {"data-collections": ["public.a", "public.b"], "type": "blocking",
            "additional-conditions": [{"data-collection": "public.a", "filter": "SELECT * FROM public.a WHERE x"},
                                      {"data-collection": "public.*", "filter": "SELECT 1"},
                                      {"data-collection": '"public"."b"', "filter": "SELECT * FROM public.b"},
                                      {"data-collection": "public.c"}],
            "additional-condition": "x > 1"}
    assert additional_conditions(data) == [
        AdditionalCondition("public.a", "SELECT * FROM public.a WHERE x"), AdditionalCondition("public.*", "SELECT 1"),
        AdditionalCondition('"public"."b"', "SELECT * FROM public.b"), AdditionalCondition(None, "x > 1")]
    caplog.set_level(logging.WARNING)
    assert blocking_selects(Signal("s", "execute-snapshot", data), ["public.a", "public.b"]) == {
        "public.a": "SELECT * FROM public.a WHERE x", "public.b": "SELECT * FROM public.b"}
    assert "additional condition for 'public.*' names no table of this blocking snapshot" in caplog.text
    assert "additional-condition (a WHERE fragment for incremental snapshots) is not applied" in caplog.text
    three = {"additional-conditions": [{"data-collection": "dbo.t", "filter": "SELECT * FROM dbo.t"},
                                       {"data-collection": "DB.dbo.u", "filter": "SELECT * FROM dbo.u"},
                                       {"data-collection": "other.dbo.u", "filter": "SELECT 2"}]}
    assert blocking_selects(Signal("s", "execute-snapshot", three), ["DB.dbo.t", "DB.dbo.u"]) == {
        "dbo.t": "SELECT * FROM dbo.t", "dbo.u": "SELECT * FROM dbo.u"}
