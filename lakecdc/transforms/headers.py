"""Record headers as transforms read and write them: Connect (schema, value) pairs <-> bytes.

lakecdc's records carry header values already written by the header converter (JsonConverter,
``header.converter.schemas.enable``, true by default), e.g. ``__debezium.newkey``::

    {"schema":{"type":"struct","fields":[...],"name":"dbz.public.t.Key"},"payload":{"id":2}}

A transform that adds a header (``ExtractNewRecordState``'s ``add.headers``, the outbox
``EventRouter``'s ``id``) writes it the same way; one that moves a header into the value
(``HeaderToValue``) reads the schema back from it, so it needs the schemas in the header.
"""

from __future__ import annotations

import json
from typing import Any

from lakecdc.events.schema import ConnectSchema
from lakecdc.events.serde import jackson_dumps
from lakecdc.events.values import connect_to_json, json_to_connect
from lakecdc.transforms.base import TransformDataError

Headers = list[tuple[str, bytes]]


def header_bytes(schema: ConnectSchema, value: Any, schemas_enable: bool) -> bytes:
    """JsonConverter's ``fromConnectHeader``: a null value with a schema is still an envelope."""
    payload = connect_to_json(schema, value)
    tree = {"schema": schema.to_json(), "payload": payload} if schemas_enable else payload
    return jackson_dumps(tree).encode("utf-8")


def header_value(name: str, raw: bytes | None, schemas_enable: bool) -> tuple[ConnectSchema | None, Any]:
    """The Connect schema and value of a header written by JsonConverter with schemas."""
    if raw is None:
        return None, None
    if not schemas_enable:
        raise TransformDataError(
            f"header '{name}' was written without its schema (header.converter.schemas.enable=false): "
            "a transform that puts a header into a struct needs the header's schema")
    try:
        tree = json.loads(raw)
        schema = ConnectSchema.from_json(tree["schema"])
        return schema, json_to_connect(schema, tree.get("payload"))
    except (ValueError, KeyError, TypeError) as exc:
        raise TransformDataError(f"header '{name}' is not a JsonConverter value with a schema: {exc}") from None


def has_header(headers: Headers, name: str) -> bool:
    return any(key == name for key, _ in headers)
