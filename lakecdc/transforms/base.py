"""What every transform shares: its settings, its errors, and Connect's schema and struct rules.

A transform sees the records lakecdc's capture hands to the sink (``ChangeRecord``: topic, key and
key schema, value and value schema, headers) before they are serialised, as a Kafka Connect
``Transformation`` sees a ``SourceRecord``. Values are Connect values (a struct is a dict in field
order, see :mod:`lakecdc.events.values`); a transform returns a new record, or None to drop it.

Kafka Connect's struct accessors are followed where the difference shows in the output:
``Struct.get`` returns a field's schema default for a null (``replace.null.with.default=true``),
``getWithoutDefault`` the null itself. ``SchemaUtil.copySchemaBasics`` copies name, version, doc
and parameters only: a struct rebuilt from it is required and has no default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lakecdc.errors import ConfigError, TerminalError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import ConnectField, ConnectSchema

Record = ChangeRecord


class Transform(Protocol):
    """One configured transformation (Kafka Connect's ``Transformation.apply``)."""

    def apply(self, record: Record) -> Record | None: ...


class TransformDataError(TerminalError):
    """A record a transform cannot handle (Kafka Connect's ``DataException``): the capture stops, as a
    Kafka Connect task does with ``errors.tolerance=none``, before the record is sent."""


@dataclass
class Settings:
    """The ``transforms.<alias>.*`` (or ``predicates.<alias>.*``) properties of one alias, read with
    Kafka Connect's ``ConfigDef`` parsing; every error names the full property and the class."""

    family: str  # "transforms" or "predicates"
    alias: str
    class_name: str
    values: Mapping[str, str]
    read: set[str] = field(default_factory=set)

    def name(self, key: str) -> str:
        return f"{self.family}.{self.alias}.{key}"

    def error(self, key: str | None, message: str) -> ConfigError:
        where = f"property '{self.name(key)}' of " if key else ""
        return ConfigError(f"{where}{self.family[:-1]} '{self.alias}' ({self.class_name}): {message}",
                           self.name(key) if key else f"{self.family}.{self.alias}.type")

    def string(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        self.read.add(key)
        value = self.values.get(key)
        if value is None:
            if required:
                raise self.error(key, "is required and missing")
            return default
        return value

    def required(self, key: str) -> str:
        value = self.string(key, required=True)
        assert value is not None
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.string(key)
        if value is None:
            return default
        text = value.strip().lower()
        if text not in ("true", "false"):
            raise self.error(key, f"expected true or false, got {value!r}")
        return text == "true"

    def integer(self, key: str, default: int) -> int:
        value = self.string(key)
        if value is None:
            return default
        try:
            return int(value.strip())
        except ValueError:
            raise self.error(key, f"expected an integer, got {value!r}") from None

    def items(self, key: str, default: list[str] | None = None, *, required: bool = False) -> list[str]:
        """A ConfigDef LIST: comma-separated, items trimmed; an empty value is the empty list."""
        value = self.string(key, required=required)
        if value is None:
            return list(default or [])
        text = value.strip()
        return [item.strip() for item in text.split(",")] if text else []

    def choice(self, key: str, allowed: tuple[str, ...], default: str | None = None, *,
               ignore_case: bool = False) -> str:
        value = self.string(key, default, required=default is None)
        assert value is not None
        found = next((a for a in allowed if (a.lower() == value.strip().lower() if ignore_case else a == value)), None)
        if found is None:
            raise self.error(key, f"invalid value {value!r}: allowed values are {', '.join(allowed)}")
        return found


# ---- Connect schema and struct helpers -------------------------------------------------------

def copy_basics(schema: ConnectSchema, fields: list[ConnectField]) -> ConnectSchema:
    """``SchemaUtil.copySchemaBasics(schema, SchemaBuilder.struct())`` plus ``fields``: name, version,
    doc and parameters are kept; the result is required and has no default."""
    return ConnectSchema(type="struct", name=schema.name, version=schema.version, doc=schema.doc,
                         parameters=schema.parameters, fields=tuple(fields))


def struct_get(schema: ConnectSchema, value: Mapping[str, Any], name: str, with_default: bool) -> Any:
    """``Struct.get(name)`` (the field's default for a null) or ``getWithoutDefault(name)``."""
    found = value.get(name)
    if found is None and with_default:
        return schema.field(name).schema.default
    return found


def require_struct(schema: ConnectSchema | None, value: Any, purpose: str) -> dict[str, Any]:
    """Kafka Connect's ``Requirements.requireStruct``."""
    if schema is None or schema.type != "struct" or not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise TransformDataError(f"Only Struct objects supported for [{purpose}], found: {kind}")
    return value


def field_of(schema: ConnectSchema, name: str) -> ConnectField | None:
    return next((f for f in schema.fields if f.name == name), None)


# Built directly: dataclasses.replace costs several times more, once or twice per record and transform.
def with_key(record: Record, schema: ConnectSchema | None, key: Any) -> Record:
    return ChangeRecord(record.topic, schema, key, record.value_schema, record.value, record.headers, record.position,
                        record.partition)


def with_value(record: Record, schema: ConnectSchema | None, value: Any) -> Record:
    return ChangeRecord(record.topic, record.key_schema, record.key, schema, value, record.headers, record.position,
                        record.partition)


def with_topic(record: Record, topic: str) -> Record:
    return ChangeRecord(topic, record.key_schema, record.key, record.value_schema, record.value, record.headers,
                        record.position, record.partition)


class KeyOrValue:
    """The ``$Key`` / ``$Value`` halves of a Kafka Connect transform: which part of a record it works on."""

    def __init__(self, part: str) -> None:
        self.part = part

    def schema(self, record: Record) -> ConnectSchema | None:
        return record.key_schema if self.part == "key" else record.value_schema

    def value(self, record: Record) -> Any:
        return record.key if self.part == "key" else record.value

    def new(self, record: Record, schema: ConnectSchema | None, value: Any) -> Record:
        return with_key(record, schema, value) if self.part == "key" else with_value(record, schema, value)


Factory = Callable[[Settings, "TransformContext"], Transform]


@dataclass(frozen=True)
class TransformContext:
    """What a transform needs from the connector: how header values are written (the header
    converter's ``schemas.enable``)."""

    header_schemas_enable: bool = True


class SchemaCache:
    """Derived schemas by the identity of what they derive from (capture reuses one schema object per
    table version, so no per-record hashing of a whole schema tree); the sources are kept alive so an
    id is never reused while cached. Bounded: cleared when full."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._entries: dict[tuple[Any, ...], tuple[tuple[Any, ...], ConnectSchema]] = {}
        self._max = max_entries

    def get(self, sources: tuple[Any, ...], build: Callable[[], ConnectSchema]) -> ConnectSchema:
        key = tuple([id(s) if type(s) is ConnectSchema else s for s in sources])
        hit = self._entries.get(key)
        if hit is not None:
            return hit[1]
        if len(self._entries) >= self._max:
            self._entries.clear()
        schema = build()
        self._entries[key] = (sources, schema)
        return schema
