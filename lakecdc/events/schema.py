"""Kafka Connect schema model, rendered exactly as Kafka Connect's ``JsonConverter`` renders it.

A schema serializes to a JSON object whose keys always come in this order (JsonConverter builds an
ordered Jackson ``ObjectNode``)::

    {"type": "struct", "fields": [...],          # "items" for arrays, "keys"/"values" for maps
     "optional": false, "name": "dbz.public.customers.Key", "version": 1, "doc": "...",
     "parameters": {"scale": "2", "connect.decimal.precision": "12"},
     "default": 0,
     "field": "id"}                              # only when the schema is a struct field

``name``, ``version``, ``doc``, ``parameters`` and ``default`` appear only when set. Example, the key
schema Debezium writes for ``public.customers(id serial primary key)``::

    {"type":"struct","fields":[{"type":"int32","optional":false,"default":0,"field":"id"}],
     "optional":false,"name":"dbz.public.customers.Key"}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lakecdc.events.values import connect_to_json, json_to_connect

#: JSON type names, as JsonConverter writes them (Connect FLOAT32 is "float", FLOAT64 is "double").
PRIMITIVE_TYPES = frozenset(
    {"int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"}
)
CONTAINER_TYPES = frozenset({"array", "map", "struct"})
ALL_TYPES = PRIMITIVE_TYPES | CONTAINER_TYPES

# Accept Connect's Java enum spellings in builders; the JSON form always uses the converter's names.
_TYPE_ALIASES = {"float32": "float", "float64": "double", "bool": "boolean"}


def normalize_type(type_name: str) -> str:
    """Return the JsonConverter type name for ``type_name`` (``float32`` -> ``float``)."""
    resolved = _TYPE_ALIASES.get(type_name.lower(), type_name.lower())
    if resolved not in ALL_TYPES:
        raise ValueError(
            f"unknown Kafka Connect schema type {type_name!r}; expected one of {sorted(ALL_TYPES)}"
        )
    return resolved


@dataclass(frozen=True, slots=True)
class ConnectField:
    """One named field of a struct schema (``"field"`` in the JSON form)."""

    name: str
    schema: ConnectSchema


@dataclass(frozen=True, slots=True)
class ConnectSchema:
    """An immutable Kafka Connect schema.

    ``parameters`` keeps insertion order (Connect uses a LinkedHashMap and the order is visible on
    the wire). ``default`` holds a Connect value (see :mod:`lakecdc.events.values`).
    """

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] | None = None
    default: Any = field(default=None, hash=False, compare=True)
    fields: tuple[ConnectField, ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None

    # ---- accessors -------------------------------------------------------------------------
    def parameter(self, key: str) -> str | None:
        """The value of one schema parameter, or None."""
        if self.parameters is None:
            return None
        for k, v in self.parameters:
            if k == key:
                return v
        return None

    @property
    def params(self) -> dict[str, str]:
        """Parameters as an ordered dict (empty when none)."""
        return dict(self.parameters or ())

    def field(self, name: str) -> ConnectField:
        """The struct field called ``name``; KeyError naming the schema when it does not exist."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"schema {self.name or self.type!r} has no field {name!r}")

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def as_optional(self) -> ConnectSchema:
        return replace(self, optional=True)

    def as_required(self) -> ConnectSchema:
        return replace(self, optional=False)

    # ---- JSON form -------------------------------------------------------------------------
    def to_json(self, field_name: str | None = None) -> dict[str, Any]:
        """The schema as JsonConverter writes it, keys in JsonConverter's order."""
        out: dict[str, Any] = {"type": self.type}
        if self.type == "struct":
            out["fields"] = [f.schema.to_json(f.name) for f in self.fields]
        elif self.type == "array":
            assert self.items is not None
            out["items"] = self.items.to_json()
        elif self.type == "map":
            assert self.keys is not None and self.values is not None
            out["keys"] = self.keys.to_json()
            out["values"] = self.values.to_json()
        out["optional"] = self.optional
        if self.name is not None:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.doc is not None:
            out["doc"] = self.doc
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        if self.default is not None:
            out["default"] = connect_to_json(self, self.default)
        if field_name is not None:
            out["field"] = field_name
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectSchema:
        """Parse the JsonConverter form (``{"type": ..., "optional": ..., ...}``).

        Raises ValueError naming the offending part when the JSON is not a Connect schema.
        """
        if not isinstance(data, Mapping) or "type" not in data:
            raise ValueError(f"not a Kafka Connect schema (no 'type'): {str(data)[:200]}")
        _check_attributes(data)
        type_name = normalize_type(str(data["type"]))
        fields: tuple[ConnectField, ...] = ()
        items = keys = values = None
        if type_name == "struct":
            parsed = []
            raw_fields = data.get("fields", ())
            if not isinstance(raw_fields, (list, tuple)):
                raise ValueError(f"struct {data.get('name')!r}: 'fields' must be an array")
            for raw in raw_fields:
                if not isinstance(raw, Mapping) or not isinstance(raw.get("field"), str):
                    raise ValueError(f"struct {data.get('name')!r} has a field without a name")
                parsed.append(ConnectField(raw["field"], cls.from_json(raw)))
            fields = tuple(parsed)
        elif type_name == "array":
            if "items" not in data:
                raise ValueError(f"array schema {data.get('name')!r} has no 'items'")
            items = cls.from_json(data["items"])
        elif type_name == "map":
            if "keys" not in data or "values" not in data:
                raise ValueError(f"map schema {data.get('name')!r} needs 'keys' and 'values'")
            keys = cls.from_json(data["keys"])
            values = cls.from_json(data["values"])
        params = data.get("parameters")
        schema = cls(
            type=type_name,
            optional=bool(data.get("optional", False)),
            name=data.get("name"),
            version=data.get("version"),
            doc=data.get("doc"),
            parameters=tuple((str(k), str(v)) for k, v in params.items()) if params is not None else None,
            fields=fields,
            items=items,
            keys=keys,
            values=values,
        )
        if data.get("default") is not None:
            schema = replace(schema, default=json_to_connect(schema, data["default"]))
        return schema


def _check_attributes(data: Mapping[str, Any]) -> None:
    """ValueError naming the attribute whose JSON type is not the one JsonConverter writes."""
    expected = {"optional": (bool,), "name": (str,), "doc": (str,), "version": (int,), "parameters": (dict,)}
    for key, kinds in expected.items():
        value = data.get(key)
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool) is not (kinds == (bool,))):
            raise ValueError(f"schema {str(data.get('name'))[:100]!r}: '{key}' must be a JSON "
                             f"{'object' if kinds == (dict,) else kinds[0].__name__}, got {str(value)[:40]!r}")
    params = data.get("parameters")
    if params is not None and not all(isinstance(v, str) for v in params.values()):
        raise ValueError(f"schema {str(data.get('name'))[:100]!r}: 'parameters' values must be strings")


# ---- builders ------------------------------------------------------------------------------
def primitive(
    type_name: str,
    optional: bool = False,
    *,
    name: str | None = None,
    version: int | None = None,
    doc: str | None = None,
    parameters: Mapping[str, str] | None = None,
    default: Any = None,
) -> ConnectSchema:
    """A primitive schema, e.g. ``primitive("int32", default=0)``."""
    type_name = normalize_type(type_name)
    if type_name not in PRIMITIVE_TYPES:
        raise ValueError(f"{type_name!r} is not a primitive type; use struct(), array() or map_()")
    return ConnectSchema(
        type=type_name,
        optional=optional,
        name=name,
        version=version,
        doc=doc,
        parameters=tuple(parameters.items()) if parameters is not None else None,
        default=default,
    )


def struct(
    fields: Iterable[tuple[str, ConnectSchema]] | Iterable[ConnectField],
    *,
    optional: bool = False,
    name: str | None = None,
    version: int | None = None,
    doc: str | None = None,
    parameters: Mapping[str, str] | None = None,
) -> ConnectSchema:
    """A struct schema from ``(name, schema)`` pairs (order kept)."""
    built: list[ConnectField] = []
    seen: set[str] = set()
    for f in fields:
        cf = f if isinstance(f, ConnectField) else ConnectField(f[0], f[1])
        if cf.name in seen:
            raise ValueError(f"struct {name!r} declares field {cf.name!r} twice")
        seen.add(cf.name)
        built.append(cf)
    return ConnectSchema(
        type="struct",
        optional=optional,
        name=name,
        version=version,
        doc=doc,
        parameters=tuple(parameters.items()) if parameters is not None else None,
        fields=tuple(built),
    )


def array(items: ConnectSchema, *, optional: bool = False, name: str | None = None) -> ConnectSchema:
    return ConnectSchema(type="array", optional=optional, name=name, items=items)


def map_(
    keys: ConnectSchema, values: ConnectSchema, *, optional: bool = False, name: str | None = None
) -> ConnectSchema:
    return ConnectSchema(type="map", optional=optional, name=name, keys=keys, values=values)


# Schemas Connect predefines (Schema.STRING_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA, ...).
STRING = primitive("string")
OPTIONAL_STRING = primitive("string", True)
INT32 = primitive("int32")
OPTIONAL_INT32 = primitive("int32", True)
INT64 = primitive("int64")
OPTIONAL_INT64 = primitive("int64", True)
BOOLEAN = primitive("boolean")
OPTIONAL_BOOLEAN = primitive("boolean", True)
