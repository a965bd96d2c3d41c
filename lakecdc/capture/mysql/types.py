"""MySQL/MariaDB column -> Debezium Connect schema and payload value (Debezium 3.x mapping).

One converter is built per column when a table's structure becomes known (snapshot or DDL),
then applied to every row; nothing here runs per event except the returned closures.

| MySQL type                         | Connect schema (default modes)                                   |
|------------------------------------|------------------------------------------------------------------|
| BOOLEAN / BOOL, BIT(1)             | boolean                                                          |
| BIT(n>1)                           | bytes ``io.debezium.data.Bits`` {length: n}, little-endian       |
| TINYINT, SMALLINT, TINYINT UNSIGNED| int16                                                            |
| SMALLINT UNSIGNED, MEDIUMINT, INT  | int32                                                            |
| INT UNSIGNED, BIGINT               | int64                                                            |
| BIGINT UNSIGNED                    | int64 (``long``) / Decimal scale 0 (``precise``)                 |
| REAL, FLOAT(p<24)                  | float                                                            |
| DOUBLE, FLOAT(p>=24), FLOAT(M,D)   | double                                                           |
| DECIMAL(p,s)                       | bytes Decimal / double / string (``decimal.handling.mode``)      |
| CHAR, VARCHAR, *TEXT               | string                                                           |
| BINARY, VARBINARY, *BLOB           | bytes / base64 / base64-url-safe / hex (``binary.handling.mode``)|
| JSON                               | string ``io.debezium.data.Json``                                 |
| ENUM / SET                         | string ``io.debezium.data.Enum`` / ``EnumSet`` {allowed}         |
| YEAR                               | int32 ``io.debezium.time.Year``                                  |
| DATE                               | int32 ``io.debezium.time.Date`` (days since epoch)               |
| TIME(n)                            | int64 ``io.debezium.time.MicroTime``                             |
| DATETIME(0-3) / DATETIME(4-6)      | int64 ``io.debezium.time.Timestamp`` / ``MicroTimestamp``        |
| TIMESTAMP(n)                       | string ``io.debezium.time.ZonedTimestamp``, UTC, n digits        |
| POINT                              | struct ``io.debezium.data.geometry.Point`` {x, y, wkb, srid}     |
| other spatial types                | struct ``io.debezium.data.geometry.Geometry`` {wkb, srid}        |

``time.precision.mode=connect`` uses Kafka Connect's Date/Time/Timestamp (milliseconds);
``adaptive`` uses ``io.debezium.time.Time`` (int32 ms) for TIME(0-3).

Values arrive from two readers with different Python shapes, and each converter accepts both:
``mysql-replication`` (BIT as '0101' text, SET as a Python set, JSON as parsed objects, TIMESTAMP as
a naive UTC datetime, zero dates as None) and PyMySQL in the snapshot (BIT as bytes, SET as 'a,b'
text, JSON as text, TIMESTAMP as a naive datetime in the session zone, which the snapshot sets to
UTC). Example payload row for ``(id INT, ts TIMESTAMP(3), price DECIMAL(10,2), tags SET('a','b'))``::

    {"id": 1, "ts": "2024-01-02T03:04:05.120Z", "price": "BNI=", "tags": "a,b"}
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from lakecdc.capture.mysql.ddl.datatypes import SPATIAL_TYPES
from lakecdc.capture.mysql.ddl.model import ColumnDef, DefaultKind
from lakecdc.capture.mysql.errors import MySqlTypeError
from lakecdc.events import logical
from lakecdc.events.logical import EXACT, binary_converter
from lakecdc.events.schema import ConnectSchema, primitive
from lakecdc.events.schema import struct as struct_schema

Converter = Callable[[Any], Any]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_TIME_MODES = ("adaptive_time_microseconds", "adaptive", "connect")


@dataclass(frozen=True)
class TypeModes:
    decimal_handling: str = "precise"  # precise | double | string
    bigint_unsigned_handling: str = "long"  # long | precise
    time_precision: str = "adaptive_time_microseconds"  # | adaptive | connect
    binary_handling: str = "bytes"  # bytes | base64 | base64-url-safe | hex

    @classmethod
    def from_config(cls, config: Any) -> TypeModes:
        """The modes of a validated connector configuration (``MySqlConnectorConfig``, whose
        ``time.precision.mode`` default is MySQL's), as the SQL Server and Oracle connectors build theirs."""
        return cls(
            decimal_handling=config.decimal_handling_mode,
            bigint_unsigned_handling=config.bigint_unsigned_handling_mode,
            time_precision=config.time_precision_mode,
            binary_handling=config.binary_handling_mode,
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TypeModes:
        time_mode = props.get("time.precision.mode", "adaptive_time_microseconds").lower()
        if time_mode not in _TIME_MODES:
            raise MySqlTypeError(
                f"property 'time.precision.mode' is '{time_mode}': the MySQL connector supports "
                + ", ".join(_TIME_MODES)
            )
        return cls(
            decimal_handling=props.get("decimal.handling.mode", "precise").lower(),
            bigint_unsigned_handling=props.get("bigint.unsigned.handling.mode", "long").lower(),
            time_precision=time_mode,
            binary_handling=props.get("binary.handling.mode", "bytes").lower(),
        )


# ---- schemas -----------------------------------------------------------------------------------
def column_schema(col: ColumnDef, modes: TypeModes) -> ConnectSchema:
    """The field schema Debezium emits for ``col`` (optional flag and default included)."""
    base = _base_schema(col, modes)
    optional = col.optional
    default = _default_value(col, modes, base)
    if base.type == "struct":
        from dataclasses import replace

        return replace(base, optional=optional)
    return primitive(
        base.type,
        optional,
        name=base.name,
        version=base.version,
        parameters=dict(base.parameters) if base.parameters is not None else None,
        default=default,
    )


def _base_schema(col: ColumnDef, modes: TypeModes) -> ConnectSchema:
    t = col.type_name
    if t == "BOOLEAN" or (t == "BIT" and (col.length or 1) == 1):
        return primitive("boolean")
    if t == "BIT":
        return primitive("bytes", name=logical.BITS, version=1, parameters={"length": str(col.length)})
    if t == "TINYINT":
        return primitive("int16")
    if t == "SMALLINT":
        return primitive("int32" if col.unsigned else "int16")
    if t == "MEDIUMINT":
        return primitive("int32")
    if t == "INT":
        return primitive("int64" if col.unsigned else "int32")
    if t == "BIGINT":
        if col.unsigned and modes.bigint_unsigned_handling == "precise":
            return primitive("bytes", name=logical.DECIMAL, version=1,
                             parameters={"scale": "0", "connect.decimal.precision": "20"})
        return primitive("int64")
    if t in ("REAL", "FLOAT"):
        return primitive("float32")
    if t == "DOUBLE":
        return primitive("float64")
    if t in ("DECIMAL", "NUMERIC"):
        if modes.decimal_handling == "double":
            return primitive("float64")
        if modes.decimal_handling == "string":
            return primitive("string")
        params = {"scale": str(col.scale or 0), "connect.decimal.precision": str(col.length or 10)}
        return primitive("bytes", name=logical.DECIMAL, version=1, parameters=params)
    if t == "JSON":
        return primitive("string", name=logical.JSON, version=1)
    if t == "ENUM":
        return primitive("string", name=logical.ENUM, version=1, parameters={"allowed": ",".join(col.enum_values)})
    if t == "SET":
        return primitive(
            "string", name=logical.ENUM_SET, version=1, parameters={"allowed": ",".join(col.enum_values)}
        )
    if col.is_binary_string:
        return primitive("bytes" if modes.binary_handling == "bytes" else "string")
    if t in ("CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "INET4", "INET6", "UUID"):
        return primitive("string")
    if t == "YEAR":
        return primitive("int32", name=logical.YEAR, version=1)
    if t == "DATE":
        if modes.time_precision == "connect":
            return primitive("int32", name=logical.CONNECT_DATE, version=1)
        return primitive("int32", name=logical.DATE, version=1)
    if t == "TIME":
        if modes.time_precision == "connect":
            return primitive("int32", name=logical.CONNECT_TIME, version=1)
        if modes.time_precision == "adaptive" and (col.length or 0) <= 3:
            return primitive("int32", name=logical.TIME, version=1)
        return primitive("int64", name=logical.MICRO_TIME, version=1)
    if t == "DATETIME":
        if modes.time_precision == "connect":
            return primitive("int64", name=logical.CONNECT_TIMESTAMP, version=1)
        if (col.length or 0) <= 3:
            return primitive("int64", name=logical.TIMESTAMP, version=1)
        return primitive("int64", name=logical.MICRO_TIMESTAMP, version=1)
    if t == "TIMESTAMP":
        return primitive("string", name=logical.ZONED_TIMESTAMP, version=1)
    if t == "POINT":
        return struct_schema(
            [
                ("x", primitive("float64")),
                ("y", primitive("float64")),
                ("wkb", primitive("bytes", True)),
                ("srid", primitive("int32", True)),
            ],
            name=logical.POINT,
            version=1,
            doc="Geometry (POINT)",
        )
    if t in SPATIAL_TYPES:
        return struct_schema(
            [("wkb", primitive("bytes")), ("srid", primitive("int32", True))],
            name=logical.GEOMETRY,
            version=1,
            doc="Geometry",
        )
    raise MySqlTypeError(f"column '{col.name}' has type {col.type_expression}, which lakecdc cannot map")


# ---- values ------------------------------------------------------------------------------------
def value_converter(col: ColumnDef, modes: TypeModes) -> Converter:
    """A function turning a driver value (binlog or snapshot) into the Connect payload value."""
    convert = _non_null_converter(col, modes)
    zero = _zero_value(col, modes)

    def run(value: Any) -> Any:
        if value is None:
            return zero  # NULL, or a zero date the binlog reader reported as None
        return convert(value)

    return run


_PASSTHROUGH_TYPES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "YEAR", "ENUM",
                                "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT"})


def is_passthrough(col: ColumnDef, modes: TypeModes) -> bool:
    """True when both readers already hand over the payload value (int, str): no conversion call.

    The row builders skip these columns' converters, which is most of a typical row."""
    return col.type_name in _PASSTHROUGH_TYPES or (col.type_name == "BIGINT" and not col.unsigned)


def _zero_value(col: ColumnDef, modes: TypeModes) -> Any:
    """Debezium turns zero dates into null for nullable columns, into the epoch otherwise."""
    if col.optional or col.type_name not in ("DATE", "DATETIME", "TIMESTAMP"):
        return None
    if col.type_name == "TIMESTAMP":
        return _format_zoned(_EPOCH, col.length or 0)
    return 0


def _non_null_converter(col: ColumnDef, modes: TypeModes) -> Converter:
    t = col.type_name
    if t == "BOOLEAN":
        return lambda v: bool(int(v)) if not isinstance(v, bool) else v
    if t == "BIT":
        return _bit_converter(col.length or 1)
    if t in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT"):
        return int
    if t == "BIGINT":
        if col.unsigned and modes.bigint_unsigned_handling == "precise":
            return lambda v: _unscaled_bytes(Decimal(int(v)), 0)
        if col.unsigned:
            return lambda v: v - (1 << 64) if v >= (1 << 63) else int(v)
        return int
    if t in ("REAL", "FLOAT", "DOUBLE"):
        return float
    if t in ("DECIMAL", "NUMERIC"):
        return _decimal_converter(col.scale or 0, modes.decimal_handling)
    if t == "JSON":
        return _json_text
    if t == "ENUM":
        return _text
    if t == "SET":
        order = {v.lower(): i for i, v in enumerate(col.enum_values)}
        return lambda v: _set_text(v, order)
    if col.is_binary_string:
        pad = (col.length or 1) if t == "BINARY" else None
        return _binary_converter(modes.binary_handling, pad)
    if t in ("CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "INET4", "INET6", "UUID"):
        return _text
    if t == "YEAR":
        return _year
    if t == "DATE":
        return _days
    if t == "TIME":
        if modes.time_precision == "connect" or (modes.time_precision == "adaptive" and (col.length or 0) <= 3):
            return lambda v: _micros_of_time(v) // 1000
        return _micros_of_time
    if t == "DATETIME":
        if modes.time_precision == "connect" or (col.length or 0) <= 3:
            return lambda v: _micros_since_epoch(v) // 1000
        return _micros_since_epoch
    if t == "TIMESTAMP":
        fsp = col.length or 0
        return lambda v: _format_zoned(_as_datetime(v), fsp)
    if t == "POINT":
        return _point
    if t in SPATIAL_TYPES:
        return _geometry
    raise MySqlTypeError(f"column '{col.name}' has type {col.type_expression}, which lakecdc cannot map")


def _text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")
    return str(v)


def _bit_converter(length: int) -> Converter:
    n_bytes = (length + 7) // 8

    def to_int(v: Any) -> int:
        if isinstance(v, str):  # binlog reader: '0101'
            return int(v, 2) if v else 0
        if isinstance(v, (bytes, bytearray)):  # PyMySQL: big-endian bytes
            return int.from_bytes(v, "big")
        return int(v)

    if length == 1:
        return lambda v: to_int(v) != 0
    return lambda v: to_int(v).to_bytes(n_bytes, "little")


def _unscaled_bytes(value: Decimal, scale: int) -> bytes:
    """Connect Decimal payload: two's-complement big-endian bytes of the unscaled integer."""
    unscaled = int(value.scaleb(scale, EXACT).to_integral_value(context=EXACT))
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)


def _decimal_converter(scale: int, mode: str) -> Converter:
    quantum = Decimal(1).scaleb(-scale)

    def to_decimal(v: Any) -> Decimal:
        d = v if isinstance(v, Decimal) else Decimal(str(v))
        try:
            return d.quantize(quantum, context=EXACT)
        except InvalidOperation:
            return d

    if mode == "double":
        return lambda v: float(to_decimal(v))
    if mode == "string":
        return lambda v: format(to_decimal(v), "f")

    def precise(v: Any) -> bytes:
        # same_quantum: the exponent is -scale (as_tuple() would build a named tuple per value)
        if isinstance(v, Decimal) and v.same_quantum(quantum):
            unscaled = int(v.scaleb(scale, EXACT))  # the value already has the column's scale
        else:
            unscaled = int(to_decimal(v).scaleb(scale, EXACT).to_integral_value(context=EXACT))
        return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)

    return precise


def _json_text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8")
    if isinstance(v, str):
        return v
    return json.dumps(_decode_json_bytes(v), ensure_ascii=False)


def _decode_json_bytes(v: Any) -> Any:
    """mysql-replication may hand JSON object keys and strings as bytes."""
    if isinstance(v, dict):
        return {_decode_json_bytes(k): _decode_json_bytes(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode_json_bytes(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")
    return v


def _set_text(v: Any, order: dict[str, int]) -> str:
    if isinstance(v, str):
        members = [m for m in v.split(",") if m]
    else:
        members = [_text(m) for m in v]
    members.sort(key=lambda m: order.get(m.lower(), len(order)))
    return ",".join(members)


def _binary_converter(mode: str, pad_to: int | None) -> Converter:
    def raw(v: Any) -> bytes:
        b = bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else str(v).encode("latin-1")
        if pad_to is not None and len(b) < pad_to:
            b = b + b"\x00" * (pad_to - len(b))  # the binlog drops BINARY(n)'s trailing zero bytes
        return b

    return binary_converter(mode, raw)


def _year(v: Any) -> int:
    if isinstance(v, dt.date):
        return v.year
    return int(v)


def _days(v: Any) -> int:
    if isinstance(v, dt.datetime):
        v = v.date()
    if isinstance(v, str):
        v = dt.date.fromisoformat(v)
    return (v - _EPOCH_DATE).days


def _micros_of_time(v: Any) -> int:
    if isinstance(v, dt.timedelta):
        return (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return _parse_time_text(str(v))


def _parse_time_text(text: str) -> int:
    neg = text.startswith("-")
    body = text.lstrip("-")
    hms, _, frac = body.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    micros = ((h * 60 + m) * 60 + s) * 1_000_000 + int((frac + "000000")[:6] or 0)
    return -micros if neg else micros


def _as_datetime(v: Any) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    return dt.datetime.fromisoformat(str(v))


def _micros_since_epoch(v: Any) -> int:
    d = _as_datetime(v) - _EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _format_zoned(v: dt.datetime, fsp: int) -> str:
    """ISO-8601 UTC with exactly the column's fractional digits (Debezium 3.x ZonedTimestamp)."""
    # datetime.isoformat (C) of a naive value is "YYYY-MM-DDTHH:MM:SS.ffffff": 20 characters up to
    # the fraction, which is cut to the column's digits
    if v.tzinfo is not None:  # callers pass UTC values (_as_datetime): only the fields count
        v = v.replace(tzinfo=None)
    if fsp > 0:
        return v.isoformat(timespec="microseconds")[: 20 + fsp] + "Z"
    return v.isoformat(timespec="seconds") + "Z"


def _split_geometry(v: Any) -> tuple[bytes, int | None]:
    """MySQL's internal geometry value is a 4-byte little-endian SRID followed by WKB. SRID 0 is
    null: Debezium's ``BinlogGeometry.fromBytes`` "uses null for an unset/unknown SRID"."""
    b = bytes(v)
    if len(b) >= 9 and b[4] in (0, 1):
        return b[4:], struct.unpack("<I", b[:4])[0] or None
    return b, None


def _geometry(v: Any) -> dict[str, Any]:
    wkb, srid = _split_geometry(v)
    return {"wkb": wkb, "srid": srid}


def _point(v: Any) -> dict[str, Any]:
    wkb, srid = _split_geometry(v)
    order = "<" if wkb[0] == 1 else ">"
    x, y = struct.unpack(order + "dd", wkb[5:21])
    return {"x": x, "y": y, "wkb": wkb, "srid": srid}


# ---- defaults ----------------------------------------------------------------------------------
def _default_value(col: ColumnDef, modes: TypeModes, base: ConnectSchema) -> Any:
    """The column default as a Connect value, as Debezium's MySqlDefaultValueConverter does."""
    d = col.default
    if d.kind in (DefaultKind.NONE, DefaultKind.NULL, DefaultKind.EXPRESSION) or base.type == "struct":
        return None
    convert = _non_null_converter(col, modes)
    t = col.type_name
    try:
        if d.kind is DefaultKind.CURRENT_TIMESTAMP:
            if t in ("TIMESTAMP", "DATETIME", "DATE"):
                return convert(_EPOCH)  # Debezium uses 1970-01-01 00:00:00 for CURRENT_TIMESTAMP
            return None
        text = d.text or ""
        if d.literal_kind == "bool":
            text = "1" if text.upper() == "TRUE" else "0"
        if d.literal_kind == "bits":
            return convert(text) if t in ("BIT", "BOOLEAN") else convert(int(text, 2))
        if d.literal_kind == "hex":
            raw = bytes.fromhex(text)
            return convert(raw) if col.is_binary_string or t == "BIT" else convert(int(text, 16))
        if t in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR"):
            return convert(int(Decimal(text)))
        if t == "BOOLEAN":
            return convert(int(Decimal(text)))
        if t == "BIT":
            return convert(int(Decimal(text)).to_bytes(((col.length or 1) + 7) // 8, "big"))
        if t in ("REAL", "FLOAT", "DOUBLE"):
            return float(text)
        if t in ("DECIMAL", "NUMERIC"):
            return convert(Decimal(text))
        if t == "DATE":
            if text.startswith("0000"):
                return None if col.optional else 0
            return convert(dt.date.fromisoformat(text[:10]))
        if t in ("DATETIME", "TIMESTAMP"):
            if text.startswith("0000"):
                return None if col.optional else convert(_EPOCH)
            return convert(dt.datetime.fromisoformat(text.replace("T", " ")))
        if t == "TIME":
            return convert(dt.timedelta(microseconds=_parse_time_text(text)))
        if col.is_binary_string:
            return convert(text.encode("utf-8"))
        return convert(text)
    except (ValueError, ArithmeticError):
        return None  # an unparseable default is left out, as Debezium logs and skips it
