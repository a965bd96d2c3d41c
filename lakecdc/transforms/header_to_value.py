"""Debezium's ``io.debezium.transforms.HeaderToValue``: headers become value fields, at the top level
or nested with dot notation (``ConnectRecordUtil.makeNewSchema`` / ``makeUpdatedValue``).

``headers`` (in order) are put into the fields named by ``fields``; ``operation`` ``copy`` keeps the
headers, ``move`` removes them. Each new field has the header's schema. A dotted name goes into a
struct of the value: an existing struct field is rebuilt with the new field appended
(``SchemaUtil.copySchemaBasics``: its name and version kept, required); a struct that does not
exist is created as an optional unnamed struct at the end of the value. A primitive on the path
is an error. Debezium 3.6.3's walk of the path has corner cases that show in the output, and
lakecdc keeps them so the records stay the same:

- a field counts as "on a path" when any dotted name contains ``<field>.`` anywhere (so ``a`` is
  walked for ``xa.b``);
- a missing struct two levels down (``source.meta.x``) is created empty, and the header is lost;
  a missing struct at the top with a longer path (``a.b.c``) gets ``b`` with the header's value;
- a struct field that is null (``after`` of a delete) is not walked: its new fields are lost;
- a struct literally named ``payload`` is treated as the top level.

Null fields of the value are read through their default (``Struct.get``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lakecdc.events.schema import ConnectField, ConnectSchema
from lakecdc.transforms.base import (
    Record,
    Settings,
    TransformContext,
    TransformDataError,
    copy_basics,
    field_of,
    require_struct,
    struct_get,
)
from lakecdc.transforms.headers import header_value

ROOT = "payload"  # ConnectRecordUtil.ROOT_FIELD_NAME: the name the top level is walked as
_PRIMITIVES = ("int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes")


@dataclass(frozen=True)
class Entry:
    """``ConnectRecordUtil.NewEntry``: a destination (maybe dotted) with the header's schema and value."""

    name: str
    schema: ConnectSchema | None
    value: Any


class HeaderToValue:
    """``io.debezium.transforms.HeaderToValue``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.headers = settings.items("headers", required=True)
        self.fields = settings.items("fields", required=True)
        self.move = settings.choice("operation", ("move", "copy"), ignore_case=True) == "move"
        for key, items in (("headers", self.headers), ("fields", self.fields)):
            if not items or any(not i or " " in i for i in items):
                raise settings.error(key, "must be a list of names without empty elements or spaces")
        if len(self.headers) != len(self.fields):
            raise settings.error("fields", "'fields' config must have the same number of elements as 'headers' config.")
        self.header_schemas = context.header_schemas_enable
        self.shares_headers = not self.move  # copy: newRecord with record.headers() (:mod:`.shared_headers`)
        self._schemas: dict[tuple[int, tuple[tuple[str, ConnectSchema | None], ...]],
                            tuple[ConnectSchema, ConnectSchema]] = {}

    def apply(self, record: Record) -> Record:
        if record.value is None:
            return record
        schema = record.value_schema
        value = require_struct(schema, record.value, "Header field insertion")
        assert schema is not None
        entries = [Entry(self.fields[self.headers.index(name)], *header_value(name, raw, self.header_schemas))
                   for name, raw in record.headers if name in self.headers]
        if not entries:
            return record
        key = (id(schema), tuple((e.name, e.schema) for e in entries))
        hit = self._schemas.get(key)
        if hit is None or hit[0] is not schema:
            if len(self._schemas) >= 64:  # Debezium's cache holds 64 schemas
                self._schemas.clear()
            hit = self._schemas[key] = (schema, new_schema(schema, entries))
        new_value = updated_value(value, schema, entries, hit[1])
        headers = [(k, v) for k, v in record.headers if k not in self.headers] if self.move else record.headers
        return replace(record, value_schema=hit[1], value=new_value, headers=headers)


def new_schema(old: ConnectSchema, entries: list[Entry]) -> ConnectSchema:
    """``makeNewSchema``: the value schema with the entries added where their names point."""
    nested = [e.name for e in entries if "." in e.name]
    _validate_path(old, nested)
    return _build_schema(ROOT, old, entries, nested, 0)


def updated_value(value: dict[str, Any], schema: ConnectSchema, entries: list[Entry],
                  updated: ConnectSchema) -> dict[str, Any]:
    """``makeUpdatedValue``: the value rebuilt for ``updated`` with the entries' values."""
    nested = [e.name for e in entries if "." in e.name]
    return _build_value(ROOT, value, schema, entries, updated, nested, 0)


def _validate_path(schema: ConnectSchema, nested: list[str]) -> None:
    for name in nested:
        parts = name.split(".")
        current = schema
        for parent in parts[:-1]:
            found = _field(current, parent)
            if found is None:
                break
            if found.schema.type in _PRIMITIVES:
                raise TransformDataError(f"Field '{parent}' is a primitive type, not a struct. Cannot add nested "
                                         f"field '{name}'.")
            current = found.schema


def _field(schema: ConnectSchema, name: str) -> ConnectField | None:
    if schema.type != "struct":  # Connect's Schema.field on an array or a map
        raise TransformDataError("Cannot look up fields on non-struct type")
    return field_of(schema, name)


def _build_schema(name: str, old: ConnectSchema, entries: list[Entry], nested: list[str], level: int) -> ConnectSchema:
    if old.type in _PRIMITIVES:
        return old
    if old.type != "struct":
        raise TransformDataError("Cannot list fields on non-struct type")
    fields = [ConnectField(f.name, _build_schema(f.name, f.schema, entries, nested, level + 1))
              if _on_a_path(f.name, nested) else f for f in old.fields]
    names = {f.name for f in fields}
    for entry in entries:
        added = _field_name(entry.name, name, level)
        if added is not None and added not in names:
            fields.append(ConnectField(added, _entry_schema(entry)))
            names.add(added)
    for parent in _new_parents(name, old, nested, level):
        children: list[ConnectField] = []
        for entry in entries:
            child = _child_of_new_parent(entry.name, parent, name, level)
            if child is not None:
                if any(c.name == child for c in children):
                    raise TransformDataError(f"Cannot create field because of field name duplication {child}")
                children.append(ConnectField(child, _entry_schema(entry)))
        if parent in names:
            raise TransformDataError(f"Cannot create field because of field name duplication {parent}")
        fields.append(ConnectField(parent, ConnectSchema(type="struct", optional=True, fields=tuple(children))))
        names.add(parent)
    return copy_basics(old, fields)


def _build_value(name: str, value: dict[str, Any], schema: ConnectSchema, entries: list[Entry],
                 updated: ConnectSchema, nested: list[str], level: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in schema.fields:
        current = struct_get(schema, value, f.name, True)
        if current is None:
            continue
        if _on_a_path(f.name, nested):
            inner = require_struct(f.schema, current, "Nested field")
            out[f.name] = _build_value(f.name, inner, f.schema, entries, updated.field(f.name).schema, nested,
                                       level + 1)
        else:
            out[f.name] = current
    for entry in entries:
        added = _field_name(entry.name, name, level)
        if added is not None:
            if field_of(updated, added) is None:
                raise TransformDataError(f"{added} is not a valid field name")
            out[added] = entry.value
    for parent in _new_parents(name, schema, nested, level):
        parent_field = field_of(updated, parent)
        if parent_field is not None:
            children = {}
            for entry in entries:
                child = _child_of_new_parent(entry.name, parent, name, level)
                if child is not None:
                    children[child] = entry.value
            out[parent] = {f.name: children.get(f.name) for f in parent_field.schema.fields}
    return {f.name: out.get(f.name) for f in updated.fields}


def _entry_schema(entry: Entry) -> ConnectSchema:
    if entry.schema is None:
        raise TransformDataError(f"header for field '{entry.name}' has no schema")
    return entry.schema


def _on_a_path(field: str, nested: list[str]) -> bool:
    """``isContainedIn``: any dotted name containing ``<field>.`` (anywhere, as Debezium checks)."""
    return any(field + "." in name for name in nested)


def _field_name(destination: str, current: str, level: int) -> str | None:
    """``getFieldName``: the name to add at this struct, if the destination ends here."""
    parts = destination.split(".")
    if len(parts) == 1 and current == ROOT:
        return parts[0]
    if len(parts) == level + 1 and parts[max(level - 1, 0)] == current:
        return parts[level]
    return None


def _new_parents(current: str, schema: ConnectSchema, nested: list[str], level: int) -> list[str]:
    """``getNewParentFieldsAtLevel``: structs to create at this level for names whose parent is missing."""
    existing = set(schema.field_names)
    found: list[str] = []
    for name in nested:
        parts = name.split(".")
        here = (level == 0 and current == ROOT) or (0 < level < len(parts) and parts[level - 1] == current)
        if here and level < len(parts) - 1:
            parent = parts[level]
            if parent not in existing and parent not in found:
                found.append(parent)
    return found


def _child_of_new_parent(destination: str, parent: str, current: str, level: int) -> str | None:
    """``getNestedFieldNameForParent``."""
    parts = destination.split(".")
    if level == 0 and current == ROOT:
        return parts[1] if len(parts) > 1 and parent == parts[0] else None
    if level > 0:
        path = ".".join(parts[:min(level + 1, len(parts))])
        if path == parent and level + 1 < len(parts):
            return parts[level + 1]
    return None
