"""Debezium's ``io.debezium.transforms.ExtractChangedRecordState``: the names of the columns an update
changed, and of those it did not, as headers.

``header.changed.name`` / ``header.unchanged.name`` name the headers (unset: not added). Every
envelope record gets them, as Debezium adds them "even if the event is a snapshot or delete": the
lists are filled only when both ``before`` and ``after`` are there (an update with the old row,
e.g. ``REPLICA IDENTITY FULL``), else empty. A column counts as changed when Java's
``Objects.equals`` says so on the values read without defaults: binary columns are ``ByteBuffer``s
(compared by content) but ``io.debezium.data.Bits`` values are ``byte[]``, compared by identity, so a
non-null bit column always counts as changed; floating values compare as ``Double.equals`` (NaN
equals NaN, 0.0 differs from -0.0).

Each header is an optional array of optional strings named after the header, the schema
Debezium gives it; ``ExtractNewRecordState``'s ``drop.fields.header.name`` reads it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from lakecdc.events.schema import ConnectSchema, primitive
from lakecdc.transforms.base import Record, Settings, TransformContext, require_struct
from lakecdc.transforms.headers import header_bytes
from lakecdc.transforms.routers import is_envelope

BITS = "io.debezium.data.Bits"


def _names_schema(name: str) -> ConnectSchema:
    return ConnectSchema(type="array", optional=True, name=name, items=primitive("string", True))


class ExtractChangedRecordState:
    """``io.debezium.transforms.ExtractChangedRecordState``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.changed = settings.string("header.changed.name")
        self.unchanged = settings.string("header.unchanged.name")
        self.header_schemas = context.header_schemas_enable

    #: it adds to ``record.headers()`` and hands the same record on (:mod:`.shared_headers`)
    shares_headers = True

    def in_place_headers(self, record: Record) -> list[tuple[str, bytes]]:
        if record.value is None or not is_envelope(record.value_schema):
            return []
        return self.apply(record).headers[len(record.headers):]

    def apply(self, record: Record) -> Record:
        if record.value is None or not is_envelope(record.value_schema):
            return record
        value = require_struct(record.value_schema, record.value, "Record value should be struct.")
        after, before = value.get("after"), value.get("before")
        changed: list[str] = []
        unchanged: list[str] = []
        if after is not None and before is not None:
            row = record.value_schema.field("after").schema  # type: ignore[union-attr]
            for f in row.fields:
                (unchanged if _java_equals(f.schema, after.get(f.name), before.get(f.name)) else changed).append(f.name)
        headers = list(record.headers)
        for name, names in ((self.changed, changed), (self.unchanged, unchanged)):
            if name is not None and name.strip():
                headers.append((name, header_bytes(_names_schema(name), names, self.header_schemas)))
        return replace(record, headers=headers)


def _java_equals(schema: ConnectSchema, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if schema.name == BITS:  # JdbcValueConverters.convertBits delivers a byte[]
        return False
    if isinstance(a, float) and isinstance(b, float):  # Double.equals compares the bits
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return bool(a == b)
