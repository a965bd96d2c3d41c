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


def _millis(year: int, month: int, day: int) -> int:
    return (dt.datetime(year, month, day) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


@pytest.mark.parametrize(("day", "expected"), [
    ((2021, 12, 31), "AD 2021-12 w01 Y2022 W5 F5 u5 December Dec"),  # the week of Jan 1st 2022 is its week 1
    ((2022, 1, 1), "AD 2022-01 w01 Y2022 W1 F1 u6 January Jan"),
    ((2022, 1, 2), "AD 2022-01 w02 Y2022 W2 F1 u7 January Jan"),  # weeks start on Sunday (en_US)
    ((2024, 11, 26), "AD 2024-11 w48 Y2024 W5 F4 u2 November Nov"),
    ((2024, 12, 28), "AD 2024-12 w52 Y2024 W4 F4 u6 December Dec"),
    ((2024, 12, 29), "AD 2024-12 w01 Y2025 W5 F5 u7 December Dec"),
])
def test_every_java_pattern_letter_formats(day: tuple[int, int, int], expected: str) -> None:
    fmt = SimpleDateFormat("G yyyy-MM 'w'ww 'Y'YYYY 'W'W 'F'F 'u'u LLLL LLL")
    assert fmt.format(_millis(*day)) == expected


@given(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31)))
def test_week_of_year_counts_sundays_since_january_first(day: dt.date) -> None:
    """Week 1 holds January 1st and each Sunday starts the next week; the days of the last week that
    holds next January 1st are week 1 of the next week year."""
    sundays = sum(1 for i in range(1, day.timetuple().tm_yday)
                  if (dt.date(day.year, 1, 1) + dt.timedelta(days=i)).weekday() == 6)
    next_jan1 = dt.date(day.year + 1, 1, 1)
    last_week = (next_jan1 - day).days <= (5 - day.weekday()) % 7 + 1 and next_jan1.weekday() != 6
    expected = f"{day.year + 1}-01" if last_week else f"{day.year}-{sundays + 1:02d}"
    assert SimpleDateFormat("YYYY-ww").format(_millis(day.year, day.month, day.day)) == expected


def test_week_fields_cannot_be_parsed_and_say_so() -> None:
    """Formatted (seen -> text), then parsed back (text -> unix): the week field cannot be read."""
    chain = build_chain({"transforms": "u,s,t", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                         "transforms.s.type": TS, "transforms.s.field": "seen", "transforms.s.target.type": "string",
                         "transforms.s.format": "yyyy-ww", "transforms.s.unix.precision": "microseconds",
                         "transforms.t.type": TS, "transforms.t.field": "seen",
                         "transforms.t.target.type": "unix", "transforms.t.format": "yyyy-ww"})
    with pytest.raises(TransformDataError, match="pattern letter 'w'"):
        chain.apply([change("c", None, row(1))])


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
