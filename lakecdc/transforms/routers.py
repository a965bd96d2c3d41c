"""Topic routers: Kafka Connect's ``RegexRouter`` and Debezium's ``ByLogicalTableRouter``.

``RegexRouter`` (``regex``, ``replacement``): a topic the regex matches whole gets
``replaceFirst(replacement)``; nothing else changes.

``ByLogicalTableRouter`` (``topic.regex``, ``topic.replacement``, ``key.enforce.uniqueness``,
``key.field.name``, ``key.field.regex`` / ``key.field.replacement``, ``schema.name.adjustment.mode``)
sends several physical tables to one logical topic. Its records are renamed with the topic: the key
schema becomes ``<topic>.Key``, the envelope ``<topic>.Envelope`` and its row schema
``<topic>.Value`` (version, doc, parameters and optionality kept). With ``key.enforce.uniqueness``
(default true) the key gains a required string field (``__dbz__physicalTableIdentifier``) holding
the original topic, or ``key.field.regex``'s replacement of it, so that rows of two tables with the
same primary key stay apart. Records whose value is not an envelope (tombstones, messages) only get
the new topic and key. A replacement that gives an empty topic leaves the record as it was.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import STRING, ConnectField, ConnectSchema
from lakecdc.events.topics import avro_sanitize
from lakecdc.transforms.base import Record, SchemaCache, Settings, TransformContext, require_struct, with_topic
from lakecdc.transforms.java_regex import JavaRouter, compile_java

log = logging.getLogger(__name__)

ENVELOPE_SUFFIX = ".Envelope"


def java_router(settings: Settings, regex_key: str, replacement_key: str,
                defaults: tuple[str | None, str | None] = (None, None)) -> JavaRouter:
    """A router from two properties; a bad regex or replacement is a ConfigError naming them."""
    pattern = settings.string(regex_key, defaults[0], required=defaults[0] is None)
    replacement = settings.string(replacement_key, defaults[1], required=defaults[1] is None)
    assert pattern is not None and replacement is not None
    try:
        compile_java(pattern)
    except re.error as exc:
        raise settings.error(regex_key, f"invalid regular expression {pattern!r}: {exc}") from None
    try:
        return JavaRouter(pattern, replacement)
    except ValueError as exc:
        raise settings.error(replacement_key, f"invalid replacement {replacement!r}: {exc}") from None


class RegexRouter:
    """``org.apache.kafka.connect.transforms.RegexRouter``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.router = java_router(settings, "regex", "replacement")

    def apply(self, record: Record) -> Record:
        topic = self.router.route(record.topic)
        return record if topic is None else with_topic(record, topic)


def is_envelope(schema: ConnectSchema | None) -> bool:
    """Debezium's ``SmtManager.isValidEnvelope``: a value schema named ``*.Envelope``."""
    return schema is not None and schema.name is not None and schema.name.endswith(ENVELOPE_SUFFIX)


class ByLogicalTableRouter:
    """``io.debezium.transforms.ByLogicalTableRouter``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.topics = java_router(settings, "topic.regex", "topic.replacement")
        self.enforce_uniqueness = settings.boolean("key.enforce.uniqueness", True)
        self.key_field_name = settings.string("key.field.name", "__dbz__physicalTableIdentifier") or ""
        key_regex = (settings.string("key.field.regex") or "").strip()
        self.key_router: JavaRouter | None = None
        if key_regex:
            replacement = (settings.string("key.field.replacement") or "").strip()
            if not replacement:
                raise settings.error("key.field.replacement", "must be non-empty if key.field.regex is set")
            self.key_router = java_router(settings, "key.field.regex", "key.field.replacement")
        else:
            settings.string("key.field.replacement")
        mode = settings.choice("schema.name.adjustment.mode", ("none", "avro", "avro_unicode"), "none",
                               ignore_case=True)
        self.adjust = (lambda name: name) if mode == "none" else (
            lambda name: avro_sanitize(name, unicode_escape=mode == "avro_unicode"))
        settings.integer("logical.table.cache.size", 16)  # sizes Debezium's LRU caches; nothing to size here
        self._keys = SchemaCache()
        self._envelopes = SchemaCache()

    def apply(self, record: Record) -> Record:
        old_topic = record.topic
        new_topic = self.topics.route(old_topic)
        if new_topic is None:
            return record
        if not new_topic:
            log.warning("Routing regex returned an empty topic name, propagating original record")
            return record
        key_schema, key = record.key_schema, record.key
        if record.key is not None:
            old_key = require_struct(record.key_schema, record.key, "Updating schema")
            assert record.key_schema is not None
            key_schema = self._key_schema(record.key_schema, new_topic)
            key = self._key(old_key, old_topic)
        if record.value is None or not is_envelope(record.value_schema):
            return ChangeRecord(new_topic, key_schema, key, record.value_schema, record.value, record.headers,
                                record.position)
        old_envelope = require_struct(record.value_schema, record.value, "Updating schema")
        assert record.value_schema is not None
        envelope_schema = self._envelope_schema(record.value_schema, new_topic)
        value = {f.name: _get(f, old_envelope) for f in record.value_schema.fields}
        return ChangeRecord(new_topic, key_schema, key, envelope_schema, value, record.headers, record.position)

    def _key_schema(self, old: ConnectSchema, topic: str) -> ConnectSchema:
        extra = [ConnectField(self.key_field_name, STRING)] if self.enforce_uniqueness else []
        return self._keys.get((old, topic), lambda: _renamed(old, self.adjust(topic + ".Key"), [*old.fields, *extra]))

    def _key(self, old_key: dict[str, Any], old_topic: str) -> dict[str, Any]:
        key = dict(old_key)
        if self.enforce_uniqueness:
            identifier = old_topic
            if self.key_router is not None:
                routed = self.key_router.route(old_topic)
                identifier = old_topic if routed is None else routed
            key[self.key_field_name] = identifier
        return key

    def _envelope_schema(self, old: ConnectSchema, topic: str) -> ConnectSchema:
        def build() -> ConnectSchema:
            row = old.field("before").schema
            new_row = _renamed(row, self.adjust(topic + ".Value"), list(row.fields))
            fields = [ConnectField(f.name, new_row) if f.name in ("before", "after") else f for f in old.fields]
            return _renamed(old, self.adjust(topic + ENVELOPE_SUFFIX), fields)
        return self._envelopes.get((old, topic), build)


def _renamed(source: ConnectSchema, name: str, fields: list[ConnectField]) -> ConnectSchema:
    """ByLogicalTableRouter's ``copySchemaExcludingName``: version, doc, parameters and optionality
    kept, no default, under a new name."""
    return ConnectSchema(type="struct", optional=source.optional, name=name, version=source.version,
                         doc=source.doc, parameters=source.parameters, fields=tuple(fields))


def _get(field: ConnectField, struct: dict[str, Any]) -> Any:
    value = struct.get(field.name)
    return field.schema.default if value is None else value

