"""Logical type conversions against the values real Debezium wrote, plus round-trip properties."""

from __future__ import annotations

import base64
import datetime as dt
import decimal

import pytest
from events_workload import workload_records
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.events import logical
from lakecdc.events.logical import (
    decimal_schema,
    from_connect,
    micro_duration,
    named,
    to_connect,
    unscaled_bytes,
    variable_scale_decimal_schema,
    zoned_timestamp_text,
)
from lakecdc.events.schema import ConnectSchema

UTC = dt.timezone.utc


def _field_schema(topic: str, field: str) -> ConnectSchema:
    record = next(r for r in workload_records() if r["topic"] == topic and r["value"])
    row = ConnectSchema.from_json(record["value"]["schema"]).field("after").schema
    return row.field(field).schema


def test_builders_equal_debezium_field_schemas() -> None:
    assert _field_schema("dbz.public.customers", "balance") == decimal_schema(2, 12)
    assert _field_schema("dbz.public.audit_full", "amount") == variable_scale_decimal_schema()
    assert _field_schema("dbz.public.audit_full", "ts") == named("int64", logical.MICRO_TIMESTAMP)
    assert _field_schema("dbz.public.audit_full", "t") == named("int64", logical.MICRO_TIME)
    assert _field_schema("dbz.public.audit_full", "d") == named("int32", logical.DATE)
    assert _field_schema("dbz.public.audit_full", "iv") == named("int64", logical.MICRO_DURATION)
    assert _field_schema("dbz.public.audit_full", "u") == named("string", logical.UUID)
    assert _field_schema("dbz.public.customers", "created_at") == named("string", logical.ZONED_TIMESTAMP)
    assert _field_schema("dbz.public.customers", "payload") == named("string", logical.JSON)


# (SQL literal from pg_setup.sql / pg_workload.sql as a Python value, what Debezium wrote)
CASES = [
    ("dbz.public.customers", "balance", decimal.Decimal("100.50"), base64.b64decode("J0I=")),
    ("dbz.public.audit_full", "amount", decimal.Decimal("1.5"), {"scale": 1, "value": b"\x0f"}),
    ("dbz.public.audit_full", "amount", decimal.Decimal("-0.000001"), {"scale": 6, "value": b"\xff"}),
    ("dbz.public.audit_full", "amount", decimal.Decimal("99999999999999999999.123456789"),
     {"scale": 9, "value": base64.b64decode("AUMeD65tchfKa8EDFQ==")}),
    ("dbz.public.audit_full", "d", dt.date(2024, 1, 1), 19723),
    ("dbz.public.audit_full", "d", dt.date(1970, 1, 1), 0),
    ("dbz.public.audit_full", "t", dt.time(12, 34, 56, 789000), 45296789000),
    ("dbz.public.audit_full", "ts", dt.datetime(2024, 1, 1, 0, 0, 0, 500000), 1704067200500000),
    ("dbz.public.audit_full", "ts", dt.datetime(1999, 12, 31, 23, 59, 59, 999999), 946684799999999),
    ("dbz.public.audit_full", "iv", dt.timedelta(days=1, hours=2, minutes=3, seconds=4), 93784000000),
    ("dbz.public.customers", "created_at", dt.datetime(2024, 3, 4, 5, 6, 7, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     "2024-03-04T03:06:07.000000Z"),
    ("dbz.public.customers", "created_at", dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
     "2024-01-02T03:04:05.123456Z"),
]


@pytest.mark.parametrize(("topic", "field", "python_value", "connect_value"), CASES)
def test_conversions_match_debezium_values(topic: str, field: str, python_value: object, connect_value: object) -> None:
    schema = _field_schema(topic, field)
    assert to_connect(schema, python_value) == connect_value
    back = from_connect(schema, connect_value)
    if isinstance(python_value, dt.datetime) and python_value.tzinfo is not None:
        assert back == python_value  # same instant
    else:
        assert back == python_value


def test_month_interval_is_30_4375_days() -> None:
    assert micro_duration(months=-1) == -2629800000000  # '-1 mons' in the workload


def test_unscaled_bytes_are_minimal_twos_complement() -> None:
    assert unscaled_bytes(0) == b"\x00"
    assert unscaled_bytes(127) == b"\x7f"
    assert unscaled_bytes(128) == b"\x00\x80"
    assert unscaled_bytes(-128) == b"\x80"
    assert unscaled_bytes(-129) == b"\xff\x7f"


def test_decimal_that_does_not_fit_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="scale 2"):
        to_connect(decimal_schema(2), decimal.Decimal("1.005"))


def test_zoned_timestamp_precision() -> None:
    moment = dt.datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert zoned_timestamp_text(moment, 0) == "2024-02-03T04:05:06Z"
    assert zoned_timestamp_text(moment, 3) == "2024-02-03T04:05:06.000Z"
    with pytest.raises(ValueError, match="naive"):
        zoned_timestamp_text(moment.replace(tzinfo=None))


@settings(deadline=None)
@given(st.integers(min_value=-(2**200), max_value=2**200))
def test_unscaled_round_trip(value: int) -> None:
    data = unscaled_bytes(value)
    assert logical.unscaled_from_bytes(data) == value
    assert len(data) == max(1, (value.bit_length() + 8) // 8) or value < 0


@settings(deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, places=None, min_value=-10**30, max_value=10**30))
def test_variable_scale_decimal_round_trip(value: decimal.Decimal) -> None:
    schema = variable_scale_decimal_schema()
    assert from_connect(schema, to_connect(schema, value)) == value


@settings(deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-10**20, max_value=10**20))
def test_fixed_scale_decimal_round_trip(value: decimal.Decimal) -> None:
    schema = decimal_schema(4, 30)
    assert from_connect(schema, to_connect(schema, value)) == value


@settings(deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
def test_micro_timestamp_round_trip(value: dt.datetime) -> None:
    schema = named("int64", logical.MICRO_TIMESTAMP)
    assert from_connect(schema, to_connect(schema, value)) == value


@settings(deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.just(UTC)))
def test_zoned_timestamp_round_trip(value: dt.datetime) -> None:
    schema = named("string", logical.ZONED_TIMESTAMP)
    assert from_connect(schema, to_connect(schema, value)) == value


@settings(deadline=None)
@given(st.times())
def test_micro_time_round_trip(value: dt.time) -> None:
    schema = named("int64", logical.MICRO_TIME)
    assert from_connect(schema, to_connect(schema, value)) == value


def test_interval_text_matches_debezium_layout() -> None:
    assert logical.interval_text(days=1, hours=2, minutes=3, seconds=4) == "P0Y0M1DT2H3M4S"
    assert logical.interval_text(months=-1) == "P0Y-1M0DT0H0M0S"
    assert logical.interval_text(seconds=decimal.Decimal("10.000")) == "P0Y0M0DT0H0M10S"
    assert logical.interval_text(seconds=decimal.Decimal("0.1234567891")) == "P0Y0M0DT0H0M0.123456789S"
    assert logical.interval_text(seconds=decimal.Decimal("-0.0")) == "P0Y0M0DT0H0M0S"
