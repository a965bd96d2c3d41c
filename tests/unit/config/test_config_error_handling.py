"""Kafka Connect's ``errors.*`` properties in a connector file: the error handler's are applied (no
warning), the dead letter queue's and Debezium's embedded-engine delay are accepted with one warning
saying why they change nothing for a source connector."""

from __future__ import annotations

import logging
import re

import pytest

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.errors import ConfigError

BASE = {"name": "inventory", "topic.prefix": "dbz", "database.hostname": "h", "database.user": "u",
        "database.dbname": "d"}
DLQ = {"errors.deadletterqueue.topic.name": "dlq", "errors.deadletterqueue.topic.replication.factor": "1",
       "errors.deadletterqueue.context.headers.enable": "true"}


def test_the_error_handler_properties_are_applied_without_a_warning() -> None:
    config = PostgresConnectorConfig.from_properties({
        **BASE, "errors.tolerance": "all", "errors.log.enable": "true", "errors.log.include.messages": "true",
        "errors.retry.timeout": "30000", "errors.retry.delay.max.ms": "5000"})
    errors = config.transform_chain.errors
    assert (errors.tolerate_all, errors.log_enable, errors.include_messages) == (True, True, True)
    assert (errors.retry_timeout_ms, errors.retry_max_delay_ms, errors.task) == (30_000, 5_000, "inventory-0")
    assert config.not_applied_properties() == {}


def test_a_dead_letter_queue_is_accepted_with_one_warning_each_citing_connect(
        caplog: pytest.LogCaptureFixture) -> None:
    config = PostgresConnectorConfig.from_properties({**BASE, **DLQ, "errors.tolerance": "all"})
    reasons = config.not_applied_properties()
    assert set(reasons) == set(DLQ)
    assert all("sink connectors only (KIP-298: SinkConnectorConfig defines these properties, and "
               "Worker.sourceTaskReporters" in reason for reason in reasons.values())
    with caplog.at_level(logging.WARNING):
        config.log_not_applied(logging.getLogger("lakecdc.test"))
    assert sorted(r.getMessage().split("'")[1] for r in caplog.records) == sorted(DLQ)


def test_the_embedded_engines_initial_retry_delay_is_accepted_without_effect() -> None:
    config = PostgresConnectorConfig.from_properties({**BASE, "errors.retry.delay.initial.ms": "300"})
    assert list(config.not_applied_properties()) == ["errors.retry.delay.initial.ms"]
    assert "embedded engine" in config.not_applied_properties()["errors.retry.delay.initial.ms"]


@pytest.mark.parametrize(("name", "value"), [("errors.retry.timeout", "soon"), ("errors.retry.delay.max.ms", "-1"),
                                             ("errors.tolerance", "some")])
def test_an_invalid_value_names_the_property(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        PostgresConnectorConfig.from_properties({**BASE, name: value})


@pytest.mark.parametrize(("typo", "meant"), [("errors.tolerence", "errors.tolerance"),
                                             ("errors.retry.timeout.ms", "errors.retry.timeout"),
                                             ("errors.log.include.message", "errors.log.include.messages"),
                                             ("errors.deadletterqueue.topic.nme", "errors.deadletterqueue.topic.name")])
def test_a_misspelt_error_property_is_refused_with_the_closest_name(typo: str, meant: str) -> None:
    """Kafka Connect would ignore it silently; a file meaning errors.tolerance=all must not run with none."""
    with pytest.raises(ConfigError, match=f"unknown property '{re.escape(typo)}' — did you mean '{re.escape(meant)}'"):
        PostgresConnectorConfig.from_properties({**BASE, typo: "all"})
