"""Kafka Connect ``JsonConverter`` output as bytes: the schema/payload split, parsing, key headers.

Converter output with schemas is ``{"schema":...,"payload":...}``. The schema is ~3/4 of a change
event's bytes and identical for every record of a table version, so the decoder groups records by
the schema's *bytes* and parses only payloads (``split_envelope``); a value in another form
(whitespace, other key order) is parsed fully and its schema re-serialized compactly.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.events.schema import ConnectSchema
from lakecdc.ingest.record_checks import RecordError

log = logging.getLogger(__name__)

_SCHEMA_HEAD = b'{"schema":'
_PAYLOAD_SEP = b',"payload":'


def split_envelope(raw: bytes) -> tuple[bytes, bytes] | None:
    """``(schema bytes, payload bytes)`` of compact converter output, without parsing the schema.

    Returns None when ``raw`` is not in the compact ``{"schema":...,"payload":...}`` form; the
    caller then parses it fully. The first ``,"payload":`` ends the schema unless the schema
    holds that key itself (a schema parameter called ``payload``); then the schema slice is a
    proper prefix of the schema object, never valid JSON, which ``envelope_parts`` checks.
    """
    if not raw.startswith(_SCHEMA_HEAD) or not raw.endswith(b"}"):
        return None
    cut = raw.find(_PAYLOAD_SEP)
    if cut < 0:
        return None
    return raw[len(_SCHEMA_HEAD):cut], raw[cut + len(_PAYLOAD_SEP):-1]


def header_values(records: pa.Table, name: str) -> dict[int, bytes]:
    """Record index -> value of header ``name``, for the records that have it (found in Arrow:
    every record carries a few context headers, and only key changes carry this one)."""
    if "headers" not in records.column_names or records.num_rows == 0:
        return {}
    headers = records.column("headers").combine_chunks()
    entries = pc.list_flatten(headers)
    if len(entries) == 0:
        return {}
    wanted = pc.fill_null(pc.equal(entries.field("key"), name), False)
    rows = pc.list_parent_indices(headers).filter(wanted).to_pylist()
    return dict(zip(rows, entries.field("value").filter(wanted).to_pylist()))


def key_text(raw: bytes | None) -> str | None:
    """A key as ``_key_json`` spells it (the payload of converter output) from a key header, which
    the header converter writes with or without a schema; None when it is not a JSON key (a
    header converter other than JSON's: there is no old key to carry values from)."""
    if raw is None:
        return None
    try:
        tree = orjson.loads(raw)
    except orjson.JSONDecodeError:
        log.debug("key header %r is not JSON: ignored", raw[:100])
        return None
    parts = split_envelope(raw)
    if parts is not None:
        return None if parts[1] == b"null" else parts[1].decode("utf-8")
    if isinstance(tree, dict) and "payload" in tree and "schema" in tree:
        tree = tree["payload"]
    # a JSON null names no old key (as no header does), never the text "null"
    return None if tree is None else orjson.dumps(tree).decode("utf-8")


def parse_json(data: bytes, what: str = "value") -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"{what} is not valid JSON: {exc}") from None


def envelope_parts(raw: bytes, what: str = "value", proven: set[bytes] | None = None) -> tuple[bytes, Any]:
    """``(schema bytes, payload)`` of converter output: the payload still as bytes in the compact
    form, else parsed (the schema re-serialized compactly, so that equal schemas group).

    A schema slice is parsed once to prove the split (see ``split_envelope``) and then kept in
    ``proven``, so that the records after it are split without a parse.
    """
    parts = split_envelope(raw)
    if parts is not None and proven is not None and parts[0] in proven:
        return parts
    if parts is not None and _is_json(parts[0]):
        if proven is not None:
            proven.add(parts[0])
        return parts
    schema, payload = full_parse(raw, what)
    return orjson.dumps(schema), payload


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def envelope_payload(raw: bytes) -> Any:
    """The parsed payload of converter output (a control record: not grouped by schema)."""
    payload = envelope_parts(raw)[1]
    return parse_json(payload) if isinstance(payload, bytes) else payload


def full_parse(raw: bytes, what: str = "value") -> tuple[Any, Any]:
    tree = parse_json(raw, what)
    if not isinstance(tree, dict) or "payload" not in tree:
        raise RecordError(f"{what} is not JsonConverter output with schemas (no 'schema'/'payload'); "
                          f"the job needs {what}.converter.schemas.enable=true to type the columns")
    if not isinstance(tree.get("schema"), dict):
        raise RecordError(f"{what} has no Connect schema ({what}.converter.schemas.enable=false is not supported)")
    return tree["schema"], tree["payload"]


def connect_schema(schema_bytes: bytes, what: str) -> ConnectSchema:
    try:
        return ConnectSchema.from_json(orjson.loads(schema_bytes))
    except (orjson.JSONDecodeError, ValueError, TypeError, KeyError) as exc:
        raise RecordError(f"{what} is not a Kafka Connect schema: {exc}") from None
