"""Debezium's outbox ``io.debezium.transforms.outbox.EventRouter`` (``EventRouterDelegate``).

An insert into the outbox table becomes the event it describes (defaults of Debezium 3.6.3):

- topic: the ``route.by.field`` column (``aggregatetype``) put through ``route.topic.regex`` /
  ``route.topic.replacement`` (``outbox.event.${routedByValue}``);
- key: the ``table.field.event.key`` column (``aggregateid``) with its schema;
- value: the ``table.field.event.payload`` column (``payload``) with its schema -- or, when
  ``table.fields.additional.placement`` puts a column in the ``envelope``, a struct
  ``{payload, <aliases>}`` named ``<row schema namespace>.<aggregatetype>.Value`` (versioned by
  ``table.field.event.schema.version`` when set);
- headers: ``id`` (the ``table.field.event.id`` column) and every ``...:header[:alias]`` column,
  after the record's own.

Deletes and tombstones are dropped; an update is dropped with a warning or an error in the log, or
stops the capture (``table.op.invalid.behavior`` = ``warn`` / ``error`` / ``fatal``). An empty
payload becomes a tombstone with ``route.tombstone.on.empty.payload=true``. A column placed in the
``partition`` (an int32 column) puts the event in that Kafka partition (the last one listed wins).
``table.expand.json.payload=true`` makes a JSON text payload a struct (:mod:`.outbox_json`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from lakecdc.events.schema import STRING, ConnectField, ConnectSchema
from lakecdc.transforms.base import (
    Record,
    Settings,
    TransformContext,
    TransformDataError,
    field_of,
    require_struct,
    struct_get,
)
from lakecdc.transforms.headers import header_bytes
from lakecdc.transforms.outbox_json import JsonPayloadExpander, field_namer
from lakecdc.transforms.routers import is_envelope, java_router

log = logging.getLogger(__name__)

_TIMESTAMP_NAMES = ("org.apache.kafka.connect.data.Timestamp", "io.debezium.time.MicroTimestamp",
                    "io.debezium.time.NanoTimestamp")


@dataclass(frozen=True)
class AdditionalField:
    field: str
    placement: str  # "header", "envelope" or "partition"
    alias: str


class EventRouter:
    """``io.debezium.transforms.outbox.EventRouter``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.event_id = settings.string("table.field.event.id", "id") or "id"
        self.event_key = settings.string("table.field.event.key", "aggregateid")
        settings.string("table.field.event.type", "type")  # documented, read by no code path of the router
        self.event_timestamp = settings.string("table.field.event.timestamp")
        self.payload = settings.string("table.field.event.payload", "payload") or "payload"
        self.schema_version = settings.string("table.field.event.schema.version")
        self.route_by = settings.string("route.by.field", "aggregatetype") or "aggregatetype"
        self.router = java_router(settings, "route.topic.regex", "route.topic.replacement",
                                  ("(?<routedByValue>.*)", "outbox.event.${routedByValue}"))
        self.tombstone_on_empty = settings.boolean("route.tombstone.on.empty.payload", False)
        self.invalid = settings.choice("table.op.invalid.behavior", ("warn", "error", "fatal"), "warn",
                                       ignore_case=True)
        self.ignore_missing = settings.choice("table.field.additional.missing", ("error", "ignore"), "error",
                                              ignore_case=True) == "ignore"
        null_behavior = settings.choice("table.json.payload.null.behavior", ("ignore", "optional_bytes"), "ignore",
                                        ignore_case=True)
        names = settings.choice("field.name.adjustment.mode", ("none", "avro", "avro_unicode"),
                                "none", ignore_case=True)
        self.expander = JsonPayloadExpander(null_behavior == "optional_bytes", field_namer(names)) \
            if settings.boolean("table.expand.json.payload", False) else None
        for tracing in ("tracing.span.context.field", "tracing.operation.name", "tracing.with.context.field.only"):
            settings.string(tracing)  # OpenTelemetry tracing: Debezium skips it without OpenTelemetry libraries
        self.additional = self._additional(settings)
        self.headers_only = not any(a.placement == "envelope" for a in self.additional)
        self.header_schemas = context.header_schemas_enable
        self._value_schemas: dict[Any, ConnectSchema] = {}

    @staticmethod
    def _additional(settings: Settings) -> list[AdditionalField]:
        text = settings.string("table.fields.additional.placement")
        found: list[AdditionalField] = []
        for item in (text.split(",") if text is not None else []):
            parts = item.split(":")
            if len(parts) < 2 or parts[1].strip().lower() not in ("header", "envelope", "partition"):
                raise settings.error("table.fields.additional.placement",
                                     f"entry {item!r} is not <column>:header|envelope|partition[:alias]")
            placement = parts[1].strip().lower()
            name = parts[0].strip()
            found.append(AdditionalField(name, placement, parts[2].strip() if len(parts) == 3 else name))
        return found

    def apply(self, record: Record) -> Record | None:
        if record.value is None:
            return None
        if not is_envelope(record.value_schema):
            return record
        envelope = record.value_schema
        assert envelope is not None
        value = require_struct(envelope, record.value, "Detect Debezium Operation")
        op = value.get("op")
        if op == "d":
            return None
        if op == "u":
            self._unexpected(record)
            return None
        row_schema = envelope.field("after").schema if field_of(envelope, "after") else None
        event = require_struct(row_schema, value.get("after"), "Read Outbox Event")
        assert row_schema is not None
        payload_field = field_of(row_schema, self.payload)
        if payload_field is None:
            raise TransformDataError(f"Unable to find payload field {self.payload} in event")
        id_field = field_of(row_schema, self.event_id)
        if id_field is None:
            raise TransformDataError(f"Unable to find event-id field {self.event_id} in event")
        self._check_timestamp(row_schema, event)
        payload = struct_get(row_schema, event, self.payload, True)
        headers = [*record.headers, ("id", header_bytes(id_field.schema,
                                                        struct_get(row_schema, event, self.event_id, True),
                                                        self.header_schemas))]
        payload_schema = payload_field.schema
        if self.expander is not None:
            if isinstance(payload, str):
                payload_schema, payload = self.expander.expand(self.payload, payload, payload_schema, record.key)
            elif payload is not None:
                log.warning("Expand JSON payload is turned on but payload is not a string in %s", record.key)
        route_value = self._string(row_schema, event, self.route_by)
        value_schema = None if self.headers_only else self._value_schema(payload_schema, row_schema, event,
                                                                         route_value)
        struct_value: dict[str, Any] | None = None if self.headers_only else {"payload": payload}
        partition: int | None = None
        for extra in self.additional:
            column = field_of(row_schema, extra.field)
            if column is None:
                if self.ignore_missing:
                    continue
                raise TransformDataError(f"Unable to find field {extra.field} in event")
            if extra.placement == "partition":
                if column.schema.type != "int32":  # Struct.getInt32
                    raise TransformDataError(f"Field '{extra.field}' is not of type INT32")
                partition = struct_get(row_schema, event, extra.field, True)
            elif extra.placement == "envelope":
                assert struct_value is not None
                struct_value[extra.alias] = struct_get(row_schema, event, extra.field, True)
            else:
                value = struct_get(row_schema, event, extra.field, True)
                headers.append((extra.alias, header_bytes(column.schema, value, self.header_schemas)))
        if struct_value is not None and value_schema is not None:
            struct_value = {f.name: struct_value.get(f.name) for f in value_schema.fields}
        if self.tombstone_on_empty and (payload is None or (isinstance(payload, str) and not payload.strip())):
            new_schema, new_value = None, None
        elif self.headers_only:
            new_schema, new_value = payload_schema, payload
        else:
            new_schema, new_value = value_schema, struct_value
        key_field = field_of(row_schema, self.event_key) if self.event_key else None
        if self.event_key is not None and key_field is None:
            raise TransformDataError(f"{self.event_key} is not a valid field name")
        key = struct_get(row_schema, event, self.event_key, True) if self.event_key else None
        topic = route_value if route_value is not None else ""
        routed = self.router.route(topic)
        return replace(record, topic=topic if routed is None else routed,
                       key_schema=key_field.schema if key_field else STRING, key=key,
                       value_schema=new_schema, value=new_value, headers=headers, partition=partition)

    def _unexpected(self, record: Record) -> None:
        if self.invalid == "fatal":
            raise TransformDataError(f"Unexpected update message received {record.key}, fail.")
        (log.warning if self.invalid == "warn" else log.error)("Unexpected update message received %s and ignored",
                                                              record.key)

    def _string(self, schema: ConnectSchema, event: dict[str, Any], name: str) -> str | None:
        found = field_of(schema, name)
        if found is None:
            raise TransformDataError(f"{name} is not a valid field name")
        if found.schema.type != "string":
            raise TransformDataError(f"Field {name} is not of type STRING")
        return struct_get(schema, event, name, True)

    def _check_timestamp(self, schema: ConnectSchema, event: dict[str, Any]) -> None:
        """Debezium reads the Kafka timestamp from ``table.field.event.timestamp``; lakecdc's records carry
        none, but a column Debezium would refuse is refused here too."""
        if self.event_timestamp is None:
            return
        found = field_of(schema, self.event_timestamp)
        if found is None:
            raise TransformDataError(f"Unable to find timestamp field {self.event_timestamp} in event")
        if event.get(self.event_timestamp) is not None and found.schema.name not in _TIMESTAMP_NAMES:
            raise TransformDataError(f"Unsupported field type {found.schema.name or found.schema.type} for event "
                                     "timestamp")

    def _value_schema(self, payload: ConnectSchema, row: ConnectSchema, event: dict[str, Any],
                      routed: str | None) -> ConnectSchema:
        """Cached by payload schema (or schema version) as Debezium's ``payloadSchemaCache``: the name
        carries the routing value of the first event that built it."""
        version = event.get(self.schema_version) if self.schema_version else None
        cache_key = ("version", version) if self.schema_version else payload
        found = self._value_schemas.get(cache_key)
        if found is None:
            fields = [ConnectField("payload", payload)]
            for extra in self.additional:
                column = field_of(row, extra.field)
                if extra.placement != "envelope":
                    continue
                if column is None:
                    if self.ignore_missing:
                        continue
                    raise TransformDataError(f"Unable to find field {extra.field} in event")
                fields.append(ConnectField(extra.alias, column.schema))
            found = ConnectSchema(type="struct", name=_schema_name(row.name, routed), version=version,
                                  fields=tuple(fields))
            self._value_schemas[cache_key] = found
        return found


def _schema_name(original: str | None, routed: str | None) -> str | None:
    if original is None:
        return routed
    namespace, dot, last = original.rpartition(".")
    return f"{namespace}.{routed}.{last}" if dot else f"{routed}.{original}"
