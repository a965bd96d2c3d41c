"""The ``Sink`` protocol every capture output implements, and record serialization shared by sinks.

Commit order the capture coordinator relies on (see docs/CONTRACTS.md):

1. ``sink.send(records)``: hand records over; may return before they are durable;
2. ``sink.flush()``: returns only when every record sent so far is durable, or raises;
3. only then acknowledge the source position (PostgreSQL flush LSN, offsets file).

A sink that cannot make records durable raises ``SinkDeliveryError`` (terminal: nothing after the
failed records may be acknowledged) or ``SinkTransientError`` (retry later) from ``flush``. A record
the converter cannot encode makes ``send`` raise ``RecordConversionError`` having accepted exactly
the records before it (the coordinator applies ``errors.tolerance`` to it and sends the rest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lakecdc.errors import RecordConversionError

if TYPE_CHECKING:
    from lakecdc.events.envelope import ChangeRecord
    from lakecdc.events.schema import ConnectSchema
    from lakecdc.events.serde import RecordEncoder


@runtime_checkable
class Sink(Protocol):
    """Where capture publishes records: Kafka, a JSON-lines file, ..."""

    def send(self, records: list[ChangeRecord]) -> None:
        """Accept records in order; they are durable only after :meth:`flush` returns."""

    def flush(self) -> None:
        """Block until every record sent so far is durable; raise if any was not."""

    def close(self) -> None:
        """Flush and release resources. Idempotent."""


class EncodedPayload(bytes):
    """A key or value payload encoded ahead of the sink (``RecordSerializer.payload_bytes``, by a
    snapshot worker process): the JsonConverter ``payload`` part only. The serializer adds the
    record's schema part as for any payload, so the bytes written equal those of the record
    encoded here, and the (often kilobytes long) schema text is not carried with every record."""

    __slots__ = ()


class RecordSerializer:
    """Turns a ``ChangeRecord``'s key and value into JsonConverter bytes.

    Encoders are compiled once per schema object: capture reuses one ``ConnectSchema`` instance
    per table and schema version, so the lookup is by identity first (no per-event hashing of
    schemas); an equal schema under another identity reuses the compiled encoder.
    """

    __slots__ = ("key_schemas_enable", "value_schemas_enable", "_by_id", "_by_schema", "_max_entries")

    def __init__(self, key_schemas_enable: bool = True, value_schemas_enable: bool = True,
                 max_entries: int = 4096) -> None:
        self.key_schemas_enable = key_schemas_enable
        self.value_schemas_enable = value_schemas_enable
        # id(schema) -> (schema kept alive so the id cannot be reused, encoder)
        self._by_id: dict[tuple[int, bool], tuple[ConnectSchema, RecordEncoder]] = {}
        self._by_schema: dict[tuple[ConnectSchema, bool], RecordEncoder] = {}
        self._max_entries = max_entries

    def encoder(self, schema: ConnectSchema, schemas_enable: bool) -> RecordEncoder:
        hit = self._by_id.get((id(schema), schemas_enable))
        if hit is not None:
            return hit[1]
        encoder = self._by_schema.get((schema, schemas_enable))
        if encoder is None:
            from lakecdc.events.serde import RecordEncoder

            if len(self._by_schema) >= self._max_entries:
                self._by_schema.clear()
                self._by_id.clear()
            encoder = RecordEncoder(schema, schemas_enable=schemas_enable)
            self._by_schema[(schema, schemas_enable)] = encoder
        self._by_id[(id(schema), schemas_enable)] = (schema, encoder)
        return encoder

    def key_bytes(self, record: ChangeRecord) -> bytes | None:
        return self._encode(record, record.key_schema, record.key, self.key_schemas_enable, "key")

    def value_bytes(self, record: ChangeRecord) -> bytes | None:
        return self._encode(record, record.value_schema, record.value, self.value_schemas_enable, "value")

    def key_pieces(self, record: ChangeRecord) -> tuple[bytes, ...]:
        """``key_bytes`` as pieces to be written one after the other (``b"null"`` for no key);
        the schema part is the encoder's shared ``head``, not a copy of it."""
        return self._pieces(record, record.key_schema, record.key, self.key_schemas_enable, "key")

    def value_pieces(self, record: ChangeRecord) -> tuple[bytes, ...]:
        return self._pieces(record, record.value_schema, record.value, self.value_schemas_enable, "value")

    def payload_bytes(self, record: ChangeRecord, part: str) -> bytes | None:
        """The ``key`` or ``value`` payload of ``record`` encoded alone (no schema part), or None
        for a null payload; wrapped in :class:`EncodedPayload` it is sent as the record's would be."""
        schema, payload = (record.key_schema, record.key) if part == "key" else (record.value_schema, record.value)
        if payload is None:
            return None
        try:
            return self._encoder_for(record, schema, True, part).encode_body(payload)
        except ValueError as exc:
            raise _undeliverable(record, part, exc) from None

    def _encode(self, record: ChangeRecord, schema: ConnectSchema | None, payload: Any,
                schemas_enable: bool, part: str) -> bytes | None:
        if payload is None:
            return None if schema is None or part == "key" else b"".join(self._null_with_schema(schema, schemas_enable))
        if isinstance(payload, bytes):
            if type(payload) is EncodedPayload:
                return b"".join(self._pieces(record, schema, payload, schemas_enable, part))
            return payload
        encoder = self._encoder_for(record, schema, schemas_enable, part)
        try:
            body = encoder.encode_body(payload)
        except ValueError as exc:
            raise _undeliverable(record, part, exc) from None
        # RecordEncoder.encode's bytes, with one copy of the (kilobytes long) schema part, not two
        return b"".join((encoder.head, body, b"}")) if schemas_enable else body

    def _pieces(self, record: ChangeRecord, schema: ConnectSchema | None, payload: Any,
                schemas_enable: bool, part: str) -> tuple[bytes, ...]:
        if payload is None:
            return _NULL if schema is None or part == "key" else self._null_with_schema(schema, schemas_enable)
        if isinstance(payload, bytes):
            if type(payload) is not EncodedPayload:
                return (payload,)
            return (self._encoder_for(record, schema, True, part).head, payload, b"}") if schemas_enable else (payload,)
        encoder = self._encoder_for(record, schema, schemas_enable, part)
        try:
            body = encoder.encode_body(payload)
        except ValueError as exc:
            raise _undeliverable(record, part, exc) from None
        return (encoder.head, body, b"}") if schemas_enable else (body,)

    def _null_with_schema(self, schema: ConnectSchema, schemas_enable: bool) -> tuple[bytes, ...]:
        """A null value that still has a schema is not a Kafka tombstone: JsonConverter writes
        ``{"schema":...,"payload":null}`` (ExtractNewRecordState's delete.tombstone.handling.mode=
        tombstone makes such records; Debezium's own tombstones have no schema)."""
        if not schemas_enable:
            return _NULL
        return (self.encoder(schema, True).head, b"null}")

    def _encoder_for(self, record: ChangeRecord, schema: ConnectSchema | None, schemas_enable: bool,
                     part: str) -> RecordEncoder:
        if schema is None:
            raise RecordConversionError(f"record for topic '{record.topic}' has a {part} but no {part} schema",
                                        record, part)
        return self.encoder(schema, schemas_enable)


_NULL = (b"null",)


def _undeliverable(record: ChangeRecord, part: str, exc: ValueError) -> RecordConversionError:
    return RecordConversionError(f"cannot encode the {part} of a record for topic '{record.topic}': {exc}",
                                 record, part)
