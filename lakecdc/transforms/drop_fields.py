"""``ExtractNewRecordState``'s ``drop.fields.header.name``, ``drop.fields.from.key`` and
``drop.fields.keep.schema.compatible`` (Debezium's ``ExtractNewRecordState.dropFields``).

The header named by ``drop.fields.header.name`` holds a list of field names (the one
``ExtractChangedRecordState`` writes, e.g. ``header.unchanged.name``); the first header of that
name counts. No such header, a null one or an empty list: the record is unchanged. Otherwise the
listed fields are removed from the value (and from the key with ``drop.fields.from.key=true``),
as ``ReplaceField`` with ``exclude`` does (the struct schema rebuilt, required). With
``drop.fields.keep.schema.compatible=true`` (the default) only the listed fields that are optional
in the schema are removed, so the schema stays compatible.

Debezium reads the header's value as a Java ``List``: another value fails the record (a
``ClassCastException`` there). A value-less record without a schema (``delete-to-tombstone``) with
a non-empty list fails with keep-schema-compatible, as Debezium's lookup of the null schema does.
"""

from __future__ import annotations

from lakecdc.events.schema import ConnectSchema
from lakecdc.transforms.base import Record, Settings, TransformContext, TransformDataError
from lakecdc.transforms.fields import ReplaceField
from lakecdc.transforms.headers import header_value

_REPLACE = "org.apache.kafka.connect.transforms.ReplaceField$"


class DropFields:
    def __init__(self, header: str, from_key: bool, keep_schema_compatible: bool, header_schemas: bool) -> None:
        self.header = header
        self.from_key = from_key
        self.keep_compatible = keep_schema_compatible
        self.header_schemas = header_schemas
        self._delegates: dict[tuple[str, tuple[str, ...]], ReplaceField] = {}

    def apply(self, record: Record) -> Record:
        raw = next((v for k, v in record.headers if k == self.header), None)
        if raw is None:
            return record
        _, names = header_value(self.header, raw, self.header_schemas)
        if names is None:
            return record
        if not isinstance(names, list):
            raise TransformDataError(f"header '{self.header}' (drop.fields.header.name) holds a "
                                     f"{type(names).__name__}, not a list of field names")
        if not names:
            return record
        if self.from_key and record.key is not None:
            record = self._drop("Key", record, record.key_schema, names)
        return self._drop("Value", record, record.value_schema, names)

    def _drop(self, part: str, record: Record, schema: ConnectSchema | None, names: list[str]) -> Record:
        if not self.keep_compatible:
            dropped = list(names)
        elif schema is None:
            raise TransformDataError(f"the record's {part.lower()} has no schema to drop fields {names} from "
                                     "(drop.fields.keep.schema.compatible=true reads it; Debezium fails too)")
        else:
            dropped = [f.name for f in schema.fields if f.schema.optional and f.name in names]
        if not dropped:
            return record
        key = (part, tuple(dropped))
        delegate = self._delegates.get(key)
        if delegate is None:
            if len(self._delegates) >= 64:
                self._delegates.clear()
            delegate = self._delegates[key] = ReplaceField(
                Settings("transforms", "drop.fields", _REPLACE + part, {"exclude": ",".join(dropped)}),
                TransformContext(self.header_schemas))
        return delegate.apply(record)
