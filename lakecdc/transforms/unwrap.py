"""Debezium's ``io.debezium.transforms.ExtractNewRecordState``: the row state instead of the envelope.

Behaviour of Debezium 3.6.3 (``AbstractExtractNewRecordState``, ``DefaultDeleteHandlingStrategy``):

- create/update/read: the value becomes ``after`` with its own schema (``ExtractField$Value``: the
  optional row schema ``<topic>.Value``);
- delete, per ``delete.tombstone.handling.mode``: ``tombstone`` (default) keeps a record whose value
  is null but whose schema is the row schema (JsonConverter writes ``{"schema":...,"payload":null}``),
  ``drop`` drops it, ``delete-to-tombstone`` makes it a true tombstone (no schema), ``rewrite`` and
  ``rewrite-with-tombstone`` write ``before`` plus ``__deleted: "true"`` (other changes get
  ``"false"``; ``InsertField$Value``, so the schema becomes required);
- Debezium's own tombstones are dropped except with ``rewrite-with-tombstone``; truncates are dropped;
- ``add.fields`` (prefix ``add.fields.prefix``, ``__``) appends envelope fields to the value:
  ``op``, ``ts_ms``/``ts_us``/``ts_ns`` from the envelope, ``id``/``total_order``/
  ``data_collection_order`` from ``transaction``, any other name from ``source``; ``struct.field``
  names the struct and gives ``__struct_field``; ``field:name`` renames. Each added field's schema is
  its source schema made optional (without default). The value's schema becomes required.
- ``add.headers`` (prefix ``add.headers.prefix``) adds the same fields as headers, before anything
  else; a tombstone only gets ``op`` = ``"d"`` (a required string);
- ``route.by.field``: the record goes to the topic named by that column (of ``after``, or of
  ``before`` for a delete); a blank value keeps the topic.
- ``drop.fields.header.name``: the fields listed in that header (e.g. ``ExtractChangedRecordState``'s
  unchanged columns) are removed from the row (:mod:`.drop_fields`), after ``add.fields`` for a
  create/update and before it for a delete.

Records whose value schema is not an ``*.Envelope`` pass unchanged. ``delete.handling.mode`` and
``drop.tombstones`` were removed from Debezium 3 (replaced by ``delete.tombstone.handling.mode``):
Debezium 3.6.3 ignores them, so lakecdc does too and says so at start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lakecdc.events.schema import OPTIONAL_STRING, STRING, ConnectField, ConnectSchema
from lakecdc.transforms.base import (
    Record,
    SchemaCache,
    Settings,
    TransformContext,
    TransformDataError,
    copy_basics,
    field_of,
    require_struct,
    struct_get,
    with_topic,
    with_value,
)
from lakecdc.transforms.drop_fields import DropFields
from lakecdc.transforms.headers import header_bytes
from lakecdc.transforms.routers import is_envelope

MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
DELETED_FIELD = "__deleted"
#: properties of Debezium 2 that Debezium 3.6.3 no longer reads
REMOVED = {
    "delete.handling.mode": "removed in Debezium 3 (Debezium 3.6.3 ignores it): use delete.tombstone.handling.mode",
    "drop.tombstones": "removed in Debezium 3 (Debezium 3.6.3 ignores it): use delete.tombstone.handling.mode",
}
_TRANSACTION_FIELDS = ("id", "total_order", "data_collection_order")
_TOP_LEVEL_FIELDS = ("op", "ts_ms", "ts_us", "ts_ns")


@dataclass(frozen=True)
class FieldReference:
    """One ``add.fields`` / ``add.headers`` entry (Debezium's ``FieldReference``)."""

    struct: str | None  # "source", "transaction", or None for the envelope's own fields
    field: str
    new_field: str

    @classmethod
    def parse(cls, prefix: str, text: str) -> FieldReference:
        parts = text.split(":")
        if len(parts) > 2:
            raise ValueError(f"Unexpected field name: {text}")
        splits = parts[0].split(".")
        field = splits[0] if len(splits) == 1 else splits[1]
        struct = _struct_of(field) if len(splits) == 1 else splits[0]
        if len(parts) == 2:
            new_field = prefix + parts[1]
        else:
            new_field = prefix + (field if len(splits) == 1 else f"{struct}_{field}")
        return cls(struct, field, new_field)

    def schema(self, envelope: ConnectSchema) -> ConnectSchema | None:
        """The added field's schema: the source field's, optional, basics only; None when absent."""
        parent = envelope
        if self.struct is not None:
            holder = field_of(envelope, self.struct)
            if holder is None:
                raise TransformDataError(f"envelope {envelope.name!r} has no field {self.struct!r}")
            parent = holder.schema
        found = field_of(parent, self.field) or field_of(envelope, self.field)
        if found is None:
            return None
        s = found.schema
        return ConnectSchema(type=s.type, optional=True, name=s.name, version=s.version, doc=s.doc,
                             parameters=s.parameters, items=s.items, keys=s.keys, values=s.values)

    def getter(self, envelope: ConnectSchema) -> Callable[[dict[str, Any]], Any]:
        """Reads the field from an envelope value of ``envelope`` (resolved once per schema)."""
        struct, name = self.struct, self.field
        parent_schema = envelope.field(struct).schema if struct is not None else envelope
        found = field_of(parent_schema, name)
        if found is None:
            return lambda value: value.get(name)
        # Debezium reads with getWithoutDefault, and leaves source fields that have a default unset while
        # streaming (snapshot: null, written "false" through its default); lakecdc's source blocks hold
        # the default itself.
        unset = found.schema.default if struct == "source" else None

        def get(value: dict[str, Any]) -> Any:
            parent = value.get(struct) if struct is not None else value
            if parent is None:
                return None  # no transaction block in a snapshot
            got = parent.get(name)
            return None if unset is not None and got == unset else got
        return get

    def value(self, envelope: ConnectSchema, value: dict[str, Any]) -> Any:
        return self.getter(envelope)(value)


Plan = list[tuple[str, ConnectSchema, Callable[[dict[str, Any]], Any]]]


def _struct_of(field: str) -> str | None:
    if field in _TRANSACTION_FIELDS:
        return "transaction"
    if field in _TOP_LEVEL_FIELDS:
        return None
    return "updateDescription" if field == "updateDescription" else "source"


def _references(settings: Settings, key: str, prefix_key: str) -> list[FieldReference]:
    prefix = settings.string(prefix_key, "__") or ""
    text = settings.string(key, "") or ""
    if not text:
        return []
    try:
        return [FieldReference.parse(prefix, item.strip()) for item in text.split(",")]
    except ValueError as exc:
        raise settings.error(key, str(exc)) from None


class ExtractNewRecordState:
    """``io.debezium.transforms.ExtractNewRecordState``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.mode = settings.choice("delete.tombstone.handling.mode", MODES, "tombstone", ignore_case=True)
        self.route_by_field = settings.string("route.by.field", "") or None
        self.fields = _references(settings, "add.fields", "add.fields.prefix")
        self.headers = _references(settings, "add.headers", "add.headers.prefix")
        self.replace_null_with_default = settings.boolean("replace.null.with.default", True)
        name = settings.string("drop.fields.header.name")
        self.drop_fields = DropFields(name, settings.boolean("drop.fields.from.key", False),
                                      settings.boolean("drop.fields.keep.schema.compatible", True),
                                      context.header_schemas_enable) if name and name.strip() else None
        self.header_schemas = context.header_schemas_enable
        self._schemas = SchemaCache()
        self._deleted = SchemaCache()
        self._plans: dict[tuple[int, int], tuple[ConnectSchema, Plan]] = {}

    def in_place_headers(self, record: Record) -> list[tuple[str, bytes]]:
        """``add.headers`` go into ``record.headers()`` itself (:mod:`.shared_headers`)."""
        if self.headers and (record.value is None or is_envelope(record.value_schema)):
            return self._headers(record)
        return []

    def apply(self, record: Record) -> Record | None:
        tombstone = record.value is None
        envelope = is_envelope(record.value_schema)
        if (envelope or tombstone) and self.headers:
            record = replace(record, headers=[*record.headers, *self._headers(record)])
        if tombstone:
            return record if self.mode == "rewrite-with-tombstone" else None
        if not envelope:
            return record
        schema = record.value_schema
        assert schema is not None
        value = require_struct(schema, record.value, "Read envelope")
        after, before = _image(schema, value, "after"), _image(schema, value, "before")
        if after[1] is None and before[1] is None:
            return None  # a truncate (Debezium's handleTruncateRecord drops it)
        if after[1] is None:
            unwrapped = self._delete(record, before)
            if unwrapped is None:
                return None
            if self.route_by_field is not None:
                unwrapped = _routed(unwrapped, before[1], self.route_by_field)
            if self.drop_fields is not None:
                unwrapped = self.drop_fields.apply(unwrapped)
            if unwrapped.value is not None:
                unwrapped = self._add_fields(unwrapped, schema, value)
            return unwrapped
        unwrapped = with_value(record, *after)
        if self.mode in ("rewrite", "rewrite-with-tombstone"):
            unwrapped = self._with_deleted(unwrapped, "false")
        if self.route_by_field is not None:
            unwrapped = _routed(unwrapped, unwrapped.value, self.route_by_field)
        unwrapped = self._add_fields(unwrapped, schema, value)
        return unwrapped if self.drop_fields is None else self.drop_fields.apply(unwrapped)

    def _delete(self, record: Record, before: tuple[ConnectSchema, Any]) -> Record | None:
        if self.mode == "drop":
            return None
        if self.mode == "tombstone":
            return with_value(record, record.value_schema.field("after").schema, None)  # type: ignore[union-attr]
        if self.mode == "delete-to-tombstone":
            return with_value(record, None, None)
        return self._with_deleted(with_value(record, *before), "true")

    def _with_deleted(self, record: Record, deleted: str) -> Record:
        """``InsertField$Value`` with ``static.field=__deleted``: a required copy of the schema."""
        schema = record.value_schema
        assert schema is not None and isinstance(record.value, dict)
        new_schema = self._deleted.get((schema,), lambda: copy_basics(
            schema, [*schema.fields, ConnectField(DELETED_FIELD, OPTIONAL_STRING)]))
        value = {f.name: struct_get(schema, record.value, f.name, self.replace_null_with_default)
                 for f in schema.fields}
        value[DELETED_FIELD] = deleted
        return with_value(record, new_schema, value)

    def _plan(self, references: list[FieldReference], envelope: ConnectSchema) -> Plan:
        """The references whose field the envelope has: (new name, schema, getter), once per schema."""
        key = (id(references), id(envelope))
        hit = self._plans.get(key)
        if hit is None:
            if len(self._plans) > 1024:
                self._plans.clear()
            plan = []
            for ref in references:
                field_schema = ref.schema(envelope)
                if field_schema is not None:
                    plan.append((ref.new_field, field_schema, ref.getter(envelope)))
            hit = self._plans[key] = (envelope, plan)
        return hit[1]

    def _add_fields(self, record: Record, envelope: ConnectSchema, original: dict[str, Any]) -> Record:
        schema = record.value_schema
        value = require_struct(schema, record.value, "source field insertion")
        assert schema is not None
        plan = self._plan(self.fields, envelope)
        new_schema = self._schemas.get((schema, envelope, original.get("op")), lambda: self._with_fields(schema, plan))
        new_value = dict(value)
        for name, _, get in plan:
            new_value[name] = get(original)
        return with_value(record, new_schema, new_value)

    @staticmethod
    def _with_fields(schema: ConnectSchema, plan: Plan) -> ConnectSchema:
        fields = list(schema.fields)
        names = set(schema.field_names)
        for name, field_schema, _ in plan:
            if name in names:
                raise TransformDataError(f"Cannot create field because of field name duplication {name}")
            names.add(name)
            fields.append(ConnectField(name, field_schema))
        return copy_basics(schema, fields)

    def _headers(self, record: Record) -> list[tuple[str, bytes]]:
        if record.value is None:  # a tombstone gets the operation only, as a delete
            return [(ref.new_field, header_bytes(STRING, "d", self.header_schemas))
                    for ref in self.headers if ref.field == "op"]
        assert record.value_schema is not None
        return [(name, header_bytes(field_schema, get(record.value), self.header_schemas))
                for name, field_schema, get in self._plan(self.headers, record.value_schema)]


def _image(envelope: ConnectSchema, value: dict[str, Any], name: str) -> tuple[ConnectSchema, Any]:
    """``ExtractField$Value(name)``: the field's schema and value; a missing field is an error."""
    found = field_of(envelope, name)
    if found is None:
        raise TransformDataError(f"Unknown field: {name}")
    return found.schema, value.get(name)


def _routed(record: Record, row: Any, field: str) -> Record:
    topic = row.get(field) if isinstance(row, dict) else None
    if topic is not None and not isinstance(topic, str):
        raise TransformDataError(f"route.by.field '{field}' is not a string field")
    return record if topic is None or not topic.strip() else with_topic(record, topic)
