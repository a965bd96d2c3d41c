"""Text parsers and Debezium arithmetic of the PostgreSQL type mapping (pure functions, no server).

Expected numbers that are not obvious come from the Debezium 3.6.3 golden recordings in
tests/data/pg_types/ (the value Debezium emitted for that text).
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.capture.postgres import type_temporal as tt
from lakecdc.capture.postgres import type_values as tv
from lakecdc.events.java_hashmap import java_string_hash


@given(st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)))
def test_calendar_matches_python_dates(day: dt.date) -> None:
    days = (day - dt.date(1970, 1, 1)).days
    assert tt.days_from_civil(day.year, day.month, day.day) == days
    assert tt.civil_from_days(days) == (day.year, day.month, day.day)


@given(st.integers(min_value=-3_000_000_000, max_value=3_000_000_000))
def test_calendar_round_trips_far_outside_python_range(days: int) -> None:
    assert tt.days_from_civil(*tt.civil_from_days(days)) == days


def test_dates_streamed_and_read_over_jdbc() -> None:
    assert tt.stream_epoch_days("2024-02-29") == 19782
    # 44 BC is astronomical year -43 when streamed; JDBC drops the era (golden values)
    assert tt.stream_epoch_days("0044-03-15 BC") == -735160
    assert tt.jdbc_epoch_days("0044-03-15 BC") == -703383
    assert tt.stream_epoch_days("infinity") == -2147472692
    assert tt.stream_epoch_days("-infinity") == -2147472691
    assert tt.jdbc_epoch_days("infinity") == -622191234
    assert tt.jdbc_epoch_days("-infinity") == -625821272
    with pytest.raises(ValueError, match="not a PostgreSQL date"):
        tt.stream_epoch_days("yesterday")


def test_times_and_zones() -> None:
    assert tt.time_micros("13:14:15.123456") == 47655123456
    assert tt.time_micros("24:00:00") == 86_400_000_000
    assert tt.time_micros("00:00:00.5") == 500_000
    assert tt.timetz_utc_micros("13:14:15.5+05:30") == tt.time_micros("07:44:15.5")
    assert tt.timetz_utc_micros("23:59:59.99-15:59") == tt.time_micros("15:58:59.99")
    assert tt.iso_clock_minimal(tt.time_micros("07:44:15.5")) == "07:44:15.5"
    assert tt.iso_clock_minimal(0) == "00:00:00"


@given(st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9999, 12, 31)),
       st.sampled_from([0, 1, 2, 3, 6]))
def test_fast_paths_equal_the_general_parsers(moment: dt.datetime, digits: int) -> None:
    text = moment.isoformat(sep=" ")
    general = tt.timestamp_micros(text)
    assert tt.micro_timestamp(text) == general
    zoned = text + "+00"
    assert tt.zoned_timestamp_text(zoned, digits) == tt.zoned_timestamp(tt.timestamptz_micros(zoned), digits)


def test_timestamps_beyond_the_long_range_wrap_like_debezium() -> None:
    assert tt.micro_timestamp("294276-12-31 23:59:59.999999") == -9223372036853775810
    assert tt.micro_timestamp("infinity") == 9223372036825200000
    assert tt.micro_timestamp("0044-03-15 12:00:00 BC") == -63517780800000000
    assert tt.zoned_timestamp_text("0044-03-15 12:00:00+00 BC", 6) == "-0043-03-15T12:00:00.000000Z"
    assert tt.zoned_timestamp_text("2024-02-29 13:14:15.123456+05:30", 6) == "2024-02-29T07:44:15.123456Z"
    assert tt.zoned_timestamp_text("10000-06-15 00:00:00+00", 6) == "+10000-06-15T00:00:00.000000Z"
    assert tt.zoned_timestamp_text("-infinity", 6) == "-infinity"


@pytest.mark.parametrize(("text", "micros"), [
    ("1 year 2 mons 3 days 04:05:06.789", 37091106789000),
    ("-1 year -2 mons +3 days -04:05:06", -36572706000000),
    ("1 mon", 2629800000000),
    ("178000000 years", 9223372036854775807),
    ("100 days 23:59:59.999", 8726399999000),
    ("-1 days", -86400000000),
    ("00:00:00", 0),
])
def test_interval_micro_duration(text: str, micros: int) -> None:
    assert tt.interval_micro_duration(text) == micros


def test_interval_iso_text() -> None:
    assert tt.interval_iso("1 year 2 mons 3 days 04:05:06.789") == "P1Y2M3DT4H5M6.789S"
    assert tt.interval_iso("1 day") == "P0Y0M1DT0H0M0S"
    assert tt.interval_iso("-3 days -04:05:06.000007") == "P0Y0M-3DT-4H-5M-6.000007S"


def test_numbers() -> None:
    assert tv.variable_scale("1.500") == {"scale": 1, "value": b"\x0f"}
    assert tv.variable_scale("0.000") == {"scale": 0, "value": b"\x00"}
    assert tv.variable_scale("-0.0000000000000000000100") == {"scale": 20, "value": b"\xff"}
    assert tv.variable_scale("1" + "0" * 100) == {"scale": 0, "value": tv.unscaled_bytes(10**100)}
    assert tv.variable_scale("NaN") is None
    big = "9" * 5000  # beyond Python's int<->str digit limit: must not raise
    assert tv.variable_scale(big)["scale"] == 0  # type: ignore[index]
    assert tv.fixed_scale(2)("-92233720368547758.08") == (-(1 << 63)).to_bytes(8, "big", signed=True)
    assert tv.fixed_scale(3)("-0.001") == b"\xff"
    assert tv.decimal_string(2)("12.5") == "12.50"
    assert tv.decimal_string(None)("NaN") == "NAN"
    assert tv.decimal_string(None)("-Infinity") == "NEGATIVE_INFINITY"
    assert tv.money_decimal("-$92,233,720,368,547,758.08") == -tv.decimal_exact("92233720368547758.08")
    assert tv.unscaled_bytes(0) == b"\x00"
    assert tv.unscaled_bytes(128) == b"\x00\x80"
    assert tv.unscaled_bytes(-129) == b"\xff\x7f"


def test_bits_and_bytea() -> None:
    assert tv.bits_bytes("10101010") == b"\xaa"
    assert tv.bits_bytes("1101") == b"\x0d"
    assert tv.bits_bytes("1111111111111111111") == b"\xff\xff\x07"
    assert tv.bits_bytes("00001") == b"\x01"
    assert tv.bits_bytes("") == b""
    assert tv.bytea_bytes("\\x00ff10") == b"\x00\xff\x10"
    assert tv.bytea_bytes("a\\\\b\\001") == b"a\\b\x01"  # escape output format


@pytest.mark.parametrize(("text", "parsed"), [
    ("{}", []),
    ("{1,2,NULL}", ["1", "2", None]),
    ('{"a b","NULL",NULL,"x\\"y","c,d","","back\\\\slash","{}"}',
     ["a b", "NULL", None, 'x"y', "c,d", "", "back\\slash", "{}"]),
    ("{{1,2},{3,NULL}}", [["1", "2"], ["3", None]]),
    ("[2:3]={1,2}", ["1", "2"]),
    ('{"[1,5)",empty}', ["[1,5)", "empty"]),
    ("{ a , b }", ["a", "b"]),
])
def test_parse_array(text: str, parsed: list[object]) -> None:
    assert tv.parse_array(text) == parsed


def test_parse_hstore() -> None:
    assert tv.parse_hstore('"a"=>"1", "b"=>NULL, "c d"=>"x\\"y"') == {"a": "1", "b": None, "c d": 'x"y'}
    assert tv.parse_hstore("") == {}


def test_point_wkb() -> None:
    point = tv.point_struct("(1.5,-2)")
    assert (point["x"], point["y"], point["srid"]) == (1.5, -2.0, None)
    # golden: "AQEAAAAAAAAAAAD4PwAAAAAAAADA" (little-endian WKB POINT)
    assert point["wkb"] == bytes.fromhex("0101000000000000000000f83f00000000000000c0")


def test_java_string_hash_and_hashmap_order() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("") == 0
    assert java_string_hash("é✓😀") == (0xE9 * 31**3 + 0x2713 * 31**2 + 0xD83D * 31 + 0xDE00) & 0xFFFFFFFF
    # "k" (107) lands in bucket 11, "ctl" (98843 -> bucket 5): HashMap iterates ctl first
    assert tv.parse_hstore('"k"=>"v", "ctl"=>"x"') == {"ctl": "x", "k": "v"}
    assert list(tv.parse_hstore('"k"=>"v", "ctl"=>"x"')) == ["ctl", "k"]
    # colliding keys keep insertion order within their bucket
    assert list(tv.parse_hstore('"BB"=>"2", "Aa"=>"1"')) == ["BB", "Aa"]
    many = ", ".join(f'"key{i}"=>"v{i}"' for i in range(20))  # > 12 pairs: table of 32 buckets
    order = list(tv.parse_hstore(many))
    assert sorted(order) == sorted(f"key{i}" for i in range(20))
    assert order == sorted(order, key=lambda k: ((java_string_hash(k) ^ (java_string_hash(k) >> 16)) & 31,
                                                 int(k[3:])))


def test_postgis_ewkb_srid() -> None:
    little = "0101000020E6100000000000000000084000000000000010400"[:-1]  # SRID=4326;POINT(3 4)
    assert tv.postgis_struct(little) == {"wkb": bytes.fromhex(little), "srid": 4326}
    assert tv.ewkb_srid(bytes.fromhex("0101000000000000000000F03F0000000000000040")) is None  # no SRID flag
    big = "0020000001000010E640080000000000004010000000000000"  # same point, big-endian
    assert tv.ewkb_srid(bytes.fromhex(big)) == 4326
