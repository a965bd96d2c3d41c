"""Kafka Connect's ``TimestampConverter$Key`` / ``$Value``: a timestamp field (or the whole key or
value) converted between ``unix`` (int64 in ``unix.precision``), ``string`` (a ``SimpleDateFormat``
``format``, UTC) and Connect's ``Timestamp`` / ``Date`` / ``Time`` logical types.

The input kind comes from the field's schema: a Connect logical name, else ``string``, else
``int64`` (unix: Debezium's ``MicroTimestamp`` is read as a unix value in ``unix.precision``); any
other schema is an error, as in Kafka Connect. Conversions go through epoch milliseconds (Java's
``java.util.Date``), truncating toward zero as ``TimeUnit`` does. Text is written and read in the
proleptic Gregorian calendar: for dates before 1582-10-15 Java's ``GregorianCalendar`` uses the Julian
one and its text differs.
"""

from __future__ import annotations

from typing import Any

from lakecdc.events.schema import ConnectField, ConnectSchema, primitive
from lakecdc.transforms.base import (
    KeyOrValue,
    Record,
    SchemaCache,
    Settings,
    TransformContext,
    TransformDataError,
    struct_get,
)
from lakecdc.transforms.fields import CONNECT_DATE, CONNECT_TIME, CONNECT_TIMESTAMP, logical
from lakecdc.transforms.java_date_format import SimpleDateFormat

TARGETS = ("string", "unix", "Date", "Time", "Timestamp")
PRECISIONS = ("nanoseconds", "microseconds", "milliseconds", "seconds")
_DAY_MS = 86_400_000


def _truncate(numerator: int, denominator: int) -> int:
    """Java's integer division (toward zero), as ``TimeUnit.convert`` does."""
    q = abs(numerator) // denominator
    return q if numerator >= 0 else -q


class TimestampConverter:
    """``org.apache.kafka.connect.transforms.TimestampConverter$Key`` / ``$Value``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.part = KeyOrValue("key" if settings.class_name.endswith("$Key") else "value")
        self.field = settings.string("field", "") or ""
        self.target = settings.choice("target.type", TARGETS)
        pattern = settings.string("format", "") or ""
        self.precision = settings.choice("unix.precision", PRECISIONS, "milliseconds")
        self.with_default = settings.boolean("replace.null.with.default", True)
        if self.target == "string" and not pattern.strip():
            raise settings.error("format", "TimestampConverter requires format option to be specified when using "
                                           "string timestamps")
        self.format: SimpleDateFormat | None = None
        if pattern.strip():
            try:
                self.format = SimpleDateFormat(pattern)
            except ValueError as exc:
                raise settings.error("format", f"TimestampConverter requires a SimpleDateFormat-compatible pattern "
                                               f"for string timestamps: {pattern} ({exc})") from None
        self._schemas = SchemaCache()

    def apply(self, record: Record) -> Record:
        schema = self.part.schema(record)
        value = self.part.value(record)
        if schema is None:
            if value is None:
                return record
            raise TransformDataError("TimestampConverter: lakecdc converts values with schemas only")
        if not self.field:
            return self.part.new(record, self._target_schema(schema.optional), self._convert(value, schema))
        if value is not None and not isinstance(value, dict):
            raise TransformDataError("Only Struct objects supported for [converting timestamp formats], found: "
                                     f"{type(value).__name__}")
        new_schema = self._schemas.get((schema,), lambda: ConnectSchema(
            type="struct", optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
            parameters=schema.parameters,
            fields=tuple(ConnectField(f.name, self._target_schema(f.schema.optional)) if f.name == self.field else f
                         for f in schema.fields)))
        if value is None:
            return self.part.new(record, new_schema, None)
        new_value = {}
        for f in schema.fields:
            current = struct_get(schema, value, f.name, self.with_default)
            new_value[f.name] = self._convert(current, f.schema) if f.name == self.field else current
        return self.part.new(record, new_schema, new_value)

    def _target_schema(self, optional: bool) -> ConnectSchema:
        if self.target == "string":
            return primitive("string", optional)
        if self.target == "unix":
            return primitive("int64", optional)
        type_name = "int64" if self.target == "Timestamp" else "int32"
        name = {"Timestamp": CONNECT_TIMESTAMP, "Date": CONNECT_DATE, "Time": CONNECT_TIME}[self.target]
        return logical(type_name, name, optional)

    def _convert(self, value: Any, schema: ConnectSchema) -> Any:
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, _kind(schema)))

    def _to_millis(self, value: Any, kind: str) -> int:
        if kind == "Timestamp" or kind == "Time":
            return int(value)
        if kind == "Date":
            return int(value) * _DAY_MS
        if kind == "string":
            if not isinstance(value, str):
                raise TransformDataError(f"Expected string timestamp to be a String, but found {type(value).__name__}")
            if self.format is None:
                raise TransformDataError("TimestampConverter needs 'format' to parse string timestamps")
            try:
                return self.format.parse(value)
            except NotImplementedError as exc:
                raise TransformDataError(f"Could not parse timestamp {value!r} with pattern ({self.format.pattern}): "
                                         f"{exc}") from None
            except (ValueError, StopIteration):
                raise TransformDataError(f"Could not parse timestamp: value ({value}) does not match pattern "
                                         f"({self.format.pattern})") from None
        unit = {"seconds": (1000, 1), "milliseconds": (1, 1), "microseconds": (1, 1000),
                "nanoseconds": (1, 1_000_000)}[self.precision]
        return _truncate(int(value) * unit[0], unit[1])

    def _from_millis(self, millis: int) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            factor = {"seconds": None, "milliseconds": 1, "microseconds": 1000,
                      "nanoseconds": 1_000_000}[self.precision]
            return _truncate(millis, 1000) if factor is None else millis * factor
        if self.target == "Date":
            return millis // _DAY_MS
        if self.target == "Time":
            return millis % _DAY_MS
        return millis


def _kind(schema: ConnectSchema) -> str:
    """``timestampTypeFromSchema``."""
    names: dict[str | None, str] = {CONNECT_TIMESTAMP: "Timestamp", CONNECT_DATE: "Date", CONNECT_TIME: "Time"}
    if schema.name in names:
        return names[schema.name]
    if schema.type == "string":
        return "string"
    if schema.type == "int64":
        return "unix"
    raise TransformDataError(f"Schema {schema.name or schema.type} does not correspond to a known timestamp type "
                             "format")

