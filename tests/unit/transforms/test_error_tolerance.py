"""``errors.tolerance`` / ``errors.log.enable`` / ``errors.log.include.messages`` on the transform chain,
as Kafka Connect's ``RetryWithToleranceOperator`` and ``LogReporter`` treat a failing transformation."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.errors import ConfigError
from lakecdc.transforms import TransformDataError, build_chain

from .records import change, delete_pair, row

OUTBOX = "io.debezium.transforms.outbox.EventRouter"
# ValueToKey fails on every tombstone (no value to read fields from): a failure that depends on the record
FAILING = {"transforms": "k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey",
           "transforms.k.fields": "op"}


def _chain(**errors: str) -> Any:
    return build_chain({**FAILING, "name": "shop", **{k.replace("_", "."): v for k, v in errors.items()}})


def test_none_is_the_default_and_stops_on_the_failing_record() -> None:
    chain = _chain()
    with pytest.raises(TransformDataError, match=r"transform 'k' \(org\.apache\.kafka\.connect\.transforms\."
                                                 r"ValueToKey\) failed on a record of topic 'dbz\.public\.items'"):
        chain.apply(delete_pair(1))


def test_all_skips_exactly_the_failing_records_and_keeps_order() -> None:
    chain = _chain(errors_tolerance="all")
    records = [change("c", None, row(1)), *delete_pair(1), change("c", None, row(2))]
    out = chain.apply(records)
    assert [r.key for r in out] == [{"op": "c"}, {"op": "d"}, {"op": "c"}]  # the create, the delete, the create
    assert [r.value["after"] and r.value["after"]["id"] for r in out] == [1, None, 2]
    assert chain.errors.skipped == 1


def test_without_errors_log_enable_a_skip_is_silent(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="lakecdc.transforms"):
        _chain(errors_tolerance="all").apply(delete_pair(1))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("tolerance", ["none", "all"])
def test_errors_log_enable_logs_connects_words_with_the_alias(tolerance: str, caplog: pytest.LogCaptureFixture) -> None:
    chain = _chain(errors_tolerance=tolerance, errors_log_enable="true")
    with caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        try:
            chain.apply(delete_pair(1))
        except TransformDataError:
            assert tolerance == "none"
    [entry] = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = entry.getMessage()
    assert message.startswith("Error encountered in task shop-0. Executing stage 'TRANSFORMATION' with class "
                              "'org.apache.kafka.connect.transforms.ValueToKey'.")
    assert "transform 'k'" in message and "Only Map objects supported" in message
    assert ("skipped (errors.tolerance=all)" in message) == (tolerance == "all")
    assert "where source record is" not in message


def test_include_messages_adds_the_record(caplog: pytest.LogCaptureFixture) -> None:
    chain = _chain(errors_tolerance="all", errors_log_enable="true", errors_log_include_messages="true")
    with caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        chain.apply(delete_pair(7))
    [entry] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "where source record is = ChangeRecord{topic='dbz.public.items'" in entry.getMessage()
    assert "key={'id': 7}, value=None, headers=[]}" in entry.getMessage()  # a tombstone has no headers


def test_any_exception_of_a_transform_is_tolerated() -> None:
    """Connect tolerates every Exception in the TRANSFORMATION stage: the outbox router's fatal update
    (an IllegalStateException there) is skipped with errors.tolerance=all."""
    props = {"transforms": "o", "transforms.o.type": OUTBOX, "transforms.o.table.op.invalid.behavior": "fatal"}
    with pytest.raises(TransformDataError, match="Unexpected update"):
        build_chain(props).apply([change("u", row(1), row(1, "b"))])
    assert build_chain({**props, "errors.tolerance": "all"}).apply([change("u", row(1), row(1, "b"))]) == []


@pytest.mark.parametrize(("props", "message"), [
    ({"errors.tolerance": "ALL"}, r"Invalid value ALL for configuration errors\.tolerance: String must be one of"),
    ({"errors.tolerance": "some"}, "errors.tolerance"),
    ({"errors.log.enable": "yes"}, r"errors\.log\.enable"),
    ({"errors.log.include.messages": "1"}, r"errors\.log\.include\.messages"),
])
def test_invalid_values_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_chain({**FAILING, **props})


def test_the_connector_configuration_hands_its_error_settings_to_the_chain() -> None:
    config = PostgresConnectorConfig.from_properties({
        "name": "inventory", "topic.prefix": "dbz", "database.hostname": "h", "database.user": "u",
        "database.dbname": "d", **FAILING, "errors.tolerance": "all", "errors.log.enable": "true"})
    chain = config.transform_chain
    assert chain.errors.tolerate_all and chain.errors.log_enable and chain.errors.task == "inventory-0"
    assert "errors.tolerance" not in config.not_applied_properties()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 50)), max_size=30))
def test_all_sends_every_record_that_does_not_fail_in_order(plan: list[tuple[bool, int]]) -> None:
    """Whatever the mix of records that fail and records that pass, errors.tolerance=all sends exactly
    the ones that pass, in their order, transformed as without failures."""
    records = [change("c", None, row(i)) if ok else delete_pair(i)[1] for ok, i in plan]
    chain = _chain(errors_tolerance="all")
    out = chain.apply(records)
    passing = [r for r in records if r.value is not None]
    assert out == _chain().apply(passing)
    assert chain.errors.skipped == len(records) - len(passing)
