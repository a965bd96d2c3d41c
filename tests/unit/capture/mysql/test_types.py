"""Type table: every MySQL type -> the Connect schema and value Debezium emits for it.

Each row gives the column DDL, a driver value (as mysql-replication or PyMySQL hands it over),
the expected field schema JSON and the expected payload value.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.capture.mysql.ddl.parser import DdlParser
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.errors import MySqlTypeError
from lakecdc.capture.mysql.types import TypeModes, column_schema, value_converter


def _column(ddl_type: str):
    tables = Tables()
    DdlParser(tables).parse(f"CREATE TABLE t (c {ddl_type})", "db")
    return tables.tables[("db", "t")].columns[0]


def _schema(ddl_type: str, modes: TypeModes | None = None) -> dict:
    return column_schema(_column(ddl_type), modes or TypeModes()).to_json()


def _value(ddl_type: str, raw, modes: TypeModes | None = None):
    return value_converter(_column(ddl_type), modes or TypeModes())(raw)


WKB_POINT = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT(1 2)
SRID_POINT = (4326).to_bytes(4, "little") + WKB_POINT

# (ddl type, driver value, expected schema JSON, expected payload value)
TYPE_TABLE = [
    ("BOOLEAN", 1, {"type": "boolean", "optional": True}, True),
    ("BOOL", 0, {"type": "boolean", "optional": True}, False),
    ("BIT(1)", "1", {"type": "boolean", "optional": True}, True),
    ("BIT(1)", b"\x00", {"type": "boolean", "optional": True}, False),
    ("BIT(10)", "1000000001",
     {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1, "parameters": {"length": "10"}},
     (0b1000000001).to_bytes(2, "little")),
    ("BIT(16)", b"\x01\x02",
     {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1, "parameters": {"length": "16"}},
     b"\x02\x01"),
    ("TINYINT", -128, {"type": "int16", "optional": True}, -128),
    ("TINYINT(1)", 1, {"type": "int16", "optional": True}, 1),
    ("TINYINT UNSIGNED", 255, {"type": "int16", "optional": True}, 255),
    ("SMALLINT", -32768, {"type": "int16", "optional": True}, -32768),
    ("SMALLINT UNSIGNED", 65535, {"type": "int32", "optional": True}, 65535),
    ("MEDIUMINT", -8388608, {"type": "int32", "optional": True}, -8388608),
    ("MEDIUMINT UNSIGNED", 16777215, {"type": "int32", "optional": True}, 16777215),
    ("INT", 2147483647, {"type": "int32", "optional": True}, 2147483647),
    ("INTEGER(11)", -5, {"type": "int32", "optional": True}, -5),
    ("INT UNSIGNED", 4294967295, {"type": "int64", "optional": True}, 4294967295),
    ("BIGINT", -(1 << 63), {"type": "int64", "optional": True}, -(1 << 63)),
    ("BIGINT UNSIGNED", (1 << 64) - 1, {"type": "int64", "optional": True}, -1),
    ("BIGINT UNSIGNED", 42, {"type": "int64", "optional": True}, 42),
    ("SERIAL", 7, {"type": "int64", "optional": False}, 7),
    ("REAL", 1.5, {"type": "float", "optional": True}, 1.5),
    ("FLOAT", 1.5, {"type": "float", "optional": True}, 1.5),
    ("FLOAT(10)", 1.5, {"type": "float", "optional": True}, 1.5),
    ("FLOAT(30)", 1.5, {"type": "double", "optional": True}, 1.5),
    ("FLOAT(7,2)", 1.5, {"type": "double", "optional": True}, 1.5),
    ("DOUBLE", 2.25, {"type": "double", "optional": True}, 2.25),
    ("DOUBLE PRECISION", 2.25, {"type": "double", "optional": True}, 2.25),
    ("DECIMAL(10,2)", Decimal("12.5"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "2", "connect.decimal.precision": "10"}},
     (1250).to_bytes(2, "big", signed=True)),
    ("NUMERIC(5,0)", Decimal("-3"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "0", "connect.decimal.precision": "5"}},
     b"\xfd"),
    ("DECIMAL", Decimal("7"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "0", "connect.decimal.precision": "10"}},
     b"\x07"),
    ("DEC(4,1)", Decimal("128.0"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "1", "connect.decimal.precision": "4"}},
     (1280).to_bytes(2, "big", signed=True)),
    ("CHAR(3)", "ab", {"type": "string", "optional": True}, "ab"),
    ("VARCHAR(255)", "héllo", {"type": "string", "optional": True}, "héllo"),
    ("NVARCHAR(10)", "x", {"type": "string", "optional": True}, "x"),
    ("TINYTEXT", "t", {"type": "string", "optional": True}, "t"),
    ("TEXT", "t", {"type": "string", "optional": True}, "t"),
    ("MEDIUMTEXT", "t", {"type": "string", "optional": True}, "t"),
    ("LONGTEXT", "t", {"type": "string", "optional": True}, "t"),
    ("BINARY(4)", b"\x01\x02", {"type": "bytes", "optional": True}, b"\x01\x02\x00\x00"),
    ("VARBINARY(8)", b"\x00\xff", {"type": "bytes", "optional": True}, b"\x00\xff"),
    ("TINYBLOB", b"a", {"type": "bytes", "optional": True}, b"a"),
    ("BLOB", b"\x00", {"type": "bytes", "optional": True}, b"\x00"),
    ("MEDIUMBLOB", b"m", {"type": "bytes", "optional": True}, b"m"),
    ("LONGBLOB", b"l", {"type": "bytes", "optional": True}, b"l"),
    ("CHAR(4) CHARACTER SET binary", "ab", {"type": "string", "optional": True}, "ab"),
    ("JSON", {"a": [1, 2], "b": None},
     {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}, '{"a": [1, 2], "b": null}'),
    ("JSON", {b"k": b"v"},
     {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}, '{"k": "v"}'),
    ("JSON", '{"a": 1}',
     {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}, '{"a": 1}'),
    ("ENUM('S','M','L')", "M",
     {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
      "parameters": {"allowed": "S,M,L"}},
     "M"),
    ("SET('a','b','c')", {"c", "a"},
     {"type": "string", "optional": True, "name": "io.debezium.data.EnumSet", "version": 1,
      "parameters": {"allowed": "a,b,c"}},
     "a,c"),
    ("SET('a','b','c')", "b,c",
     {"type": "string", "optional": True, "name": "io.debezium.data.EnumSet", "version": 1,
      "parameters": {"allowed": "a,b,c"}},
     "b,c"),
    ("YEAR", 2024, {"type": "int32", "optional": True, "name": "io.debezium.time.Year", "version": 1}, 2024),
    ("YEAR(4)", 1999, {"type": "int32", "optional": True, "name": "io.debezium.time.Year", "version": 1}, 1999),
    ("DATE", dt.date(2024, 1, 2), {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1},
     19724),
    ("DATE", dt.date(1969, 12, 31), {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1},
     -1),
    ("TIME", dt.timedelta(hours=12, minutes=34, seconds=56),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}, 45296000000),
    ("TIME(6)", dt.timedelta(hours=-838, minutes=-59, seconds=-59),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}, -3020399000000),
    ("TIME(3)", dt.timedelta(hours=25, microseconds=500000),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}, 90000500000),
    ("DATETIME", dt.datetime(2018, 6, 20, 6, 37, 3),
     {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1}, 1529476623000),
    ("DATETIME(3)", dt.datetime(2018, 6, 20, 6, 37, 3, 123000),
     {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1}, 1529476623123),
    ("DATETIME(6)", dt.datetime(2018, 6, 20, 6, 37, 3, 123456),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1}, 1529476623123456),
    ("TIMESTAMP", dt.datetime(2018, 6, 20, 13, 37, 3),
     {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1},
     "2018-06-20T13:37:03Z"),
    ("TIMESTAMP(3)", dt.datetime(2018, 6, 20, 13, 37, 3, 120000),
     {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1},
     "2018-06-20T13:37:03.120Z"),
    ("TIMESTAMP(6)", dt.datetime(2018, 6, 20, 6, 37, 3, 5, tzinfo=dt.timezone(dt.timedelta(hours=-7))),
     {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1},
     "2018-06-20T13:37:03.000005Z"),
    ("POINT", SRID_POINT,
     {"type": "struct", "fields": [
         {"type": "double", "optional": False, "field": "x"},
         {"type": "double", "optional": False, "field": "y"},
         {"type": "bytes", "optional": True, "field": "wkb"},
         {"type": "int32", "optional": True, "field": "srid"}],
      "optional": True, "name": "io.debezium.data.geometry.Point", "version": 1, "doc": "Geometry (POINT)"},
     {"x": 1.0, "y": 2.0, "wkb": WKB_POINT, "srid": 4326}),
]
GEOMETRY_SCHEMA = {
    "type": "struct",
    "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
               {"type": "int32", "optional": True, "field": "srid"}],
    "optional": True, "name": "io.debezium.data.geometry.Geometry", "version": 1, "doc": "Geometry",
}
for spatial in ("GEOMETRY", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
                "GEOMETRYCOLLECTION", "GEOMCOLLECTION"):
    TYPE_TABLE.append((spatial, SRID_POINT, GEOMETRY_SCHEMA, {"wkb": WKB_POINT, "srid": 4326}))


@pytest.mark.parametrize("ddl_type, raw, schema, value", TYPE_TABLE,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(TYPE_TABLE)])
def test_type_table(ddl_type, raw, schema, value):
    assert _schema(ddl_type) == schema
    assert _value(ddl_type, raw) == value


@pytest.mark.parametrize("ddl_type", sorted({r[0] for r in TYPE_TABLE}))
def test_null_stays_null_for_nullable_columns(ddl_type):
    assert _value(ddl_type, None) is None


def test_not_null_zero_dates_become_epoch_values():
    # mysql-replication reports '0000-00-00' as None; Debezium emits the epoch for NOT NULL columns
    assert _value("DATE NOT NULL", None) == 0
    assert _value("DATETIME NOT NULL", None) == 0
    assert _value("TIMESTAMP NOT NULL", None) == "1970-01-01T00:00:00Z"


def test_decimal_handling_modes():
    double = TypeModes(decimal_handling="double")
    string = TypeModes(decimal_handling="string")
    assert _schema("DECIMAL(10,2)", double) == {"type": "double", "optional": True}
    assert _value("DECIMAL(10,2)", Decimal("1.5"), double) == 1.5
    assert _schema("DECIMAL(10,2)", string) == {"type": "string", "optional": True}
    assert _value("DECIMAL(10,2)", Decimal("1.5"), string) == "1.50"
    assert _value("DECIMAL(10,2)", Decimal("-0.01"), string) == "-0.01"


def test_bigint_unsigned_precise():
    precise = TypeModes(bigint_unsigned_handling="precise")
    assert _schema("BIGINT UNSIGNED", precise) == {
        "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
        "parameters": {"scale": "0", "connect.decimal.precision": "20"},
    }
    top = (1 << 64) - 1
    assert _value("BIGINT UNSIGNED", top, precise) == top.to_bytes(9, "big", signed=True)
    # signed BIGINT is not affected by the mode
    assert _schema("BIGINT", precise) == {"type": "int64", "optional": True}


def test_time_precision_connect_and_adaptive():
    connect = TypeModes(time_precision="connect")
    assert _schema("DATE", connect)["name"] == "org.apache.kafka.connect.data.Date"
    assert _schema("TIME(6)", connect) == {
        "type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Time", "version": 1}
    assert _value("TIME(6)", dt.timedelta(seconds=1, microseconds=999), connect) == 1000
    assert _schema("DATETIME(6)", connect)["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert _value("DATETIME(6)", dt.datetime(1970, 1, 1, 0, 0, 1, 500), connect) == 1000
    # TIMESTAMP keeps its zoned string in every mode
    assert _schema("TIMESTAMP", connect)["name"] == "io.debezium.time.ZonedTimestamp"
    adaptive = TypeModes(time_precision="adaptive")
    assert _schema("TIME(3)", adaptive)["name"] == "io.debezium.time.Time"
    assert _value("TIME(3)", dt.timedelta(seconds=2), adaptive) == 2000
    assert _schema("TIME(6)", adaptive)["name"] == "io.debezium.time.MicroTime"


@pytest.mark.parametrize(
    "mode, schema_type, expected",
    [("bytes", "bytes", b"\x00\xfa"), ("base64", "string", base64.b64encode(b"\x00\xfa").decode()),
     ("base64-url-safe", "string", base64.urlsafe_b64encode(b"\x00\xfa").decode()), ("hex", "string", "00fa")],
)
def test_binary_handling_modes(mode, schema_type, expected):
    modes = TypeModes(binary_handling=mode)
    assert _schema("VARBINARY(4)", modes)["type"] == schema_type
    assert _value("VARBINARY(4)", b"\x00\xfa", modes) == expected


def test_from_properties_reads_debezium_names_and_rejects_unknown_time_mode():
    modes = TypeModes.from_properties(
        {"decimal.handling.mode": "string", "bigint.unsigned.handling.mode": "precise",
         "time.precision.mode": "connect", "binary.handling.mode": "hex"}
    )
    assert modes == TypeModes("string", "precise", "connect", "hex")
    assert TypeModes.from_properties({}).time_precision == "adaptive_time_microseconds"
    with pytest.raises(MySqlTypeError, match="time.precision.mode"):
        TypeModes.from_properties({"time.precision.mode": "nanoseconds"})


@pytest.mark.parametrize(
    "ddl, expected_default",
    [
        ("INT NOT NULL DEFAULT 5", 5),
        ("INT DEFAULT -5", -5),
        ("VARCHAR(10) NOT NULL DEFAULT 'abc'", "abc"),
        ("BOOLEAN DEFAULT TRUE", True),
        ("BIT(1) DEFAULT b'1'", True),
        ("BIT(4) DEFAULT b'0101'", b"\x05"),
        ("DECIMAL(5,2) DEFAULT '1.5'", (150).to_bytes(2, "big", signed=True)),
        ("DOUBLE DEFAULT 2.5", 2.5),
        ("ENUM('a','b') NOT NULL DEFAULT 'b'", "b"),
        ("DATE DEFAULT '2024-01-02'", 19724),
        ("DATETIME(6) DEFAULT '1970-01-01 00:00:01.000002'", 1000002),
        ("TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP", "1970-01-01T00:00:00Z"),
        ("TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)", "1970-01-01T00:00:00.000Z"),
        ("TIME DEFAULT '01:00:00'", 3600000000),
        ("YEAR DEFAULT 2000", 2000),
        ("INT DEFAULT NULL", None),
        ("INT DEFAULT (1 + 1)", None),
    ],
)
def test_defaults_are_propagated_into_the_schema(ddl, expected_default):
    schema = column_schema(_column(ddl), TypeModes())
    assert schema.default == expected_default


def test_unknown_type_names_the_column():
    from lakecdc.capture.mysql.ddl.model import ColumnDef

    with pytest.raises(MySqlTypeError, match="column 'weird'"):
        column_schema(ColumnDef("weird", "VECTOR", "VECTOR"), TypeModes())


@given(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31),
       st.sampled_from(["", " 12:34:56", " 00:00:00.000"]))
def test_a_snapshot_reads_a_date_with_a_zero_part_as_null(year: int, month: int, day: int, time: str) -> None:
    from lakecdc.capture.mysql.connection import zero_date_as_null

    text = f"{year:04d}-{month:02d}-{day:02d}{time}"
    assert zero_date_as_null(text) == (None if 0 in (year, month, day) else text)
