"""SQL Server column types -> Connect schemas and value converters (Debezium 3.x
``SqlServerValueConverters``, checked against it in tests/unit/capture/sqlserver/test_types_vs_debezium.py).

Values arrive as pymssql returns them: ``bool``, ``int``, ``float``, ``Decimal``, ``str``,
``bytes``, ``uuid.UUID``, ``datetime.date``/``time``/``datetime`` (aware for datetimeoffset).

==========================  =======================================================================
SQL Server                  Connect schema (``time.precision.mode=adaptive``; ``connect`` in brackets)
==========================  =======================================================================
bit                         boolean
tinyint, smallint           int16
int / bigint                int32 / int64
real / float                float / double
decimal, numeric            Decimal bytes (scale, connect.decimal.precision); double; string
money / smallmoney          Decimal scale 4, precision 19 / 10 (same modes)
char, varchar, text,        string (char/nchar keep their padding)
nchar, nvarchar, ntext
xml                         string io.debezium.data.Xml
uniqueidentifier            string, upper case as SQL Server prints it
date                        int32 io.debezium.time.Date [org.apache.kafka.connect.data.Date]
time(0-3) / (4-6) / (7)     int32 Time ms / int64 MicroTime / int64 NanoTime [Connect Time, ms]
datetime, smalldatetime,    int64 Timestamp ms [Connect Timestamp]
datetime2(0-3)
datetime2(4-6) / (7)        int64 MicroTimestamp / NanoTimestamp [Connect Timestamp, ms]
datetimeoffset              string io.debezium.time.ZonedTimestamp, the value's own offset:
                            ``2018-06-20T17:13:16.945+02:00`` (``Z`` for +00:00)
binary, varbinary, image,   bytes; base64 / base64-url-safe / hex strings per binary.handling.mode
timestamp (rowversion)
==========================  =======================================================================

pymssql returns times to the microsecond: the seventh fractional digit of ``time(7)`` /
``datetime2(7)`` / ``datetimeoffset(7)`` is not available to this connector (Debezium's JDBC driver
has it), so those nanosecond values always end in ``00``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.sqlserver.connection import ColumnDef
from lakecdc.capture.sqlserver.errors import SqlServerTypeError
from lakecdc.events import logical
from lakecdc.events.schema import ConnectSchema, primitive

Converter = Callable[[Any], Any]

_INTEGERS = {"tinyint": "int16", "smallint": "int16", "int": "int32", "bigint": "int64"}
_STRINGS = frozenset({"char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname"})
_BINARIES = frozenset({"binary", "varbinary", "image", "timestamp", "rowversion"})
_MONEY = {"money": 19, "smallmoney": 10}


@dataclass(frozen=True)
class TypeModes:
    decimal: str = "precise"  # precise | double | string
    time: str = "adaptive"  # adaptive | connect
    binary: str = "bytes"  # bytes | base64 | base64-url-safe | hex

    @classmethod
    def from_config(cls, config: Any) -> TypeModes:
        return cls(config.decimal_handling_mode, config.time_precision_mode, config.binary_handling_mode)


def _fraction_digits(col: ColumnDef) -> int:
    if col.type_name == "datetime":
        return 3
    if col.type_name == "smalldatetime":
        return 0
    return 7 if col.datetime_precision is None else int(col.datetime_precision)


def _decimal_shape(col: ColumnDef) -> tuple[int, int]:
    if col.type_name in _MONEY:
        return _MONEY[col.type_name], 4
    return int(col.precision or 18), int(col.scale or 0)


def column_schema(col: ColumnDef, modes: TypeModes) -> ConnectSchema:
    """The Connect schema of a column: optional when nullable, with the column default (Debezium's
    ``SqlServerDefaultValueConverter``)."""
    schema = _base_schema(col, modes)
    default = default_value(col, modes)
    return schema if default is None else dataclasses.replace(schema, default=default)


def _base_schema(col: ColumnDef, modes: TypeModes) -> ConnectSchema:
    t, opt = col.type_name, col.nullable
    if t == "bit":
        return primitive("boolean", opt)
    if t in _INTEGERS:
        return primitive(_INTEGERS[t], opt)
    if t == "real":
        return primitive("float32", opt)
    if t == "float":
        return primitive("float64", opt)
    if t in ("decimal", "numeric") or t in _MONEY:
        precision, scale = _decimal_shape(col)
        if modes.decimal == "double":
            return primitive("float64", opt)
        if modes.decimal == "string":
            return primitive("string", opt)
        return logical.decimal_schema(scale, precision, optional=opt)
    if t in _STRINGS or t == "uniqueidentifier":
        return primitive("string", opt)
    if t == "xml":
        return logical.named("string", logical.XML, opt)
    if t == "date":
        return logical.named("int32", logical.CONNECT_DATE if modes.time == "connect" else logical.DATE, opt)
    if t == "time":
        if modes.time == "connect":
            return logical.named("int32", logical.CONNECT_TIME, opt)
        p = _fraction_digits(col)
        if p <= 3:
            return logical.named("int32", logical.TIME, opt)
        return logical.named("int64", logical.MICRO_TIME if p <= 6 else logical.NANO_TIME, opt)
    if t in ("datetime", "smalldatetime", "datetime2"):
        if modes.time == "connect":
            return logical.named("int64", logical.CONNECT_TIMESTAMP, opt)
        p = _fraction_digits(col)
        if p <= 3:
            return logical.named("int64", logical.TIMESTAMP, opt)
        return logical.named("int64", logical.MICRO_TIMESTAMP if p <= 6 else logical.NANO_TIMESTAMP, opt)
    if t == "datetimeoffset":
        return logical.named("string", logical.ZONED_TIMESTAMP, opt)
    if t in _BINARIES:
        return primitive("bytes" if modes.binary == "bytes" else "string", opt)
    raise SqlServerTypeError(
        f"column '{col.name}' has SQL Server type '{t}', which lakecdc cannot map to a Connect schema; "
        "exclude it with column.exclude.list"
    )


def value_converter(col: ColumnDef, modes: TypeModes) -> Converter:
    """pymssql value -> Connect value; None passes through."""
    convert = _non_null(col, modes)
    return lambda v: None if v is None else convert(v)


def _non_null(col: ColumnDef, modes: TypeModes) -> Converter:
    t = col.type_name
    if t == "bit":
        return bool
    if t in _INTEGERS:
        return int
    if t in ("real", "float"):
        return float
    if t in ("decimal", "numeric") or t in _MONEY:
        return _decimal(_decimal_shape(col)[1], modes.decimal)
    if t in _STRINGS or t == "xml":
        return str
    if t == "uniqueidentifier":
        return lambda v: str(v).upper()
    if t == "date":
        return lambda v: (_as_date(v) - logical.EPOCH_DATE).days
    if t == "time":
        p = 3 if modes.time == "connect" else _fraction_digits(col)
        if p <= 3:
            return lambda v: _micros_of_day(v) // 1000
        if p <= 6:
            return _micros_of_day
        return lambda v: _micros_of_day(v) * 1000
    if t in ("datetime", "smalldatetime", "datetime2"):
        p = 3 if modes.time == "connect" else _fraction_digits(col)
        if p <= 3:
            return lambda v: _epoch_micros(v) // 1000
        if p <= 6:
            return _epoch_micros
        return lambda v: _epoch_micros(v) * 1000
    if t == "datetimeoffset":
        return zoned_text
    if t in _BINARIES:
        return _binary(modes.binary)
    raise SqlServerTypeError(f"column '{col.name}': no converter for SQL Server type '{t}'")


def _decimal(scale: int, mode: str) -> Converter:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def exact(v: Any) -> decimal.Decimal:
        d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
        return d.quantize(quantum, context=logical.EXACT) if d.as_tuple().exponent != -scale else d

    if mode == "double":
        return lambda v: float(exact(v))
    if mode == "string":
        return lambda v: format(exact(v), "f")
    return lambda v: logical.decimal_to_bytes(exact(v), scale)


def _as_date(v: Any) -> dt.date:
    return v.date() if isinstance(v, dt.datetime) else v


def _micros_of_day(v: Any) -> int:
    t = v.time() if isinstance(v, dt.datetime) else v
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _epoch_micros(v: Any) -> int:
    """A zone-less datetime as if in UTC (Debezium SQL Server documentation, "Timestamp
    values": the JVM's time zone does not matter)."""
    if not isinstance(v, dt.datetime):
        v = dt.datetime.combine(v, dt.time())
    delta = v.replace(tzinfo=None) - logical.EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def zoned_text(v: dt.datetime) -> str:
    """``datetimeoffset`` as Debezium writes it: ISO-8601 with the value's own offset, the
    fraction without trailing zeros, ``Z`` for a zero offset."""
    offset = v.utcoffset() or dt.timedelta(0)
    text = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if v.microsecond:
        text += "." + f"{v.microsecond:06d}".rstrip("0")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    hours, mins = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}:{mins:02d}"


def _raw_bytes(v: Any) -> bytes:
    return bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else str(v).encode("latin-1")


def _binary(mode: str) -> Converter:
    return logical.binary_converter(mode, _raw_bytes)


# ---- defaults ------------------------------------------------------------------------------------
_INT_RANGE = {"tinyint": (0, 255), "smallint": (-(2**15), 2**15 - 1), "int": (-(2**31), 2**31 - 1),
              "bigint": (-(2**63), 2**63 - 1)}


def _unwrap(expr: str) -> str:
    """``((0))`` -> ``0``, ``(N'x')`` -> ``N'x'``: the parentheses SQL Server keeps around defaults."""
    text = expr.strip()
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += 1 if ch == "(" else -1 if ch == ")" else 0
            if depth == 0 and i < len(text) - 1:
                return text  # "(1)+(2)": the outer parentheses are not one group
        text = text[1:-1].strip()
    return text


def _literal(col: ColumnDef, text: str) -> Any:
    t = col.type_name
    if t in _STRINGS or t == "uniqueidentifier":
        if text.startswith("N'") and text.endswith("'") and len(text) >= 3:
            return text[2:-1]
        if text.startswith("'") and text.endswith("'") and len(text) >= 2:
            return text[1:-1]  # Debezium keeps doubled quotes ('O''Brien') as they are
        return None
    if t == "bit":
        return int(text) != 0
    if t in _INTEGERS:
        value = int(text)
        low, high = _INT_RANGE[t]
        return value if low <= value <= high else None
    if t in ("real", "float"):
        return float(text)
    if t in ("decimal", "numeric") or t in _MONEY:
        return decimal.Decimal(text)
    if t in ("binary", "varbinary", "image") and text.lower().startswith("0x"):
        return bytes.fromhex(text[2:])
    # temporal defaults ('2019-01-01', getdate()) Debezium evaluates on the server; lakecdc does not
    return None


def default_value(col: ColumnDef, modes: TypeModes) -> Any:
    """The column default as a Connect value, for the literal defaults Debezium's
    ``SqlServerDefaultValueConverter`` parses without a query; None for none, NULL, functions and
    expressions (``newid()``, ``NEXT VALUE FOR``, ``(1)+(2)``)."""
    if col.default is None:
        return None
    text = _unwrap(col.default)
    if text.upper() == "NULL":
        return None
    try:
        value = _literal(col, text)
    except (ValueError, decimal.InvalidOperation):
        return None
    if value is None:
        return None
    if isinstance(value, decimal.Decimal) and modes.decimal == "string":
        return format(value, "f")  # Debezium: the literal as written, not rescaled to the column
    return value_converter(col, modes)(value)
