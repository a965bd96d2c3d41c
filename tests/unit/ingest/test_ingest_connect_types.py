"""Connect schema -> Spark/Arrow types, and exact columnar value conversion, type by type."""

from __future__ import annotations

import base64
import math
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from lakecdc.events.schema import ConnectSchema
from lakecdc.ingest.connect_types import TypeOptions, ValueConversionError, column_type, convert_column

pytestmark = pytest.mark.spark4  # also runs on the Spark 4 line (run.sh test)

OPTIONS = TypeOptions()


def schema(**fields) -> ConnectSchema:
    return ConnectSchema.from_json({"optional": True, **fields})


def convert(connect: dict, values: list, options: TypeOptions = OPTIONS) -> list:
    ctype = column_type(schema(**connect), options)
    array = convert_column("c", ctype, values)
    assert array.type == ctype.arrow
    return array.to_pylist()


def unscaled(n: int, width: int = 8) -> str:
    return base64.b64encode(n.to_bytes(width, "big", signed=True)).decode()


@pytest.mark.parametrize("kind,spark", [("int8", T.ByteType()), ("int16", T.ShortType()), ("int32", T.IntegerType()),
                                        ("int64", T.LongType()), ("boolean", T.BooleanType()),
                                        ("string", T.StringType()), ("bytes", T.BinaryType()),
                                        ("float", T.FloatType()), ("double", T.DoubleType())])
def test_primitive_types(kind: str, spark: T.DataType) -> None:
    assert column_type(schema(type=kind), OPTIONS).spark == spark


def test_integers_out_of_range_fail_naming_the_column() -> None:
    with pytest.raises(ValueConversionError, match="column 'c'"):
        convert({"type": "int16"}, [40000])


def test_non_finite_floats_sent_as_text() -> None:
    out = convert({"type": "double"}, [1.5, "NaN", "Infinity", "-Infinity", None])
    assert out[0] == 1.5 and math.isnan(out[1]) and out[2] == math.inf and out[3] == -math.inf and out[4] is None


def test_fixed_decimal_exact_and_precision_checked() -> None:
    connect = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
               "parameters": {"scale": "2", "connect.decimal.precision": "12"}}
    assert column_type(schema(**connect), OPTIONS).spark == T.DecimalType(12, 2)
    assert convert(connect, [unscaled(10050), None, unscaled(-2000)]) == [
        Decimal("100.50"), None, Decimal("-20.00")]
    with pytest.raises(ValueConversionError, match="decimal\\(12,2\\)"):
        convert(connect, [unscaled(10**12)])


def test_decimal_without_precision_and_too_wide_for_spark() -> None:
    no_precision = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "3"}}
    assert column_type(schema(**no_precision), OPTIONS).spark == T.DecimalType(38, 3)
    too_wide = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "0", "connect.decimal.precision": "50"}}
    assert column_type(schema(**too_wide), OPTIONS).spark == T.StringType()
    assert convert(too_wide, [unscaled(10**45, 20)]) == ["1" + "0" * 45]


def test_variable_scale_decimal_modes() -> None:
    connect = {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal",
               "fields": [{"type": "int32", "optional": False, "field": "scale"},
                          {"type": "bytes", "optional": False, "field": "value"}]}
    values = [{"scale": 9, "value": unscaled(99999999999999999999123456789, 13)}, {"scale": 0, "value": unscaled(-5)}]
    assert column_type(schema(**connect), OPTIONS).spark == T.DecimalType(38, 18)
    assert convert(connect, values) == [Decimal("99999999999999999999.123456789"), Decimal("-5")]
    assert convert(connect, values, TypeOptions(variable_scale_mode="string")) == [
        "99999999999999999999.123456789", "-5"]
    with pytest.raises(ValueConversionError):  # 3 fraction digits do not fit scale 2: never rounded
        convert(connect, [{"scale": 3, "value": unscaled(1234)}], TypeOptions(variable_scale=2))


def test_dates_and_timestamps() -> None:
    assert convert({"type": "int32", "name": "io.debezium.time.Date"}, [19723, -1, None]) == [
        date(2024, 1, 1), date(1969, 12, 31), None]
    assert convert({"type": "int64", "name": "io.debezium.time.Timestamp"}, [1704067200500]) == [
        datetime(2024, 1, 1, 0, 0, 0, 500000)]
    assert convert({"type": "int64", "name": "io.debezium.time.MicroTimestamp"}, [-1]) == [
        datetime(1969, 12, 31, 23, 59, 59, 999999)]
    assert convert({"type": "int64", "name": "io.debezium.time.NanoTimestamp"}, [1704067200000001999, -1]) == [
        datetime(2024, 1, 1, 0, 0, 0, 1), datetime(1969, 12, 31, 23, 59, 59, 999999)]  # floored to µs
    ntz = column_type(schema(type="int64", name="io.debezium.time.MicroTimestamp"), OPTIONS).spark
    assert ntz == T.TimestampNTZType()


def test_zoned_timestamps_are_utc_including_nanos_and_offsets() -> None:
    connect = {"type": "string", "name": "io.debezium.time.ZonedTimestamp"}
    assert column_type(schema(**connect), OPTIONS).spark == T.TimestampType()
    assert convert(connect, ["2024-01-02T03:04:05.123456Z", "2024-03-04T05:06:07+02:00",
                             "2024-01-02T03:04:05.123456789Z", None]) == [
        datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc),
        datetime(2024, 3, 4, 3, 6, 7, tzinfo=timezone.utc),
        datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc), None]


@pytest.mark.parametrize("kind,name,value", [
    ("int32", "io.debezium.time.Time", 45296789), ("int64", "io.debezium.time.MicroTime", 45296789000),
    ("int64", "io.debezium.time.NanoTime", 45296789000000), ("int32", "org.apache.kafka.connect.data.Time", 45296789)])
def test_times_as_micros_or_text(kind: str, name: str, value: int) -> None:
    assert convert({"type": kind, "name": name}, [value]) == [45296789000]
    assert convert({"type": kind, "name": name}, [value], TypeOptions(time_mode="string")) == ["12:34:56.789000"]


def test_text_logical_types_stay_text() -> None:
    for name in ("io.debezium.data.Json", "io.debezium.data.Uuid", "io.debezium.data.Enum", "io.debezium.data.Xml",
                 "io.debezium.time.ZonedTime", "io.debezium.time.Interval"):
        assert column_type(schema(type="string", name=name), OPTIONS).spark == T.StringType()
    assert convert({"type": "string", "name": "io.debezium.data.Json"}, ['{"a": [1]}']) == ['{"a": [1]}']


def test_bytes_are_base64_decoded_and_bad_base64_fails() -> None:
    assert convert({"type": "bytes"}, ["AQL/", "", None]) == [b"\x01\x02\xff", b"", None]
    with pytest.raises(ValueConversionError):
        convert({"type": "bytes"}, ["not base64!"])


def test_arrays_maps_structs_nest() -> None:
    array = {"type": "array", "items": {"type": "int32", "optional": True}}
    assert convert(array, [[1, 2], None, [], [None]]) == [[1, 2], None, [], [None]]
    string_map = {"type": "map", "keys": {"type": "string"}, "values": {"type": "int64", "optional": True}}
    assert column_type(schema(**string_map), OPTIONS).spark == T.MapType(T.StringType(), T.LongType(), True)
    assert convert(string_map, [{"a": 1, "b": None}, None]) == [[("a", 1), ("b", None)], None]
    int_map = {"type": "map", "keys": {"type": "int32"}, "values": {"type": "string", "optional": True}}
    assert convert(int_map, [[[1, "x"], [2, "y"]]]) == [[(1, "x"), (2, "y")]]
    struct = {"type": "struct", "name": "io.debezium.data.geometry.Point",
              "fields": [{"type": "double", "field": "x"}, {"type": "double", "field": "y"},
                         {"type": "bytes", "optional": True, "field": "wkb"}]}
    assert convert(struct, [{"x": 1.0, "y": 2.0, "wkb": "AQ=="}, None]) == [{"x": 1.0, "y": 2.0, "wkb": b"\x01"}, None]
    nested = {"type": "array", "items": {"type": "bytes", "optional": True,
                                         "name": "org.apache.kafka.connect.data.Decimal",
                                         "parameters": {"scale": "1"}}}
    assert convert(nested, [[unscaled(15)], None]) == [[Decimal("1.5")], None]
    assert isinstance(column_type(schema(**nested), OPTIONS).arrow, pa.ListType)
