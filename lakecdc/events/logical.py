"""Logical types: the ``name`` a Connect schema carries and the value conversions both ways.

Capture turns database values into Connect values with :func:`to_connect`; ingest turns them back
into Python values with :func:`from_connect`. Both go through the same table here, so a type can
only mean one thing. Examples of field schemas and values (Debezium 3.6.3, PostgreSQL)::

    {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,
     "parameters":{"scale":"2","connect.decimal.precision":"12"},"field":"balance"}   "J0I="  (100.50)
    {"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},
     {"type":"bytes","optional":false,"field":"value"}],"optional":true,
     "name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal",
     "field":"amount"}                                              {"scale":1,"value":"Dw=="} (1.5)
    {"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"ts"}
                                                                    1704067200500000
    {"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,
     "field":"created_at"}                                          "2024-01-02T03:04:05.123456Z"
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

from lakecdc.events.schema import ConnectSchema, primitive, struct

#: Decimal arithmetic without rounding: the default context keeps 28 digits, fewer than MySQL's
#: DECIMAL(65), Oracle's NUMBER(38) or PostgreSQL's numeric hold.
EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

# ---- names ---------------------------------------------------------------------------------
DECIMAL = "org.apache.kafka.connect.data.Decimal"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
JSON = "io.debezium.data.Json"
UUID = "io.debezium.data.Uuid"
ENUM = "io.debezium.data.Enum"
ENUM_SET = "io.debezium.data.EnumSet"
BITS = "io.debezium.data.Bits"
XML = "io.debezium.data.Xml"
LTREE = "io.debezium.data.Ltree"
TSVECTOR = "io.debezium.data.Tsvector"
GEOMETRY = "io.debezium.data.geometry.Geometry"
GEOGRAPHY = "io.debezium.data.geometry.Geography"
POINT = "io.debezium.data.geometry.Point"

DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
NANO_TIME = "io.debezium.time.NanoTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
YEAR = "io.debezium.time.Year"
MICRO_DURATION = "io.debezium.time.MicroDuration"
INTERVAL = "io.debezium.time.Interval"
ISO_DATE = "io.debezium.time.IsoDate"
ISO_TIME = "io.debezium.time.IsoTime"
ISO_TIMESTAMP = "io.debezium.time.IsoTimestamp"

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# Debezium's MicroDuration counts a month as 30.4375 days and a year as 365.25 days.
MICROS_PER_DAY = 86_400_000_000
MICROS_PER_MONTH = 2_629_800_000_000
MICROS_PER_YEAR = 12 * MICROS_PER_MONTH


# ---- schema builders -----------------------------------------------------------------------
def decimal_schema(scale: int, precision: int | None = None, optional: bool = True) -> ConnectSchema:
    params = {"scale": str(scale)}
    if precision is not None:
        params["connect.decimal.precision"] = str(precision)
    return primitive("bytes", optional, name=DECIMAL, version=1, parameters=params)


def variable_scale_decimal_schema(optional: bool = True) -> ConnectSchema:
    return struct(
        [("scale", primitive("int32")), ("value", primitive("bytes"))],
        optional=optional,
        name=VARIABLE_SCALE_DECIMAL,
        version=1,
        doc="Variable scaled decimal",
    )


def named(type_name: str, name: str, optional: bool = True, **parameters: str) -> ConnectSchema:
    """A primitive logical schema with version 1, e.g. ``named("int64", MICRO_TIMESTAMP)``."""
    return primitive(type_name, optional, name=name, version=1, parameters=parameters or None)


def enum_schema(allowed: list[str], optional: bool = True, default: str | None = None) -> ConnectSchema:
    return primitive(
        "string", optional, name=ENUM, version=1, parameters={"allowed": ",".join(allowed)}, default=default
    )


def bits_schema(length: int, optional: bool = True) -> ConnectSchema:
    return primitive("bytes", optional, name=BITS, version=1, parameters={"length": str(length)})


def geometry_schema(optional: bool = True, geography: bool = False) -> ConnectSchema:
    return struct(
        [("wkb", primitive("bytes")), ("srid", primitive("int32", True))],
        optional=optional,
        name=GEOGRAPHY if geography else GEOMETRY,
        version=1,
        doc="Geography" if geography else "Geometry",
    )


def point_schema(optional: bool = True) -> ConnectSchema:
    return struct(
        [
            ("x", primitive("double")),
            ("y", primitive("double")),
            ("wkb", primitive("bytes", True)),
            ("srid", primitive("int32", True)),
        ],
        optional=optional,
        name=POINT,
        version=1,
        doc="Geometry (POINT)",
    )


# ---- numbers -------------------------------------------------------------------------------
def unscaled_bytes(unscaled: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal two's-complement big-endian (0 -> b"\\x00")."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def unscaled_from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True) if data else 0


def _exact_unscaled(value: decimal.Decimal, scale: int) -> int | None:
    """The integer ``value * 10**scale`` computed exactly (no context rounding), or None."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} has no Connect decimal form (NaN/Infinity)")
    coefficient = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    unscaled: int
    if shift >= 0:
        unscaled = coefficient * 10**shift
    else:
        unscaled, remainder = divmod(coefficient, 10**-shift)
        if remainder:
            return None
    return -unscaled if sign else unscaled


def decimal_to_bytes(value: decimal.Decimal, scale: int) -> bytes:
    """Decimal -> Connect Decimal bytes at ``scale``; ValueError when digits would be lost."""
    unscaled = _exact_unscaled(value, scale)
    if unscaled is None:
        raise ValueError(f"decimal {value} does not fit scale {scale} without rounding")
    return unscaled_bytes(unscaled)


def decimal_from_bytes(data: bytes, scale: int) -> decimal.Decimal:
    """Exact: the decimal is built from text, never through a rounding context."""
    return decimal.Decimal(f"{unscaled_from_bytes(data)}E{-scale}")


def variable_decimal_to_connect(value: decimal.Decimal) -> dict[str, Any]:
    """Decimal -> ``{"scale": s, "value": unscaled bytes}`` with the decimal's own scale."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} has no VariableScaleDecimal form (NaN/Infinity)")
    unscaled = int("".join(map(str, digits)) or "0")
    return {"scale": -exponent, "value": unscaled_bytes(-unscaled if sign else unscaled)}


def variable_decimal_from_connect(value: dict[str, Any]) -> decimal.Decimal:
    return decimal_from_bytes(value["value"], int(value["scale"]))


def bitset_bytes(bits: int) -> bytes:
    """Java ``BitSet.toByteArray()`` of the set bits of ``bits`` (little-endian, empty for 0)."""
    if bits < 0:
        raise ValueError("bit strings are non-negative")
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


# ---- time ----------------------------------------------------------------------------------
def _micros_of_day(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _naive_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch of a wall-clock datetime (aware values are converted to UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _from_micros(micros: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=micros)


def _fraction(microsecond: int, fraction_digits: int | None) -> str:
    """Java's fraction text: a fixed width truncates or pads (Debezium passes the column
    precision); without a width (None or 0), ISO's natural form: no trailing zeros, none at all
    for whole seconds."""
    if not fraction_digits:
        return f".{microsecond:06d}".rstrip("0").rstrip(".")
    return "." + f"{microsecond:06d}000"[:fraction_digits]


def zoned_timestamp_text(value: dt.datetime, fraction_digits: int | None = 6) -> str:
    """Debezium's ZonedTimestamp text: UTC, ``Z``, fraction as :func:`_fraction` lays it out.

    >>> zoned_timestamp_text(dt.datetime(2024, 5, 6, 7, 8, 9, 500000, tzinfo=dt.timezone.utc))
    '2024-05-06T07:08:09.500000Z'
    >>> zoned_timestamp_text(dt.datetime(2024, 5, 6, 7, 8, 9, 500000, tzinfo=dt.timezone.utc), None)
    '2024-05-06T07:08:09.5Z'
    """
    if value.tzinfo is None:
        raise ValueError(f"ZonedTimestamp needs an aware datetime, got naive {value!r}")
    utc = value.astimezone(dt.timezone.utc)
    # Not strftime: %Y does not pad years below 1000, Java's ISO format does.
    text = (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    )
    return text + _fraction(utc.microsecond, fraction_digits) + "Z"


def parse_zoned_timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def zoned_time_text(value: dt.time, fraction_digits: int | None = 6) -> str:
    """ZonedTime text, e.g. ``07:08:09.500000Z`` (value converted to UTC when it has a zone)."""
    if value.tzinfo is not None:
        moment = dt.datetime.combine(EPOCH_DATE, value).astimezone(dt.timezone.utc)
        value = moment.timetz()
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    return text + _fraction(value.microsecond, fraction_digits) + "Z"


def micro_duration(
    years: int = 0, months: int = 0, days: int = 0, hours: int = 0, minutes: int = 0,
    seconds: int = 0, micros: int = 0,
) -> int:
    """Debezium's MicroDuration as the PostgreSQL connector computes it: a month is 365.25/12 =
    30.4375 days (the connector passes that average; Debezium's own default would be 30)."""
    return (
        years * MICROS_PER_YEAR
        + months * MICROS_PER_MONTH
        + days * MICROS_PER_DAY
        + ((hours * 60 + minutes) * 60 + seconds) * 1_000_000
        + micros
    )


def interval_text(
    years: int = 0, months: int = 0, days: int = 0, hours: int = 0, minutes: int = 0,
    seconds: decimal.Decimal | int = 0,
) -> str:
    """Debezium's Interval text (``interval.handling.mode=string``): every component written,
    seconds truncated to nanoseconds without trailing zeros.

    >>> interval_text(days=1, hours=2, minutes=3, seconds=decimal.Decimal("4.500"))
    'P0Y0M1DT2H3M4.5S'
    """
    secs = decimal.Decimal(seconds)
    exponent = secs.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9:
        secs = secs.quantize(decimal.Decimal("1E-9"), rounding=decimal.ROUND_DOWN)
    secs_text = "0" if secs == 0 else format(secs.normalize(), "f")
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{secs_text}S"


# ---- the table -----------------------------------------------------------------------------
_ToConnect = Callable[[Any, ConnectSchema], Any]
_FromConnect = Callable[[Any, ConnectSchema], Any]


def _scale(schema: ConnectSchema) -> int:
    scale = schema.parameter("scale")
    if scale is None:
        raise ValueError(f"Decimal schema {schema.name!r} has no 'scale' parameter")
    return int(scale)


_CONVERSIONS: dict[str, tuple[_ToConnect, _FromConnect]] = {
    DECIMAL: (
        lambda v, s: decimal_to_bytes(decimal.Decimal(v), _scale(s)),
        lambda v, s: decimal_from_bytes(v, _scale(s)),
    ),
    VARIABLE_SCALE_DECIMAL: (
        lambda v, s: variable_decimal_to_connect(decimal.Decimal(v)),
        lambda v, s: variable_decimal_from_connect(v),
    ),
    CONNECT_DATE: (lambda v, s: (v - EPOCH_DATE).days, lambda v, s: EPOCH_DATE + dt.timedelta(days=v)),
    DATE: (lambda v, s: (v - EPOCH_DATE).days, lambda v, s: EPOCH_DATE + dt.timedelta(days=v)),
    CONNECT_TIME: (
        lambda v, s: _micros_of_day(v) // 1000,
        lambda v, s: (EPOCH + dt.timedelta(milliseconds=v)).time(),
    ),
    TIME: (
        lambda v, s: _micros_of_day(v) // 1000,
        lambda v, s: (EPOCH + dt.timedelta(milliseconds=v)).time(),
    ),
    MICRO_TIME: (
        lambda v, s: _micros_of_day(v),
        lambda v, s: (EPOCH + dt.timedelta(microseconds=v)).time(),
    ),
    NANO_TIME: (
        lambda v, s: _micros_of_day(v) * 1000,
        lambda v, s: (EPOCH + dt.timedelta(microseconds=v // 1000)).time(),
    ),
    CONNECT_TIMESTAMP: (lambda v, s: _naive_micros(v) // 1000, lambda v, s: _from_micros(v * 1000)),
    TIMESTAMP: (lambda v, s: _naive_micros(v) // 1000, lambda v, s: _from_micros(v * 1000)),
    MICRO_TIMESTAMP: (lambda v, s: _naive_micros(v), lambda v, s: _from_micros(v)),
    NANO_TIMESTAMP: (lambda v, s: _naive_micros(v) * 1000, lambda v, s: _from_micros(v // 1000)),
    ZONED_TIMESTAMP: (lambda v, s: zoned_timestamp_text(v), lambda v, s: parse_zoned_timestamp(v)),
    ZONED_TIME: (
        lambda v, s: zoned_time_text(v),
        lambda v, s: dt.time.fromisoformat(v.replace("Z", "+00:00")),
    ),
    YEAR: (lambda v, s: int(v.year if isinstance(v, dt.date) else v), lambda v, s: v),
    MICRO_DURATION: (
        lambda v, s: (v.days * MICROS_PER_DAY + v.seconds * 1_000_000 + v.microseconds)
        if isinstance(v, dt.timedelta) else int(v),
        lambda v, s: dt.timedelta(microseconds=v),
    ),
    UUID: (lambda v, s: str(v), lambda v, s: v),
}


def to_connect(schema: ConnectSchema, value: Any) -> Any:
    """Python value -> Connect value for a logical schema (other schemas: value unchanged).

    >>> to_connect(decimal_schema(2, 12), decimal.Decimal("100.50"))
    b"'B"
    """
    if value is None or schema.name is None:
        return value
    conversion = _CONVERSIONS.get(schema.name)
    return value if conversion is None else conversion[0](value, schema)


def from_connect(schema: ConnectSchema, value: Any) -> Any:
    """Connect value -> Python value (Decimal, date, time, datetime, timedelta) for a logical schema.

    Timestamps without a zone come back naive; ZonedTimestamp comes back aware (UTC).
    """
    if value is None or schema.name is None:
        return value
    conversion = _CONVERSIONS.get(schema.name)
    return value if conversion is None else conversion[1](value, schema)


def is_logical(schema: ConnectSchema) -> bool:
    return schema.name in _CONVERSIONS


KNOWN_LOGICAL_NAMES = frozenset(
    {
        DECIMAL, CONNECT_DATE, CONNECT_TIME, CONNECT_TIMESTAMP, VARIABLE_SCALE_DECIMAL, JSON, UUID, ENUM,
        ENUM_SET, BITS, XML, LTREE, GEOMETRY, GEOGRAPHY, POINT, DATE, TIME, MICRO_TIME, NANO_TIME,
        TIMESTAMP, MICRO_TIMESTAMP, NANO_TIMESTAMP, ZONED_TIMESTAMP, ZONED_TIME, YEAR, MICRO_DURATION,
        INTERVAL, ISO_DATE, ISO_TIME, ISO_TIMESTAMP,
    }
)


def binary_converter(mode: str, raw: Callable[[Any], bytes] = bytes) -> Callable[[Any], Any]:
    """``binary.handling.mode`` (bytes, base64, base64-url-safe, hex) applied to the bytes ``raw``
    makes of a driver value; every connector's binary columns and PostgreSQL message contents."""
    if mode == "bytes":
        return raw
    if mode == "base64":
        return lambda v: base64.b64encode(raw(v)).decode("ascii")
    if mode == "base64-url-safe":
        return lambda v: base64.urlsafe_b64encode(raw(v)).decode("ascii")
    if mode == "hex":
        return lambda v: raw(v).hex()
    raise ValueError(f"binary.handling.mode must be bytes, base64, base64-url-safe or hex, not {mode!r}")
