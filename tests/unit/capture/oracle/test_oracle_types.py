"""Oracle type mapping: schemas per Debezium's OracleValueConverters and values from both the
snapshot (driver values / TO_CHAR text) and SQL_REDO literals."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.logminer.dml_parser import parse_dml
from lakecdc.capture.oracle.types import UNAVAILABLE, TypeModes, column_schema, value_converter
from lakecdc.events import logical as lg


def col(data_type: str, precision: int | None = None, scale: int | None = None, nullable: bool = True) -> ColumnInfo:
    return ColumnInfo("C", data_type, 22, precision, scale, nullable, None, 1)


def redo_value(literal: str) -> Any:
    return parse_dml(f'insert into "A"."T"("C") values ({literal});').new["C"]


@pytest.mark.parametrize(("column", "schema_type", "name"), [
    (col("NUMBER", 2, 0), "int8", None), (col("NUMBER", 4, 0), "int16", None),
    (col("NUMBER", 9, 0), "int32", None), (col("NUMBER", 18, 0), "int64", None),
    (col("NUMBER", 19, 0), "bytes", lg.DECIMAL), (col("NUMBER", 10, 2), "bytes", lg.DECIMAL),
    (col("NUMBER", 5, -2), "int32", None), (col("NUMBER"), "struct", lg.VARIABLE_SCALE_DECIMAL),
    (col("BINARY_FLOAT"), "float", None), (col("BINARY_DOUBLE"), "double", None),
    (col("VARCHAR2"), "string", None), (col("NVARCHAR2"), "string", None), (col("CHAR"), "string", None),
    (col("DATE"), "int64", lg.TIMESTAMP), (col("TIMESTAMP(3)", scale=3), "int64", lg.TIMESTAMP),
    (col("TIMESTAMP(6)", scale=6), "int64", lg.MICRO_TIMESTAMP),
    (col("TIMESTAMP(9)", scale=9), "int64", lg.NANO_TIMESTAMP),
    (col("TIMESTAMP(6) WITH TIME ZONE", scale=6), "string", lg.ZONED_TIMESTAMP),
    (col("TIMESTAMP(6) WITH LOCAL TIME ZONE", scale=6), "string", lg.ZONED_TIMESTAMP),
    (col("INTERVAL YEAR(2) TO MONTH"), "int64", lg.MICRO_DURATION),
    (col("INTERVAL DAY(2) TO SECOND(6)"), "int64", lg.MICRO_DURATION),
    (col("RAW"), "bytes", None), (col("BLOB"), "bytes", None), (col("CLOB"), "string", None),
])
def test_schemas_adaptive_precise(column: ColumnInfo, schema_type: str, name: str | None) -> None:
    schema = column_schema(column, TypeModes())
    assert (schema.type, schema.name) == (schema_type, name)


def test_decimal_modes_and_params() -> None:
    c = col("NUMBER", 10, 2)
    assert dict(column_schema(c, TypeModes()).parameters or ()) == {"scale": "2", "connect.decimal.precision": "10"}
    assert value_converter(c, TypeModes())(redo_value("'12.5'")) == lg.decimal_to_bytes(Decimal("12.50"), 2)
    assert value_converter(c, TypeModes())(Decimal("12.5")) == lg.decimal_to_bytes(Decimal("12.50"), 2)
    assert value_converter(c, TypeModes(decimal_handling="double"))(redo_value("'12.5'")) == 12.5
    assert value_converter(c, TypeModes(decimal_handling="string"))(redo_value("'12.5'")) == "12.50"
    assert column_schema(c, TypeModes(decimal_handling="double")).type == "double"
    assert value_converter(col("NUMBER", 9, 0), TypeModes())(redo_value("'1004'")) == 1004
    assert value_converter(col("NUMBER"), TypeModes())(redo_value("'3.25'")) == \
        lg.variable_decimal_to_connect(Decimal("3.25"))


def test_temporal_values_from_redo_and_snapshot() -> None:
    modes = TypeModes()
    date = value_converter(col("DATE"), modes)
    assert date(redo_value("TO_DATE('2018-03-03 13:52:34', 'YYYY-MM-DD HH24:MI:SS')")) == 1520085154000
    assert date(dt.datetime(2018, 3, 3, 13, 52, 34)) == 1520085154000
    nano = value_converter(col("TIMESTAMP(9)", scale=9), modes)
    assert nano(redo_value("TO_TIMESTAMP('2018-03-03 13:52:34.123456789')")) == 1520085154123456789
    assert nano("2018-03-03 13:52:34.123456789") == 1520085154123456789  # snapshot TO_CHAR text
    micro = value_converter(col("TIMESTAMP(6)", scale=6), TypeModes(time_precision="connect"))
    assert micro(redo_value("TO_TIMESTAMP('2018-03-03 13:52:34.123456')")) == 1520085154123
    tz = value_converter(col("TIMESTAMP(6) WITH TIME ZONE", scale=6), modes)
    assert tz(redo_value("TO_TIMESTAMP_TZ('2018-03-03 13:52:34.123456 +02:00')")) == "2018-03-03T13:52:34.123456+02:00"
    ltz = value_converter(col("TIMESTAMP(6) WITH LOCAL TIME ZONE", scale=6), modes)
    assert ltz("2018-03-03 13:52:34.123456000 +00:00") == "2018-03-03T13:52:34.123456Z"  # snapshot: read at UTC
    ym = value_converter(col("INTERVAL YEAR(2) TO MONTH"), modes)
    assert ym(redo_value("TO_YMINTERVAL('+01-02')")) == lg.micro_duration(years=1, months=2)
    ds = value_converter(col("INTERVAL DAY(2) TO SECOND(6)"), TypeModes(interval_handling="string"))
    assert ds(redo_value("TO_DSINTERVAL('-01 02:03:04.500000')")) == lg.interval_text(
        days=-1, hours=-2, minutes=-3, seconds=Decimal("-4.5"))


def test_binary_strings_lobs_and_nulls() -> None:
    assert value_converter(col("RAW"), TypeModes())(redo_value("HEXTORAW('0a0b')")) == b"\x0a\x0b"
    assert value_converter(col("RAW"), TypeModes(binary_handling="hex"))(b"\x0a\x0b") == "0a0b"
    assert value_converter(col("RAW"), TypeModes(binary_handling="base64"))(b"\x0a\x0b") == "Cgs="
    assert value_converter(col("NVARCHAR2"), TypeModes())(redo_value("UNISTR('caf\\00e9')")) == "café"
    assert value_converter(col("VARCHAR2"), TypeModes())(redo_value("'O''Brien'")) == "O'Brien"
    assert value_converter(col("VARCHAR2"), TypeModes())(None) is None
    assert value_converter(col("BINARY_FLOAT"), TypeModes())(redo_value("'1.5'")) == 1.5
    clob_off = value_converter(col("CLOB"), TypeModes())
    assert clob_off("text") is None
    clob = value_converter(col("CLOB"), TypeModes(lob_enabled=True))
    assert clob("text") == "text" and clob(UNAVAILABLE) == "__debezium_unavailable_value"
    assert clob(redo_value("EMPTY_CLOB()")) == "__debezium_unavailable_value"
    blob = value_converter(col("BLOB"), TypeModes(lob_enabled=True))
    assert blob(UNAVAILABLE) == b"__debezium_unavailable_value"
