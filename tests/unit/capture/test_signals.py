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
    from lakecdc.capture.incremental import key_after
    from lakecdc.capture.mysql.connection import quote as mysql_quote
    from lakecdc.capture.sqlserver.connection import quote as sqlserver_quote

    assert key_after(["id"], [7], mysql_quote) == ("(`id` > %s)", [7])
    assert key_after(["a", "b", "c"], [1, "x", 3], mysql_quote) == (
        "(`a` > %s) OR (`a` = %s AND `b` > %s) OR (`a` = %s AND `b` = %s AND `c` > %s)", [1, 1, "x", 1, "x", 3])
    assert key_after(["a", "b"], [1, "x"], sqlserver_quote) == ("([a] > %s) OR ([a] = %s AND [b] > %s)", [1, 1, "x"])
