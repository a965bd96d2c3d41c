"""TimestampConverter and its SimpleDateFormat subset."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.errors import ConfigError
from lakecdc.transforms import TransformDataError, build_chain
from lakecdc.transforms.timestamps import SimpleDateFormat

from .records import change, row

TS = "org.apache.kafka.connect.transforms.TimestampConverter$Value"
MILLIS = st.integers(min_value=-2_000_000_000_000, max_value=4_000_000_000_000)


def convert(**props: str):  # noqa: ANN201
    return build_chain({"transforms": "u,t", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                        "transforms.t.type": TS, "transforms.t.field": "seen",
                        **{f"transforms.t.{k}": v for k, v in props.items()}})


@given(MILLIS)
def test_format_matches_python_for_iso_patterns(millis: int) -> None:
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
    text = SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS").format(millis)
    assert text == moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    assert SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS").parse(text) == millis


def test_format_letters() -> None:
    fmt = SimpleDateFormat("EEE, d MMM yy hh:mm a z ''Z''")
    assert fmt.format(0) == "Thu, 1 Jan 70 12:00 AM UTC '+0000'"
    with pytest.raises(ValueError, match="Illegal pattern character 'Q'"):
        SimpleDateFormat("yyyy Q")


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_unix_microseconds_to_string_truncates_toward_zero(micros: int) -> None:
    [out] = convert(**{"target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS",
                       "unix.precision": "microseconds"}).apply([change("c", None, row(1, seen=micros))])
    millis = abs(micros) // 1000 * (1 if micros >= 0 else -1)
    assert out.value["seen"] == SimpleDateFormat("yyyy-MM-dd HH:mm:ss.SSS").format(millis)
    assert out.value_schema.field("seen").schema.type == "string"
    assert out.value_schema.field("seen").schema.optional


@pytest.mark.parametrize(("target", "expected", "name"), [
    ("Timestamp", 1_700_000_000_123, "org.apache.kafka.connect.data.Timestamp"),
    ("Date", 19675, "org.apache.kafka.connect.data.Date"),
    ("Time", 80_000_123, "org.apache.kafka.connect.data.Time"),
    ("unix", 1_700_000_000_123_000, None),
])
def test_targets(target: str, expected: int, name: str | None) -> None:
    [out] = convert(**{"target.type": target, "unix.precision": "microseconds"}).apply(
        [change("c", None, row(1, seen=1_700_000_000_123_456))])
    field = out.value_schema.field("seen").schema
    assert out.value["seen"] == expected and field.name == name
    if name:
        assert field.version == 1


def test_string_needs_a_format_and_other_types_are_refused() -> None:
    with pytest.raises(ConfigError, match="format"):
        convert(**{"target.type": "string"})
    with pytest.raises(ConfigError, match="target.type"):
        convert(**{"target.type": "date"})
    chain = build_chain({"transforms": "u,t", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                         "transforms.t.type": TS, "transforms.t.field": "qty", "transforms.t.target.type": "unix"})
    with pytest.raises(TransformDataError, match="known timestamp type"):
        chain.apply([change("c", None, row(1))])
