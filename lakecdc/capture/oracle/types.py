"""Oracle column types -> Connect schemas and value converters (Debezium 3.x ``OracleValueConverters``).

=====================================  =========================================================
Oracle type                            Connect schema
=====================================  =========================================================
NUMBER(p,s), s <= 0, p - s < 19        int8 / int16 / int32 / int64 by p - s (< 3, < 5, < 10, < 19);
                                       for s = 0 only with ``decimal.handling.mode=precise``
NUMBER(p,s) otherwise, INTEGER         Decimal(scale s, precision p) / double / string
                                       (``decimal.handling.mode`` precise / double / string)
NUMBER, FLOAT(b)                       VariableScaleDecimal / double / string
BINARY_FLOAT / BINARY_DOUBLE           float / double
CHAR, VARCHAR2, NCHAR, NVARCHAR2       string
ROWID, UROWID                          string
DATE                                   io.debezium.time.Timestamp (ms; Oracle DATE has a time)
TIMESTAMP(p)                           Timestamp (p <= 3) / MicroTimestamp (p <= 6) / NanoTimestamp
                                       (``adaptive``); ``connect``: Connect Timestamp;
                                       ``microseconds`` / ``nanoseconds``: Micro/NanoTimestamp
TIMESTAMP(p) WITH TIME ZONE            io.debezium.time.ZonedTimestamp (offset kept)
TIMESTAMP(p) WITH LOCAL TIME ZONE      io.debezium.time.ZonedTimestamp (offset of the redo literal;
                                       snapshots read it at UTC)
INTERVAL YEAR TO MONTH / DAY TO SECOND MicroDuration (``interval.handling.mode=numeric``) /
                                       io.debezium.time.Interval (``string``)
RAW, BLOB                              bytes (``binary.handling.mode``: bytes/base64/base64-url-safe/hex)
CLOB, NCLOB                            string
=====================================  =========================================================

Values arrive in two shapes: from a snapshot read (python-oracledb values: ``int``, ``Decimal``,
``float``, ``str``, ``bytes``, ``datetime``; temporal and interval columns are read as text in the
session's NLS formats, see ``snapshot.select_list``) and from ``SQL_REDO`` (quoted text, or a
:class:`~lakecdc.capture.oracle.logminer.dml_parser.RedoCall` such as ``TO_DATE(...)``). Both end as
the same Connect value. LOB columns carry ``unavailable.value.placeholder`` when the redo does not
contain them (an update that left the LOB alone); with ``lob.enabled=false`` they are null.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.errors import OracleTypeError
from lakecdc.events import logical as lg
from lakecdc.events.schema import ConnectSchema, primitive
from lakecdc.events.values import Float32

Converter = Callable[[Any], Any]

#: Session formats (set by ``connection.NLS_SETUP``) in which both redo literals and snapshot text
#: arrive.
DATE_FORMAT = "YYYY-MM-DD HH24:MI:SS"
TIMESTAMP_FORMAT = "YYYY-MM-DD HH24:MI:SS.FF9"
TIMESTAMP_TZ_FORMAT = "YYYY-MM-DD HH24:MI:SS.FF9 TZH:TZM"

_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?:\s*([+-]\d{1,2}):?(\d{2}))?")
_YM = re.compile(r"([+-])?(\d+)-(\d+)")
_DS = re.compile(r"([+-])?(\d+) (\d+):(\d+):(\d+)(?:\.(\d{1,9}))?")
_TIMESTAMP_TYPE = re.compile(r"TIMESTAMP(?:\((\d)\))?( WITH (LOCAL )?TIME ZONE)?")
_INTERVAL_TYPE = re.compile(r"INTERVAL (YEAR|DAY)(?:\(\d\))? TO (MONTH|SECOND)(?:\(\d\))?")

STRING_TYPES = frozenset({"CHAR", "VARCHAR2", "VARCHAR", "NCHAR", "NVARCHAR2", "ROWID", "UROWID"})
LOB_TYPES = frozenset({"CLOB", "NCLOB", "BLOB"})


@dataclass(frozen=True)
class TypeModes:
    decimal_handling: str = "precise"
    time_precision: str = "adaptive"
    binary_handling: str = "bytes"
    interval_handling: str = "numeric"
    lob_enabled: bool = False
    unavailable_placeholder: str = "__debezium_unavailable_value"

    @classmethod
    def from_config(cls, config: Any) -> TypeModes:
        return cls(config.decimal_handling_mode, config.time_precision_mode, config.binary_handling_mode,
                   config.interval_handling_mode, config.lob_enabled, config.unavailable_value_placeholder)


class Unavailable:
    """A LOB value the redo does not carry (Debezium's ``UNAVAILABLE_VALUE``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNAVAILABLE"


UNAVAILABLE = Unavailable()


def _kind(col: ColumnInfo) -> str:
    t = col.data_type.upper()
    if t == "NUMBER":
        if col.scale is None and col.precision is None:
            return "varnumber"
        scale = col.scale or 0
        precision = col.precision if col.precision is not None else 38
        if scale <= 0 and precision - scale < 19:
            return "integer"
        return "decimal"
    if t == "FLOAT":
        return "varnumber"
    if t in ("BINARY_FLOAT", "BINARY_DOUBLE", "DATE") or t in STRING_TYPES:
        return t if t not in STRING_TYPES else "string"
    if t in ("RAW", "BLOB"):
        return "binary"
    if t in ("CLOB", "NCLOB"):
        return "string"
    m = _TIMESTAMP_TYPE.fullmatch(t)
    if m:
        return "timestamp_ltz" if m.group(3) else "timestamp_tz" if m.group(2) else "timestamp"
    m = _INTERVAL_TYPE.fullmatch(t)
    if m:
        return "interval_ym" if m.group(1) == "YEAR" else "interval_ds"
    raise OracleTypeError(f"column {col.name} has type {col.data_type}, which lakecdc cannot map")


def timestamp_precision(col: ColumnInfo) -> int:
    """Fractional digits of a TIMESTAMP column (ALL_TAB_COLUMNS.DATA_SCALE; 6 by default)."""
    return 6 if col.scale is None else col.scale


def _as_integer(col: ColumnInfo, modes: TypeModes) -> bool:
    """Debezium 3.6.3 (checked against OracleValueConverters): a negative scale is always an integer
    type; scale 0 only with ``decimal.handling.mode=precise`` (double / string modes give those)."""
    return (col.scale or 0) < 0 or modes.decimal_handling == "precise"


def _integer_type(col: ColumnInfo) -> str:
    width = (col.precision if col.precision is not None else 38) - (col.scale or 0)
    return "int8" if width < 3 else "int16" if width < 5 else "int32" if width < 10 else "int64"


def column_schema(col: ColumnInfo, modes: TypeModes) -> ConnectSchema:
    optional = col.nullable
    kind = _kind(col)
    if kind == "integer" and _as_integer(col, modes):
        return primitive(_integer_type(col), optional)
    if kind in ("decimal", "varnumber", "integer"):
        if modes.decimal_handling == "double":
            return primitive("double", optional)
        if modes.decimal_handling == "string":
            return primitive("string", optional)
        if kind == "varnumber":
            return lg.variable_scale_decimal_schema(optional)
        return lg.decimal_schema(col.scale or 0, col.precision if col.precision is not None else 38, optional)
    if kind == "BINARY_FLOAT":
        return primitive("float", optional)
    if kind == "BINARY_DOUBLE":
        return primitive("double", optional)
    if kind == "string":
        return primitive("string", optional)
    if kind == "binary":
        return primitive("string" if modes.binary_handling != "bytes" else "bytes", optional)
    if kind in ("DATE", "timestamp"):
        return lg.named("int64", _timestamp_logical(col, modes, kind == "DATE"), optional) \
            if modes.time_precision != "isostring" else lg.named("string", lg.ISO_TIMESTAMP, optional)
    if kind in ("timestamp_tz", "timestamp_ltz"):
        return lg.named("string", lg.ZONED_TIMESTAMP, optional)
    if modes.interval_handling == "string":
        return lg.named("string", lg.INTERVAL, optional)
    return lg.named("int64", lg.MICRO_DURATION, optional)


def _timestamp_logical(col: ColumnInfo, modes: TypeModes, is_date: bool) -> str:
    precision = 0 if is_date else timestamp_precision(col)
    mode = modes.time_precision
    if mode == "connect":
        return lg.CONNECT_TIMESTAMP
    if mode == "microseconds":
        return lg.MICRO_TIMESTAMP
    if mode == "nanoseconds":
        return lg.NANO_TIMESTAMP
    if precision <= 3:
        return lg.TIMESTAMP
    return lg.MICRO_TIMESTAMP if precision <= 6 else lg.NANO_TIMESTAMP


# ---- value parsing ---------------------------------------------------------------------------
def _text(value: Any) -> str:
    """The literal text of a value: redo calls give their first argument (``TO_DATE('x', 'f')``)."""
    args = getattr(value, "args", None)
    if args is not None:
        return str(args[0]) if args else ""
    return str(value)


def _exact_integer(value: Any) -> int:
    """NUMBER(p, 0) as an int: exact from the driver's int or Decimal, else from its text."""
    return int(value) if isinstance(value, (int, Decimal)) else int(Decimal(_text(value)))


def parse_timestamp(text: str) -> tuple[dt.datetime, int, dt.timedelta | None]:
    """``YYYY-MM-DD HH24:MI:SS[.FF9][ TZH:TZM]`` -> (naive datetime to the micro, nanos of the
    second, UTC offset or None)."""
    m = _TS.match(text.strip())
    if not m:
        raise ValueError(f"not an Oracle timestamp literal: {text!r}")
    y, mo, d, h, mi, s, frac, tzh, tzm = m.groups()
    nanos = int((frac or "0").ljust(9, "0")[:9])
    value = dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), nanos // 1000)
    offset = None
    if tzh is not None:
        sign = -1 if tzh.startswith("-") else 1
        offset = sign * dt.timedelta(hours=abs(int(tzh)), minutes=int(tzm))
    return value, nanos, offset


def _epoch_nanos(value: Any) -> int:
    if isinstance(value, dt.datetime):
        naive = value if value.tzinfo is None else value.astimezone(dt.timezone.utc)
        naive = naive.replace(tzinfo=None)
        delta = naive - lg.EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    stamp, nanos, _ = parse_timestamp(_text(value))
    delta = stamp.replace(microsecond=0) - lg.EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + nanos


def _timestamp_converter(col: ColumnInfo, modes: TypeModes, is_date: bool) -> Converter:
    if modes.time_precision == "isostring":
        return lambda v: _iso_local(_epoch_nanos(v))
    logical = _timestamp_logical(col, modes, is_date)
    if logical in (lg.TIMESTAMP, lg.CONNECT_TIMESTAMP):
        return lambda v: _epoch_nanos(v) // 1_000_000
    if logical == lg.MICRO_TIMESTAMP:
        return lambda v: _epoch_nanos(v) // 1000
    return _epoch_nanos


def _iso_local(nanos: int) -> str:
    value = lg.EPOCH + dt.timedelta(microseconds=nanos // 1000)
    return value.isoformat(timespec="microseconds") + "Z"


def _zoned_converter(col: ColumnInfo) -> Converter:
    """ZonedTimestamp text keeping the literal's offset (``Z`` for +00:00), as Debezium writes both
    TIMESTAMP WITH TIME ZONE and, from the ``TO_TIMESTAMP_TZ`` literal LogMiner writes for it, WITH
    LOCAL TIME ZONE; snapshots read the latter at UTC."""
    digits = timestamp_precision(col)

    def convert(v: Any) -> str:
        if isinstance(v, dt.datetime):
            stamp, nanos, offset = v.replace(tzinfo=None), v.microsecond * 1000, v.utcoffset()
        else:
            stamp, nanos, offset = parse_timestamp(_text(v))
        offset = offset or dt.timedelta(0)
        text = (f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}"
                f"T{stamp.hour:02d}:{stamp.minute:02d}:{stamp.second:02d}")
        if digits:
            text += "." + f"{nanos:09d}"[:digits]
        if not offset:
            return text + "Z"
        sign = "-" if offset < dt.timedelta(0) else "+"
        minutes = abs(int(offset.total_seconds())) // 60
        return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"

    return convert


def _interval_converter(kind: str, modes: TypeModes) -> Converter:
    def parts(v: Any) -> tuple[int, int, int, int, int, int, int]:
        text = _text(v).strip()
        if isinstance(v, dt.timedelta):
            micros = (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds
            sign = -1 if micros < 0 else 1
            micros = abs(micros)
            days, rest = divmod(micros, 86_400_000_000)
            h, rest = divmod(rest, 3_600_000_000)
            mins, rest = divmod(rest, 60_000_000)
            s, us = divmod(rest, 1_000_000)
            return (0, 0, sign * days, sign * h, sign * mins, sign * s, sign * us)
        if kind == "interval_ym":
            m = _YM.fullmatch(text)
            if not m:
                raise ValueError(f"not an INTERVAL YEAR TO MONTH literal: {text!r}")
            sign = -1 if m.group(1) == "-" else 1
            return (sign * int(m.group(2)), sign * int(m.group(3)), 0, 0, 0, 0, 0)
        m = _DS.fullmatch(text)
        if not m:
            raise ValueError(f"not an INTERVAL DAY TO SECOND literal: {text!r}")
        sign = -1 if m.group(1) == "-" else 1
        us = int((m.group(6) or "0").ljust(9, "0")[:9]) // 1000
        return (0, 0, sign * int(m.group(2)), sign * int(m.group(3)), sign * int(m.group(4)),
                sign * int(m.group(5)), sign * us)

    if modes.interval_handling == "string":
        def text(v: Any) -> str:
            y, mo, d, h, mi, sec, us = parts(v)
            return lg.interval_text(y, mo, d, h, mi, Decimal(sec) + Decimal(us).scaleb(-6))
        return text
    return lambda v: lg.micro_duration(*parts(v))


def _to_decimal(v: Any) -> Decimal:
    if isinstance(v, Decimal):
        return v
    if isinstance(v, (int, float)):
        return Decimal(str(v))
    return Decimal(_text(v).strip())


def _decimal_converter(col: ColumnInfo, modes: TypeModes, variable: bool) -> Converter:
    if modes.decimal_handling == "double":
        return lambda v: float(_to_decimal(v))
    scale = col.scale or 0
    quantum = Decimal(1).scaleb(-scale)
    if modes.decimal_handling == "string":
        if variable:
            return lambda v: format(_to_decimal(v).normalize(lg.EXACT), "f")
        return lambda v: format(_to_decimal(v).quantize(quantum, context=lg.EXACT), "f")
    if variable:
        return lambda v: lg.variable_decimal_to_connect(
            _to_decimal(v).normalize(lg.EXACT) if _to_decimal(v) else Decimal(0))
    return lambda v: lg.decimal_to_bytes(_to_decimal(v).quantize(quantum, context=lg.EXACT), scale)


def _binary_converter(modes: TypeModes) -> Converter:
    def raw(v: Any) -> bytes:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        if hasattr(v, "read"):  # an oracledb LOB
            return bytes(v.read())
        return bytes.fromhex(_text(v))  # HEXTORAW('0a0b')

    return lg.binary_converter(modes.binary_handling, raw)


def _float32(v: Any) -> Float32:
    return Float32(float(_text(v)) if not isinstance(v, (int, float)) else float(v))


def _float64(v: Any) -> float:
    return float(_text(v)) if not isinstance(v, (int, float)) else float(v)


_UNISTR_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{4})")


def _string(v: Any) -> str:
    if isinstance(v, str):
        return v
    if hasattr(v, "read"):  # an oracledb LOB
        return str(v.read())
    if getattr(v, "name", None) == "UNISTR":  # national strings: UNISTR('caf\\00e9')
        decoded = _UNISTR_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), _text(v))
        return decoded.encode("utf-16", "surrogatepass").decode("utf-16")
    return _text(v)


def value_converter(col: ColumnInfo, modes: TypeModes) -> Converter:
    """``value -> Connect value`` for one column; None stays None; LOB placeholders handled."""
    kind = _kind(col)
    if kind == "integer" and _as_integer(col, modes):
        base: Converter = _exact_integer
    elif kind == "integer":
        base = _decimal_converter(col, modes, False)
    elif kind in ("decimal", "varnumber"):
        base = _decimal_converter(col, modes, kind == "varnumber")
    elif kind == "BINARY_FLOAT":
        base = _float32
    elif kind == "BINARY_DOUBLE":
        base = _float64
    elif kind == "string":
        base = _string
    elif kind == "binary":
        base = _binary_converter(modes)
    elif kind in ("DATE", "timestamp"):
        base = _timestamp_converter(col, modes, kind == "DATE")
    elif kind in ("timestamp_tz", "timestamp_ltz"):
        base = _zoned_converter(col)
    else:
        base = _interval_converter(kind, modes)
    is_lob = col.data_type.upper() in LOB_TYPES
    if is_lob and not modes.lob_enabled:
        return lambda v: None
    if is_lob:
        placeholder: Any = modes.unavailable_placeholder
        if kind == "binary":
            placeholder = _binary_converter(modes)(modes.unavailable_placeholder.encode())

        def lob(v: Any) -> Any:
            if v is None:
                return None
            if v is UNAVAILABLE or getattr(v, "name", None) in ("EMPTY_CLOB", "EMPTY_BLOB"):
                return placeholder
            return base(v)

        return lob
    return lambda v: None if v is None else base(v)


def needs_text_select(col: ColumnInfo) -> str | None:
    """The TO_CHAR format a snapshot reads this column with (temporal and interval types, so that
    nanoseconds and zone offsets survive the driver), or None to read the value as is."""
    kind = _kind(col)
    if kind == "timestamp":
        return TIMESTAMP_FORMAT
    if kind in ("timestamp_tz", "timestamp_ltz"):
        return TIMESTAMP_TZ_FORMAT
    if kind in ("interval_ym", "interval_ds"):
        return ""  # TO_CHAR without a format gives '+01-02' / '+01 02:03:04.000000'
    return None
