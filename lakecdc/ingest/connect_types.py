"""Kafka Connect schema -> Spark column type, and a columnar converter from JSON values to Arrow.

Each Connect field schema of a Debezium row becomes one ``ColumnType``: the Spark type of the
silver/bronze column, the Arrow type it travels in, and ``convert(values) -> pyarrow.Array`` that
turns the JSON values of one column (as ``JsonConverter`` wrote them, e.g. base64 text for bytes)
into that Arrow type in one call per column, never one call per event.

The mapping (``TypeOptions`` holds the configurable choices)::

    int8/16/32/64, float, double, boolean, string   -> byte/short/int/bigint, float, double, ...
    bytes, io.debezium.data.Bits                    -> binary (base64 text decoded)
    org.apache.kafka.connect.data.Decimal            -> decimal(p, s)  (p from
                                                       "connect.decimal.precision", 38 when absent;
                                                       string when p > 38)
    io.debezium.data.VariableScaleDecimal            -> decimal(38, variable_scale) or string
    io.debezium.time.Date, connect Date              -> date
    io.debezium.time.Timestamp/MicroTimestamp/NanoTimestamp, connect Timestamp
                                                    -> timestamp_ntz (nanoseconds floored to µs)
    io.debezium.time.ZonedTimestamp                  -> timestamp (UTC)
    io.debezium.time.Time/MicroTime/NanoTime, connect Time
                                                    -> bigint microseconds of the day, or string
                                                       "HH:MM:SS.ffffff" (time_mode)
    Json, Xml, Uuid, Enum, EnumSet, ZonedTime, Interval, ...   -> string (text as sent)
    io.debezium.time.MicroDuration                   -> bigint (microseconds)
    array / map / struct                             -> array / map / struct, recursively

A conversion that cannot be exact (a decimal with more digits than its column, a number out of
range) raises ``ValueConversionError``; the decoder then finds the offending records one by one
and sends them to the dead-letter table. So does a value of another JSON type than its schema
allows (``json_kinds``: what Kafka Connect's ``JsonConverter`` writes for each type) -- checked
before Arrow sees it, because Arrow would quietly truncate ``1.5`` into an int column or read
``true`` as ``1.0`` -- a null in a required field, and a struct value whose fields are not its
schema's fields.
"""

from __future__ import annotations

import base64
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from lakecdc.errors import IngestError, TerminalError
from lakecdc.events.schema import ConnectSchema

_EXACT = decimal.Context(prec=1000, traps=[decimal.Inexact, decimal.InvalidOperation])
_MAX_SPARK_PRECISION = 38

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_DATE_NAMES = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
_TS_MULTIPLIER = {  # logical name -> (multiplier, divisor) to microseconds
    "io.debezium.time.Timestamp": (1000, 1),
    "org.apache.kafka.connect.data.Timestamp": (1000, 1),
    "io.debezium.time.MicroTimestamp": (1, 1),
    "io.debezium.time.NanoTimestamp": (1, 1000),
}
_TIME_MULTIPLIER = {
    "io.debezium.time.Time": (1000, 1),
    "org.apache.kafka.connect.data.Time": (1000, 1),
    "io.debezium.time.MicroTime": (1, 1),
    "io.debezium.time.NanoTime": (1, 1000),
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
BINARY_SOURCE_TYPES = frozenset({"BYTEA", "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB",
                                 "LONGBLOB", "IMAGE", "RAW", "LONG RAW"})
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class ValueConversionError(IngestError, TerminalError):
    """A JSON value does not fit its column's type exactly; the message names the column."""


INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
#: JSON types JsonConverter writes for each Connect type (Python types as orjson reads them).
_KINDS: dict[str, frozenset[type]] = {
    **{name: frozenset({int}) for name in INT_BITS},
    # Jackson writes a double's NaN and infinities as quoted text (``_NON_FINITE``).
    "float": frozenset({int, float, str}), "double": frozenset({int, float, str}),
    "boolean": frozenset({bool}), "string": frozenset({str}), "bytes": frozenset({str}),
    "array": frozenset({list}), "struct": frozenset({dict}),
}


def json_kinds(schema: ConnectSchema) -> frozenset[type]:
    """The Python types (as orjson parses JSON) a value of ``schema`` may have when not null."""
    if schema.name == DECIMAL:  # JsonConverter decimal.format=NUMERIC writes a number
        return frozenset({str, int, float})
    if schema.type == "map":  # string keys: an object; other keys: an array of [key, value] pairs
        return frozenset({dict}) if schema.keys is not None and schema.keys.type == "string" else frozenset({list})
    return _KINDS[schema.type]


def json_type_name(value: Any) -> str:
    """``value``'s type as JSON calls it, with a short excerpt: ``string "noon"``, ``number 1.5``."""
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text[:40]}{'...' if len(text) > 40 else ''}"


def value_problem(schema: ConnectSchema, value: Any) -> str | None:
    """Why one non-null JSON value cannot be of ``schema``'s type at its top level, or None."""
    if type(value) not in json_kinds(schema):
        return f"expected {schema.type}{f' ({schema.name})' if schema.name else ''}, got {json_type_name(value)}"
    bits = INT_BITS.get(schema.type)
    if bits is not None and not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        return f"{value} does not fit {schema.type}"
    if schema.type in ("float", "double") and type(value) is str and value not in _NON_FINITE:
        return f"expected {schema.type}, got {json_type_name(value)}"
    return None


@dataclass(frozen=True)
class TypeOptions:
    """Choices the Connect schema alone does not settle (from ``IngestConfig``)."""

    variable_scale_mode: str = "decimal"  # "decimal" | "string"
    variable_scale: int = 18
    time_mode: str = "micros"  # "micros" | "string"
    binary_handling_mode: str = "bytes"  # how the source connector wrote binary columns

    @classmethod
    def from_config(cls, config: Any) -> TypeOptions:
        return cls(config.variable_scale_mode, config.variable_scale, config.time_mode,
                   config.binary_handling_mode)


Converter = Callable[[list[Any]], pa.Array]


@dataclass(frozen=True)
class ColumnType:
    """Spark type, Arrow type and the columnar converter for one Connect schema."""

    spark: T.DataType
    arrow: pa.DataType
    convert: Converter
    #: True when the JSON value is text or bytes that may hold the unavailable-value placeholder.
    may_hold_placeholder: bool = False


def _typed(arrow_type: pa.DataType) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        return pa.array(values, type=arrow_type)
    return convert


def _floating(arrow_type: pa.DataType) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        try:
            return pa.array(values, type=arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            # Jackson writes NaN and the infinities as quoted text.
            return pa.array([_NON_FINITE.get(v, v) if isinstance(v, str) else v for v in values],
                            type=arrow_type)
    return convert


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _binary_decoder(mode: str) -> Callable[[str], bytes]:
    if mode == "hex":
        return bytes.fromhex
    if mode == "base64-url-safe":
        return lambda text: base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return _b64


def _binary(decode_text: Callable[[str], bytes]) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        return pa.array([None if v is None else decode_text(v) for v in values], type=pa.binary())
    return convert


def _unscaled(value: Any) -> int:
    if isinstance(value, str):
        return int.from_bytes(_b64(value), "big", signed=True)
    raise TypeError(f"expected base64 text, got {type(value).__name__}")


def _decimal_value(value: Any, scale: int) -> decimal.Decimal:
    if isinstance(value, str):
        return decimal.Decimal(_unscaled(value)).scaleb(-scale, _EXACT)
    # JsonConverter decimal.format=NUMERIC writes a JSON number; repr() keeps its shortest text.
    return decimal.Decimal(repr(value) if isinstance(value, float) else value)


def _fixed_decimal(precision: int, scale: int) -> Converter:
    arrow_type = pa.decimal128(precision, scale)
    limit = 10**precision

    def convert(values: list[Any]) -> pa.Array:
        if not all(v is None or isinstance(v, str) for v in values):
            return pa.array([None if v is None else _decimal_value(v, scale) for v in values], type=arrow_type)
        # The wire value *is* the unscaled integer: lay it out as Arrow's 16-byte little-endian
        # decimal128 directly instead of building a Python Decimal per value.
        unscaled = [0 if v is None else _unscaled(v) for v in values]
        if any(not -limit < u < limit for u in unscaled):
            raise ValueConversionError(f"a value has more than {precision} digits for decimal({precision},{scale})")
        data = pa.py_buffer(b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled))
        validity = None if None not in values else pa.array([v is not None for v in values], pa.bool_()).buffers()[1]
        return pa.Array.from_buffers(arrow_type, len(values), [validity, data])
    return convert


def _decimal_text(precision_scale: Callable[[Any], decimal.Decimal]) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        return pa.array([None if v is None else format(precision_scale(v), "f") for v in values],
                        type=pa.string())
    return convert


def _variable_value(value: Any) -> decimal.Decimal:
    if not isinstance(value, dict) or value.keys() != {"scale", "value"} or type(value["scale"]) is not int:
        raise TypeError("VariableScaleDecimal must be an object with an integer 'scale' and a 'value'")
    return decimal.Decimal(_unscaled(value["value"])).scaleb(-value["scale"], _EXACT)


def _variable_decimal(target_scale: int) -> Converter:
    arrow_type = pa.decimal128(_MAX_SPARK_PRECISION, target_scale)
    quantum = decimal.Decimal(1).scaleb(-target_scale)

    def exact(value: Any) -> decimal.Decimal:
        d = _variable_value(value)
        # quantize under the trapping context raises Inexact instead of rounding silently
        return d.quantize(quantum, context=_EXACT)

    def convert(values: list[Any]) -> pa.Array:
        return pa.array([None if v is None else exact(v) for v in values], type=arrow_type)
    return convert


def _scaled_ints(multiplier: int, divisor: int, arrow_type: pa.DataType) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        if divisor != 1:  # floor, so times before the epoch round the same way as after
            values = [None if v is None else v // divisor for v in values]
        ints = pa.array(values, type=pa.int64())
        if multiplier != 1:
            ints = pc.multiply_checked(ints, multiplier)
        return ints.cast(arrow_type)
    return convert


def _dates(values: list[Any]) -> pa.Array:
    return pa.array(values, type=pa.int32()).cast(pa.date32())


def _time_text(multiplier: int, divisor: int) -> Converter:
    def text(v: int) -> str:
        micros = v * multiplier // divisor
        seconds, frac = divmod(micros, 1_000_000)
        minutes, sec = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        return f"{hours:02d}:{minute:02d}:{sec:02d}.{frac:06d}"

    def convert(values: list[Any]) -> pa.Array:
        return pa.array([None if v is None else text(v) for v in values], type=pa.string())
    return convert


def _zoned_timestamp(values: list[Any]) -> pa.Array:
    utc = pa.timestamp("us", tz="UTC")
    try:
        return pa.array(values, type=pa.string()).cast(utc)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # Nanosecond fractions or years Arrow's parser refuses: parse one by one, truncating to µs.
        return pa.array([None if v is None else _parse_zoned(v) for v in values], type=utc)


def _parse_zoned(text: str) -> datetime:
    head, dot, rest = text.partition(".")
    if dot:
        digits = "".join(ch for ch in rest if ch.isdigit())
        zone = rest[len(digits):]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def _list(item: ColumnType) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        offsets = [0]
        flat: list[Any] = []
        mask = []
        for v in values:
            if v is None:
                mask.append(True)
            else:
                mask.append(False)
                flat.extend(v)
            offsets.append(len(flat))
        children = item.convert(flat)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), children,
                                        type=pa.list_(item.arrow), mask=pa.array(mask, pa.bool_()))
    return convert


def _map(key: ColumnType, value: ColumnType, string_keys: bool) -> Converter:
    def convert(values: list[Any]) -> pa.Array:
        offsets = [0]
        keys: list[Any] = []
        items: list[Any] = []
        mask = []
        for v in values:
            mask.append(v is None)
            if v is not None:
                # string keys: a JSON object; other keys: an array of [key, value] pairs
                pairs = v.items() if string_keys else v
                if not string_keys and not all(type(p) is list and len(p) == 2 for p in pairs):
                    raise ValueConversionError("a map with non-text keys must be an array of [key, value] pairs")
                for k, item in pairs:
                    keys.append(k)
                    items.append(item)
            offsets.append(len(keys))
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), key.convert(keys), value.convert(items),
                                       type=pa.map_(key.arrow, value.arrow), mask=pa.array(mask, pa.bool_()))
    return convert


def _struct(names: Sequence[str], children: Sequence[ColumnType], required: Sequence[str]) -> Converter:
    """Children convert without their own required check: a null struct has null fields."""
    fields = [pa.field(n, c.arrow) for n, c in zip(names, children)]
    declared = frozenset(names)

    def convert(values: list[Any]) -> pa.Array:
        for v in values:
            if v is None:
                continue
            if v.keys() != declared:
                raise ValueConversionError(fields_problem(declared, v))
            for name in required:
                if v[name] is None:
                    raise ValueConversionError(f"null in required field '{name}'")
        arrays = [child.convert([None if v is None else v.get(name) for v in values])
                  for name, child in zip(names, children)]
        mask = pa.array([v is None for v in values], pa.bool_())
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)
    return convert


_PRIMITIVES: dict[str, tuple[T.DataType, pa.DataType]] = {
    "int8": (T.ByteType(), pa.int8()),
    "int16": (T.ShortType(), pa.int16()),
    "int32": (T.IntegerType(), pa.int32()),
    "int64": (T.LongType(), pa.int64()),
    "boolean": (T.BooleanType(), pa.bool_()),
    "string": (T.StringType(), pa.string()),
}


def fields_problem(declared: frozenset[str], value: dict[str, Any]) -> str:
    """What differs between a struct value's fields and its schema's (JsonConverter writes them all)."""
    missing = sorted(declared - value.keys())
    extra = sorted(value.keys() - declared)
    parts = ([f"field(s) {', '.join(map(repr, missing))} missing"] if missing else []) + (
        [f"field(s) {', '.join(map(repr, extra))} not in the schema"] if extra else [])
    return "; ".join(parts)


def column_type(schema: ConnectSchema, options: TypeOptions, *, check_required: bool = True) -> ColumnType:
    """The ``ColumnType`` for one Connect schema (see the module docstring for the mapping).

    Its converter first checks every value's JSON type (``value_problem``) and, unless
    ``check_required`` is False (the caller checks before nulling placeholders), that a required
    schema holds no null.
    """
    ctype = _column_type(schema, options)
    return replace(ctype, convert=_checked(ctype.convert, schema, check_required and not schema.optional))


def _checked(convert: Converter, schema: ConnectSchema, required: bool) -> Converter:
    kinds = json_kinds(schema)
    none = type(None)

    def checked(values: list[Any]) -> pa.Array:
        seen = set(map(type, values))
        seen.discard(none)
        if not seen <= kinds:
            bad = next(v for v in values if v is not None and type(v) not in kinds)
            raise ValueConversionError(value_problem(schema, bad) or "unexpected JSON type")
        if required and none in map(type, values):
            raise ValueConversionError(f"null in a required {schema.type} field")
        return convert(values)
    return checked


def _column_type(schema: ConnectSchema, options: TypeOptions) -> ColumnType:
    name = schema.name or ""
    if name == DECIMAL:
        scale = int(schema.parameter("scale") or 0)
        precision = int(schema.parameter("connect.decimal.precision") or _MAX_SPARK_PRECISION)
        if precision > _MAX_SPARK_PRECISION or scale > precision:
            return ColumnType(T.StringType(), pa.string(), _decimal_text(lambda v: _decimal_value(v, scale)))
        return ColumnType(T.DecimalType(precision, scale), pa.decimal128(precision, scale),
                          _fixed_decimal(precision, scale))
    if name == VARIABLE_SCALE_DECIMAL:
        if options.variable_scale_mode == "string":
            return ColumnType(T.StringType(), pa.string(), _decimal_text(_variable_value))
        scale = options.variable_scale
        return ColumnType(T.DecimalType(_MAX_SPARK_PRECISION, scale), pa.decimal128(_MAX_SPARK_PRECISION, scale),
                          _variable_decimal(scale))
    if name in _DATE_NAMES:
        return ColumnType(T.DateType(), pa.date32(), _dates)
    if name in _TS_MULTIPLIER:
        mul, div = _TS_MULTIPLIER[name]
        return ColumnType(T.TimestampNTZType(), pa.timestamp("us"), _scaled_ints(mul, div, pa.timestamp("us")))
    if name == ZONED_TIMESTAMP:
        return ColumnType(T.TimestampType(), pa.timestamp("us", tz="UTC"), _zoned_timestamp)
    if name in _TIME_MULTIPLIER:
        mul, div = _TIME_MULTIPLIER[name]
        if options.time_mode == "string":
            return ColumnType(T.StringType(), pa.string(), _time_text(mul, div))
        return ColumnType(T.LongType(), pa.int64(), _scaled_ints(mul, div, pa.int64()))
    return _structural_type(schema, options)


def _structural_type(schema: ConnectSchema, options: TypeOptions) -> ColumnType:
    kind = schema.type
    if kind in _PRIMITIVES:
        spark, arrow = _PRIMITIVES[kind]
        if kind == "string" and _is_binary_source(schema) and options.binary_handling_mode != "bytes":
            return ColumnType(T.BinaryType(), pa.binary(), _binary(_binary_decoder(options.binary_handling_mode)),
                              may_hold_placeholder=True)
        return ColumnType(spark, arrow, _typed(arrow), may_hold_placeholder=kind == "string")
    if kind == "float":
        return ColumnType(T.FloatType(), pa.float32(), _floating(pa.float32()))
    if kind == "double":
        return ColumnType(T.DoubleType(), pa.float64(), _floating(pa.float64()))
    if kind == "bytes":
        return ColumnType(T.BinaryType(), pa.binary(), _binary(_b64), may_hold_placeholder=True)
    if kind == "array":
        assert schema.items is not None
        item = column_type(schema.items, options)
        return ColumnType(T.ArrayType(item.spark, True), pa.list_(item.arrow), _list(item),
                          may_hold_placeholder=item.may_hold_placeholder)
    if kind == "map":
        assert schema.keys is not None and schema.values is not None
        key = column_type(schema.keys, options)
        value = column_type(schema.values, options)
        return ColumnType(T.MapType(key.spark, value.spark, True), pa.map_(key.arrow, value.arrow),
                          _map(key, value, string_keys=schema.keys.type == "string"))
    if kind == "struct":
        names = [f.name for f in schema.fields]
        children = [column_type(f.schema, options, check_required=False) for f in schema.fields]
        spark_struct = T.StructType([T.StructField(n, c.spark, True) for n, c in zip(names, children)])
        arrow_struct = pa.struct([pa.field(n, c.arrow) for n, c in zip(names, children)])
        required = [f.name for f in schema.fields if not f.schema.optional]
        return ColumnType(spark_struct, arrow_struct, _struct(names, children, required))
    raise ValueConversionError(f"Kafka Connect type {kind!r} has no Spark column type")


def _is_binary_source(schema: ConnectSchema) -> bool:
    source_type = schema.parameter("__debezium.source.column.type")
    return source_type is not None and source_type.upper() in BINARY_SOURCE_TYPES


def convert_column(name: str, column: ColumnType, values: list[Any]) -> pa.Array:
    """``column.convert(values)`` with any failure turned into a ``ValueConversionError`` naming ``name``."""
    try:
        return column.convert(values)
    except ValueConversionError as exc:
        raise ValueConversionError(f"column '{name}': {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - whatever a value makes a converter raise is that value's fault
        raise ValueConversionError(f"column '{name}': {type(exc).__name__}: {exc}") from exc
