"""One Debezium 3.6 mapping per PostgreSQL scalar type: Connect schema + text converters + TOAST
placeholder. Arrays are built from these in :mod:`lakecdc.capture.postgres.type_arrays`.

``scalar_spec(type_name, typmod, modes, enum_labels)`` returns a :class:`TypeSpec` (or None when
Debezium has no mapping for the type). Converters take non-null text; the public wrapper in ``types.py`` handles NULL
and unchanged-TOAST. Everything mode-dependent is decided here, once per column, so the per-value
converters have no branches on modes.
"""

from __future__ import annotations

import decimal
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakecdc.capture.postgres import type_temporal as tt
from lakecdc.capture.postgres import type_values as tv
from lakecdc.capture.postgres.type_values import unscaled_bytes
from lakecdc.events import logical
from lakecdc.events.javanum import java_double_str
from lakecdc.events.logical import binary_converter
from lakecdc.events.schema import ConnectField, ConnectSchema
from lakecdc.events.serde import jackson_dumps

if TYPE_CHECKING:
    from lakecdc.capture.postgres.types import TypeModes

Convert = Callable[[str], Any]


class ArrayElementError(ValueError):
    """An array element Debezium cannot convert: the whole array becomes null (as Debezium logs
    "Failed to properly convert data value" and emits null)."""


@dataclass(frozen=True)
class TypeSpec:
    """schema: optional field schema without default; stream: pgoutput text -> value;
    snapshot: snapshot (JDBC route) text -> value; element: how the value converts as an array
    element (JDBC route); toast: the unchanged-TOAST placeholder value."""

    schema: ConnectSchema
    stream: Convert
    snapshot: Convert
    element: Convert
    toast: Any = None
    #: in an array, a NULL element makes Debezium fail the whole value (enum, ltree)
    null_element_fails: bool = False
    #: in an array, Debezium declares the items required (enum)
    required_in_array: bool = False


def _named(type_name: str, name: str | None = None, params: dict[str, str] | None = None,
           doc: str | None = None) -> ConnectSchema:
    return ConnectSchema(type=type_name, optional=True, name=name, version=1 if name else None, doc=doc,
                         parameters=tuple(params.items()) if params is not None else None)


STRING = ConnectSchema("string", optional=True)


def _same(convert: Convert, toast: Any = None, schema: ConnectSchema = STRING) -> TypeSpec:
    """A mapping whose value is the same on every route (streamed, snapshot, array element)."""
    return TypeSpec(schema, convert, convert, convert, toast)


def _identity(text: str) -> str:
    return text


# ---- binary --------------------------------------------------------------------------------

def binary_schema(modes: TypeModes) -> ConnectSchema:
    return ConnectSchema("bytes", optional=True) if modes.binary_handling == "bytes" else STRING


def binary_encoder(modes: TypeModes) -> Callable[[bytes], Any]:
    return binary_converter(modes.binary_handling)


def _binary_spec(modes: TypeModes) -> TypeSpec:
    encode = binary_encoder(modes)
    placeholder = modes.unavailable_value_placeholder

    def stream(text: str) -> Any:
        return encode(tv.bytea_bytes(text))

    # Debezium substitutes the placeholder only in its bytes and hex converters; base64 gives null
    toast = {"bytes": placeholder, "hex": placeholder.decode()}.get(modes.binary_handling)
    return TypeSpec(binary_schema(modes), stream, stream, stream, toast)


GEOMETRIC_TYPES = frozenset({"box", "circle", "line", "lseg", "path", "polygon"})
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|-?Infinity|NaN")


def java_coordinates(text: str) -> str:
    """pgjdbc's PGbox/PGpath/... print every coordinate with Java's ``Double.toString``."""
    return _NUMBER.sub(lambda m: java_double_str(float(m.group(0))), text)


def unknown_spec(modes: TypeModes, type_name: str | None = None) -> TypeSpec:
    """include.unknown.datatypes=true: the text, as bytes in the binary handling mode."""
    encode = binary_encoder(modes)
    geometric = type_name in GEOMETRIC_TYPES

    def convert(text: str) -> Any:
        return encode((java_coordinates(text) if geometric else text).encode())

    return TypeSpec(binary_schema(modes), convert, convert, convert, encode(modes.unavailable_value_placeholder))


# ---- numbers -------------------------------------------------------------------------------

def _numeric_spec(typmod: int, modes: TypeModes) -> TypeSpec:
    variable = typmod < 0
    precision, scale = (((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF) if not variable else (0, 0)
    mode = modes.decimal_handling
    if mode == "double":
        return TypeSpec(ConnectSchema("double", optional=True), tv.java_double, tv.java_double,
                        _finite_element(tv.java_double))
    if mode == "string":
        as_string = tv.decimal_string(None if variable else scale)
        return TypeSpec(STRING, as_string, as_string, _finite_element(as_string),
                        modes.unavailable_value_placeholder.decode())
    if variable:
        schema = ConnectSchema(
            "struct", optional=True, name=logical.VARIABLE_SCALE_DECIMAL, version=1,
            doc="Variable scaled decimal",
            fields=(ConnectField("scale", ConnectSchema("int32")), ConnectField("value", ConnectSchema("bytes"))),
        )

        def element(text: str) -> Any:
            value = tv.variable_scale(text)
            if value is None:
                raise ArrayElementError(f"numeric element {text!r} has no VariableScaleDecimal form")
            return value

        return TypeSpec(schema, tv.variable_scale, tv.variable_scale, element)
    schema = _named("bytes", logical.DECIMAL,
                    {"scale": str(scale), "connect.decimal.precision": str(precision)})
    fixed = tv.fixed_scale(scale)

    def fixed_element(text: str) -> Any:
        value = fixed(text)
        if value is None:
            raise ArrayElementError(f"numeric element {text!r} has no Decimal form")
        return value

    return TypeSpec(schema, fixed, fixed, fixed_element)


def _finite_element(convert: Convert) -> Convert:
    """pgjdbc reads numeric array elements as BigDecimal, which has no NaN/Infinity."""

    def element(text: str) -> Any:
        if text in ("NaN", "Infinity", "-Infinity"):
            raise ArrayElementError(f"numeric element {text!r} is not a BigDecimal")
        return convert(text)

    return element


def _money_spec(modes: TypeModes) -> TypeSpec:
    digits = modes.money_fraction_digits
    mode = modes.decimal_handling
    quantum = decimal.Decimal(1).scaleb(-digits)
    if mode == "double":
        def as_double(text: str) -> float:
            return float(tv.money_decimal(text))
        return _same(as_double, None, ConnectSchema("double", optional=True))
    if mode == "string":
        def as_string(text: str) -> str:
            return str(tv.money_decimal(text))
        return _same(as_string, None, STRING)

    def precise(text: str) -> bytes:
        value = tv.money_decimal(text).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
        return unscaled_bytes(int(value.scaleb(digits)))

    return _same(precise, None, _named("bytes", logical.DECIMAL, {"scale": str(digits)}))


def _int(text: str) -> int:
    return int(text)


def _bool(text: str) -> bool:
    return text == "t"


def _float(text: str) -> float:
    return float(text)


_F32 = struct.Struct("<f")
_F32_MAX = 3.4028234663852886e38


def _float4(text: str) -> float:
    """float4 text -> the float32 value as a Python float (Java ``Float.parseFloat``)."""
    value = float(text)
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:  # just above FLT_MAX rounds down to it; beyond that is infinite
        return _F32_MAX if value > 0 else -_F32_MAX


# ---- time ----------------------------------------------------------------------------------

def _time_precision(typmod: int) -> int:
    return 6 if typmod < 0 else typmod


def _date_spec(modes: TypeModes) -> TypeSpec:
    mode = modes.time_precision
    if mode == "isostring":
        def stream(text: str) -> str:
            return tt.iso_date(tt.stream_epoch_days(text)) + "Z"

        def jdbc(text: str) -> str:
            if text == "infinity":
                return tt.JDBC_ISO_DATE_POS_INF + "Z"
            if text == "-infinity":
                return tt.JDBC_ISO_DATE_NEG_INF + "Z"
            return tt.iso_date(tt.jdbc_epoch_days(text)) + "Z"

        return TypeSpec(_named("string", logical.ISO_DATE), stream, jdbc, jdbc)
    name = logical.CONNECT_DATE if mode == "connect" else logical.DATE
    return TypeSpec(_named("int32", name), tt.stream_epoch_days, tt.jdbc_epoch_days, tt.jdbc_epoch_days)


def _time_spec(typmod: int, modes: TypeModes) -> TypeSpec:
    mode = modes.time_precision
    precision = _time_precision(typmod)
    if mode == "isostring":
        def iso(text: str) -> str:  # a java.time LocalTime: 24:00:00 wraps to midnight
            return tt.iso_clock(tt.time_micros(text) % tt.MICROS_PER_DAY, None) + "Z"
        spec = _same(iso, None, _named("string", logical.ISO_TIME))
    elif mode == "connect":
        spec = _same(_millis_of(tt.time_micros), None, _named("int32", logical.CONNECT_TIME))
    elif mode == "adaptive" and precision <= 3:
        spec = _same(_millis_of(tt.time_micros), None, _named("int32", logical.TIME))
    elif mode == "nanoseconds":
        def nanos(text: str) -> int:
            return tt.time_micros(text) * 1000
        spec = _same(nanos, None, _named("int64", logical.NANO_TIME))
    else:
        spec = _same(tt.time_micros, None, _named("int64", logical.MICRO_TIME))
    scalar = spec.stream

    def element(text: str) -> Any:  # pgjdbc's LocalTime wraps 24:00:00 to midnight
        return scalar("00:00:00") if text.startswith("24:") else scalar(text)

    return TypeSpec(spec.schema, spec.stream, spec.snapshot, element)


def _millis_of(micros: Callable[[str], int]) -> Convert:
    def convert(text: str) -> int:
        return micros(text) // 1000
    return convert


def _timetz_spec() -> TypeSpec:
    def zoned(text: str) -> str:
        return tt.iso_clock_minimal(tt.timetz_utc_micros(text)) + "Z"
    return _same(zoned, None, _named("string", logical.ZONED_TIME))


def _timestamp_spec(typmod: int, modes: TypeModes) -> TypeSpec:
    mode = modes.time_precision
    precision = _time_precision(typmod)
    if mode == "isostring":
        def iso(text: str) -> str:
            micros = tt.timestamp_micros(text)
            days, clock = divmod(micros, tt.MICROS_PER_DAY)
            return f"{tt.iso_date(days)}T{tt.iso_clock(clock, None)}Z"
        return _same(iso, None, _named("string", logical.ISO_TIMESTAMP))
    if mode == "connect":
        return _same(_millis_of(tt.timestamp_micros), None, _named("int64", logical.CONNECT_TIMESTAMP))
    if mode == "nanoseconds":
        return _same(tt.nano_timestamp, None, _named("int64", logical.NANO_TIMESTAMP))
    if precision <= 3 and mode != "microseconds":
        return _same(_millis_of(tt.timestamp_micros), None, _named("int64", logical.TIMESTAMP))
    return _same(tt.micro_timestamp, None, _named("int64", logical.MICRO_TIMESTAMP))


def _timestamptz_spec(typmod: int) -> TypeSpec:
    digits = _time_precision(typmod)

    def zoned(text: str) -> str:
        return tt.zoned_timestamp_text(text, digits)

    return _same(zoned, None, _named("string", logical.ZONED_TIMESTAMP))


def _interval_spec(modes: TypeModes) -> TypeSpec:
    if modes.interval_handling == "string":
        return _same(tt.interval_iso, None, _named("string", logical.INTERVAL))
    return _same(tt.interval_micro_duration, None, _named("int64", logical.MICRO_DURATION))


# ---- other scalars -------------------------------------------------------------------------

def bits_spec(length: int) -> TypeSpec:
    if length <= 1:
        return _same(lambda text: text == "1", None, ConnectSchema("boolean", optional=True))
    return _same(tv.bits_bytes, None, _named("bytes", logical.BITS, {"length": str(length)}))


def _hstore_spec(modes: TypeModes) -> TypeSpec:
    placeholder = modes.unavailable_value_placeholder.decode()
    if modes.hstore_handling == "map":
        schema = ConnectSchema("map", optional=True, keys=ConnectSchema("string"), values=STRING)
        return _same(tv.parse_hstore, {placeholder: placeholder}, schema)

    def as_json(text: str) -> str:  # Debezium writes it with Jackson: compact, \u001F-style escapes
        return jackson_dumps(tv.parse_hstore(text))

    toast = jackson_dumps({placeholder: placeholder})
    return _same(as_json, toast, _named("string", logical.JSON))


def _point_spec() -> TypeSpec:
    schema = ConnectSchema(
        "struct", optional=True, name=logical.POINT, version=1, doc="Geometry (POINT)",
        fields=(
            ConnectField("x", ConnectSchema("double")),
            ConnectField("y", ConnectSchema("double")),
            ConnectField("wkb", ConnectSchema("bytes", optional=True)),
            ConnectField("srid", ConnectSchema("int32", optional=True)),
        ),
    )
    return _same(tv.point_struct, None, schema)


def _postgis_spec(name: str) -> TypeSpec:
    schema_name, doc = {"geometry": (logical.GEOMETRY, "Geometry"),
                        "geography": (logical.GEOGRAPHY, "Geography")}[name]
    schema = ConnectSchema(
        "struct", optional=True, name=schema_name, version=1, doc=doc,
        fields=(ConnectField("wkb", ConnectSchema("bytes")),
                ConnectField("srid", ConnectSchema("int32", optional=True))),
    )
    return _same(tv.postgis_struct, None, schema)


def _name_spec(placeholder: str, include_unknown: bool) -> TypeSpec:
    """Debezium's pgoutput reader has no case for ``name``: it is streamed only as an "unknown"
    type's text (include.unknown.datatypes=true), otherwise as null. Snapshots read it over JDBC."""
    def streamed_as_null(_text: str) -> None:
        return None
    stream = _identity if include_unknown else streamed_as_null
    return TypeSpec(STRING, stream, _identity, _identity, placeholder)


_STRING_TYPES = frozenset({
    "bpchar", "varchar", "text", "char", "citext", "uuid", "json", "jsonb", "xml", "tsvector", "ltree",
    "inet", "cidr", "macaddr", "macaddr8", "int4range", "int8range", "numrange", "tsrange", "tstzrange",
    "daterange", "isbn",
})
_STRING_NAMES = {
    "uuid": logical.UUID, "json": logical.JSON, "jsonb": logical.JSON,
    "xml": logical.XML, "tsvector": logical.TSVECTOR, "ltree": logical.LTREE,
}


def scalar_spec(name: str, typmod: int, modes: TypeModes,
                enum_labels: tuple[str, ...] | None = None) -> TypeSpec | None:
    """The mapping of a non-array root type called ``name`` (pg_type.typname); None = unknown."""
    placeholder = modes.unavailable_value_placeholder.decode()
    if enum_labels is not None:
        schema = _named("string", logical.ENUM, {"allowed": ",".join(enum_labels)})
        spec = _same(_identity, placeholder, schema)
        return TypeSpec(spec.schema, _identity, _identity, _identity, placeholder, null_element_fails=True,
                        required_in_array=True)
    if name in _STRING_TYPES:
        schema = _named("string", _STRING_NAMES[name]) if name in _STRING_NAMES else STRING
        spec = _same(_identity, placeholder, schema)
        if name == "ltree":
            return TypeSpec(schema, _identity, _identity, _identity, placeholder, null_element_fails=True)
        return spec
    if name == "bool":
        return _same(_bool, None, ConnectSchema("boolean", optional=True))
    if name == "int2":
        return _same(_int, None, ConnectSchema("int16", optional=True))
    if name == "int4":
        return _same(_int, None, ConnectSchema("int32", optional=True))
    if name in ("int8", "oid"):
        return _same(_int, None, ConnectSchema("int64", optional=True))
    if name == "float4":
        return _same(_float4, None, ConnectSchema("float", optional=True))
    if name == "float8":
        return _same(_float, None, ConnectSchema("double", optional=True))
    if name == "numeric":
        return _numeric_spec(typmod, modes)
    if name == "money":
        return _money_spec(modes)
    if name == "name":
        return _name_spec(placeholder, modes.include_unknown_datatypes)
    if name == "bytea":
        return _binary_spec(modes)
    if name == "date":
        return _date_spec(modes)
    if name == "time":
        return _time_spec(typmod, modes)
    if name == "timetz":
        return _timetz_spec()
    if name == "timestamp":
        return _timestamp_spec(typmod, modes)
    if name == "timestamptz":
        return _timestamptz_spec(typmod)
    if name == "interval":
        return _interval_spec(modes)
    if name in ("bit", "varbit"):
        length = typmod if typmod > 0 else (1 if name == "bit" else 2147483647)
        return bits_spec(length)
    if name == "hstore":
        return _hstore_spec(modes)
    if name == "point":
        return _point_spec()
    if name in ("geometry", "geography"):
        return _postgis_spec(name)
    return None
