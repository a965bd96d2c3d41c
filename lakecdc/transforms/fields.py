"""Kafka Connect's field transforms (``InsertField``, ``ReplaceField``, ``MaskField``, ``ValueToKey``),
on records with schemas.

Every rebuilt struct schema follows ``SchemaUtil.copySchemaBasics``: name, version, doc and
parameters kept, required, no default. ``replace.null.with.default`` (default true) reads a null
field as its schema's default (``Struct.get``) before the transform works on it.
"""

from __future__ import annotations

import decimal
from dataclasses import replace
from typing import Any

from lakecdc.events.logical import DECIMAL, decimal_to_bytes
from lakecdc.events.schema import (
    INT32,
    INT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    STRING,
    ConnectField,
    ConnectSchema,
    primitive,
    struct,
)
from lakecdc.transforms.base import (
    KeyOrValue,
    Record,
    SchemaCache,
    Settings,
    TransformContext,
    TransformDataError,
    copy_basics,
    field_of,
    require_struct,
    struct_get,
)

CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"


def logical(type_name: str, name: str, optional: bool) -> ConnectSchema:
    """Connect's ``Timestamp`` / ``Date`` / ``Time`` schemas (version 1)."""
    return primitive(type_name, optional, name=name, version=1)


def _part(class_name: str) -> KeyOrValue:
    return KeyOrValue("key" if class_name.endswith("$Key") else "value")


def _schema_of(part: KeyOrValue, record: Record) -> ConnectSchema:
    schema = part.schema(record)
    if schema is None:
        raise TransformDataError(f"the record's {part.part} has no schema: lakecdc applies this transform to "
                                 "records with schemas only")
    return schema


class InsertField:
    """``org.apache.kafka.connect.transforms.InsertField$Key`` / ``$Value``. A name ending in ``!`` is a
    required field, ``?`` (the default) optional. Debezium's records have no timestamp and no Kafka
    partition (unless the outbox router placed one), so ``timestamp.field`` and most often
    ``partition.field`` are added as nulls, as Kafka Connect does.
    ``offset.field`` is accepted, as Connect accepts it, and fails every record with a key/value to
    insert into, as Connect's ``requireSinkRecord`` fails a source record (the Kafka offset is a
    sink record's): the capture stops, or with ``errors.tolerance=all`` the record is skipped."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.part = _part(settings.class_name)
        self.topic = _spec(settings.string("topic.field"))
        self.partition = _spec(settings.string("partition.field"))
        self.timestamp = _spec(settings.string("timestamp.field"))
        self.static = _spec(settings.string("static.field"))
        self.static_value = settings.string("static.value")
        self.with_default = settings.boolean("replace.null.with.default", True)
        self.offset = _spec(settings.string("offset.field"))
        if not any((self.topic, self.partition, self.offset, self.timestamp, self.static)):
            raise settings.error(None, "No field insertion configured (set topic.field, partition.field, "
                                       "timestamp.field or static.field)")
        if self.static is not None and self.static_value is None:
            raise settings.error("static.value", f"No value specified for static field: {self.static[0]}")
        self._schemas = SchemaCache()

    def apply(self, record: Record) -> Record:
        value = self.part.value(record)
        if value is None:
            return record
        schema = _schema_of(self.part, record)
        value = require_struct(schema, value, "field insertion")
        new_schema = self._schemas.get((schema,), lambda: self._schema(schema))
        new_value = {f.name: struct_get(schema, value, f.name, self.with_default) for f in schema.fields}
        if self.partition is not None:
            new_value[self.partition[0]] = record.partition  # set by a transform before (outbox), else none
        if self.timestamp is not None:
            new_value[self.timestamp[0]] = None
        if self.topic is not None:
            new_value[self.topic[0]] = record.topic
        if self.offset is not None:
            raise TransformDataError("Only SinkRecord supported for [field insertion], found: "
                                     "org.apache.kafka.connect.source.SourceRecord (offset.field needs a sink "
                                     "record's Kafka offset)")
        if self.static is not None:
            new_value[self.static[0]] = self.static_value
        return self.part.new(record, new_schema, new_value)


    def _schema(self, schema: ConnectSchema) -> ConnectSchema:
        fields = list(schema.fields)
        for spec, required, optional in ((self.topic, STRING, OPTIONAL_STRING),
                                         (self.partition, INT32, OPTIONAL_INT32),
                                         (self.offset, INT64, OPTIONAL_INT64),
                                         (self.timestamp, logical("int64", CONNECT_TIMESTAMP, False),
                                          logical("int64", CONNECT_TIMESTAMP, True)),
                                         (self.static, STRING, OPTIONAL_STRING)):
            if spec is not None:
                fields.append(ConnectField(spec[0], optional if spec[1] else required))
        return _build(schema, fields)


def _spec(text: str | None) -> tuple[str, bool] | None:
    """``InsertionSpec.parse``: (name, optional)."""
    if text is None:
        return None
    if text.endswith("?"):
        return text[:-1], True
    if text.endswith("!"):
        return text[:-1], False
    return text, True


def _build(schema: ConnectSchema, fields: list[ConnectField]) -> ConnectSchema:
    names = [f.name for f in fields]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise TransformDataError(f"Cannot create field because of field name duplication {duplicate}")
    return copy_basics(schema, fields)


class ReplaceField:
    """``org.apache.kafka.connect.transforms.ReplaceField$Key`` / ``$Value``: ``exclude`` wins over
    ``include``; ``renames`` is a list of ``old:new`` pairs."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.part = _part(settings.class_name)
        self.exclude = set(settings.items("exclude"))
        self.include = set(settings.items("include"))
        self.renames: dict[str, str] = {}
        for mapping in settings.items("renames"):
            parts = mapping.split(":")
            if len(parts) != 2:
                raise settings.error("renames", f"Invalid rename mapping: {mapping}")
            self.renames[parts[0]] = parts[1]
        self.reverse = {new: old for old, new in self.renames.items()}
        self.with_default = settings.boolean("replace.null.with.default", True)
        self._schemas = SchemaCache()

    def apply(self, record: Record) -> Record:
        value = self.part.value(record)
        if value is None:
            return record
        schema = _schema_of(self.part, record)
        value = require_struct(schema, value, "field replacement")
        new_schema = self._schemas.get((schema,), lambda: _build(
            schema, [ConnectField(self.renames.get(f.name, f.name), f.schema) for f in schema.fields
                     if self._keep(f.name)]))
        new_value = {f.name: struct_get(schema, value, self.reverse.get(f.name, f.name), self.with_default)
                     for f in new_schema.fields}
        return self.part.new(record, new_schema, new_value)

    def _keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)


class MaskField:
    """``org.apache.kafka.connect.transforms.MaskField$Key`` / ``$Value``: each listed field gets its
    type's empty value (0, false, "", [], {}, a zero decimal, the epoch for Connect dates and times),
    or ``replacement`` converted to the field's type (numbers, text and decimals only). A null stays
    null. What Java cannot mask (bytes, structs) is an error, as there; a decimal of another scale
    than its schema's fails later, in the converter, as there (:func:`_decimal`)."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.part = _part(settings.class_name)
        self.fields = set(settings.items("fields", required=True))
        if not self.fields:
            raise settings.error("fields", "must be a non-empty list")
        self.replacement = settings.string("replacement")
        if self.replacement is not None and not self.replacement:
            raise settings.error("replacement", "must be a non-empty string")
        self.with_default = settings.boolean("replace.null.with.default", True)

    def apply(self, record: Record) -> Record:
        schema = _schema_of(self.part, record)
        value = require_struct(schema, self.part.value(record), "mask fields")
        new_value = {}
        for f in schema.fields:
            current = struct_get(schema, value, f.name, self.with_default)
            new_value[f.name] = self._masked(f, current) if f.name in self.fields else current
        return self.part.new(record, schema, new_value)

    def _masked(self, field: ConnectField, value: Any) -> Any:
        if value is None:
            return None
        s = field.schema
        java_date = s.name in (CONNECT_DATE, CONNECT_TIME, CONNECT_TIMESTAMP)
        if self.replacement is None:
            if java_date:
                return 0
            if s.name == DECIMAL:
                return _decimal(decimal.Decimal(0), s)  # Java's BigDecimal.ZERO, of scale 0
            empty = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float": 0.0, "double": 0.0,
                     "boolean": False, "string": "", "array": [], "map": {}}
            if s.type not in empty:
                raise TransformDataError(f"Cannot mask value of type: {_java_class(s)}")
            return empty[s.type]
        text = self.replacement
        if java_date or s.type in ("boolean", "bytes", "struct", "array", "map") and s.name != DECIMAL:
            raise TransformDataError(f"Cannot mask value of type {_java_class(s)} with custom replacement.")
        try:
            if s.name == DECIMAL:
                number = decimal.Decimal(text)
                if not number.is_finite():  # Java's BigDecimal(String) has no NaN or infinity
                    raise ValueError(text)
                return _decimal(number, s)
            if s.type in ("int8", "int16", "int32", "int64"):
                bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[s.type]
                integer = int(text.strip())
                if not -(1 << (bits - 1)) <= integer < 1 << (bits - 1):
                    raise ValueError(text)
                return integer
            if s.type in ("float", "double"):
                return float(text)
        except (ValueError, decimal.InvalidOperation):
            raise TransformDataError(f"Unable to convert {text} (class java.lang.String) to number") from None
        return text


def _decimal(number: decimal.Decimal, schema: ConnectSchema) -> Any:
    """A masked decimal: its bytes when its scale is the schema's; otherwise the number itself, which the
    JSON converter refuses. Connect's ``Struct.put`` checks a decimal's class, not its scale, so the
    transform succeeds and the record fails in the VALUE_CONVERTER (or KEY_CONVERTER) stage
    (``Decimal.fromLogical``: "mismatching scale"), where ``errors.tolerance`` applies to it; a later
    transform that drops the field makes it convert, as there."""
    scale = int(schema.parameter("scale") or 0)
    if -int(number.as_tuple().exponent) != scale:
        return number
    return decimal_to_bytes(number, scale)


def _java_class(schema: ConnectSchema) -> str:
    if schema.name == DECIMAL:
        return "class java.math.BigDecimal"
    return {"bytes": "class [B", "struct": "class org.apache.kafka.connect.data.Struct",
            "boolean": "class java.lang.Boolean"}.get(schema.type, f"Connect {schema.type}")


class ValueToKey:
    """``org.apache.kafka.connect.transforms.ValueToKey``: the key becomes an unnamed struct of the
    listed value fields (their schemas kept). A tombstone has no value to take fields from: Kafka
    Connect fails on it, so does this (select records with a ``RecordIsTombstone`` predicate)."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.fields = settings.items("fields", required=True)
        if not self.fields:
            raise settings.error("fields", "must be a non-empty list")
        self.with_default = settings.boolean("replace.null.with.default", True)
        self._schemas = SchemaCache()

    def apply(self, record: Record) -> Record:
        if record.value_schema is None:
            kind = "null" if record.value is None else type(record.value).__name__
            raise TransformDataError("Only Map objects supported in absence of schema for [copying fields from "
                                     f"value to key], found: {kind}")
        schema = record.value_schema
        value = require_struct(schema, record.value, "copying fields from value to key")
        key_schema = self._schemas.get((schema,), lambda: self._key_schema(schema))
        key = {name: struct_get(schema, value, name, self.with_default) for name in self.fields}
        return replace(record, key_schema=key_schema, key=key)

    def _key_schema(self, schema: ConnectSchema) -> ConnectSchema:
        fields = []
        for name in self.fields:
            found = field_of(schema, name)
            if found is None:
                raise TransformDataError(f"Field does not exist: {name}")
            fields.append(ConnectField(name, found.schema))
        return struct(fields)
