"""Debezium 3.6 mappings of PostgreSQL array columns, built from the element's scalar mapping.

Debezium reads array values through pgjdbc's ``PgArray`` on both the snapshot and the streaming
route, so elements convert the JDBC way (``TypeSpec.element``), and its quirks are kept:

- an element Debezium cannot convert (NaN numeric, NULL enum or ltree) makes the array null;
- a nested dimension becomes a null element (``{{1,2},{3,4}}`` -> ``[null, null]``);
- arrays of money, name, interval, varbit, xml and point are dropped (DBZ-459);
- ``bit(n)[]`` gets the scalar Bits schema and always a null value.

Example, ``tags text[]`` holding ``{a,NULL,"b c"}``::

    {"type": "array", "items": {"type": "string", "optional": true}, "optional": true}
    ["a", null, "b c"]
"""

from __future__ import annotations

import hashlib
import uuid as _uuid
from typing import TYPE_CHECKING, Any

from lakecdc.capture.postgres import type_values as tv
from lakecdc.capture.postgres.type_mapping import (
    GEOMETRIC_TYPES,
    ArrayElementError,
    TypeSpec,
    binary_encoder,
    binary_schema,
    bits_spec,
    java_coordinates,
)
from lakecdc.events.schema import ConnectSchema

if TYPE_CHECKING:
    from lakecdc.capture.postgres.types import TypeModes


# Array types Debezium has no mapping for (its DBZ-459 list): the column is dropped.
UNSUPPORTED_ARRAY_ELEMENTS = frozenset({"money", "name", "interval", "varbit", "xml", "point", "refcursor"})
# Elements whose unchanged-TOAST placeholder is a list of the placeholder's bytes as numbers.
_INT_ARRAY_TOAST = frozenset({"int4", "date", "int8"})
_TEXT_ARRAY_TOAST = frozenset({"text", "varchar", "bpchar", "json", "jsonb"})


def array_spec(element_name: str, element: TypeSpec, modes: TypeModes, delimiter: str = ",") -> TypeSpec:
    """``<element>[]`` -> Connect array; elements convert the JDBC way (pgjdbc's PgArray)."""
    items = element.schema.as_required() if element.required_in_array else element.schema
    convert_element = element.element
    null_fails = element.null_element_fails

    def convert_list(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if value is None:
                if null_fails:
                    raise ArrayElementError("null element")
                out.append(None)
            elif isinstance(value, list):
                out.append(None)  # pgjdbc gives a nested Java array, which Debezium cannot convert
            else:
                out.append(convert_element(value))
        return out

    def convert(text: str) -> list[Any] | None:
        try:
            return convert_list(tv.parse_array(text, delimiter))
        except ArrayElementError:
            return None

    placeholder = modes.unavailable_value_placeholder
    # The placeholder list holds Java Integers/Longs/byte[]; it survives only where the element
    # converter accepts those (a Date element in connect/isostring mode, a base64 one, do not).
    ints_accepted = element_name != "date" or modes.time_precision not in ("connect", "isostring")
    if element_name in _INT_ARRAY_TOAST and ints_accepted:
        toast: Any = [b if b < 128 else b - 256 for b in placeholder]
    elif element_name in _TEXT_ARRAY_TOAST:
        toast = [placeholder.decode()]
    elif element_name == "bytea" and modes.binary_handling == "bytes":
        toast = [placeholder]
    elif element_name == "uuid":
        toast = [_java_name_uuid(placeholder)]
    else:
        toast = None
    schema = ConnectSchema("array", optional=True, items=items)
    return TypeSpec(schema, convert, convert, convert, toast)


def bit_array_spec(typmod: int) -> TypeSpec:
    """``bit(n)[]``: Debezium declares the scalar Bits/boolean schema and then cannot convert the
    array it reads into it, so the value is always null."""
    length = typmod if typmod > 0 else 1
    schema = bits_spec(length).schema

    def always_null(_text: str) -> None:
        return None

    return TypeSpec(schema, always_null, always_null, always_null)


def unknown_array_spec(modes: TypeModes, element_name: str, delimiter: str = ",") -> TypeSpec:
    """Array of a type Debezium has no mapping for, with include.unknown.datatypes=true: each
    element's text (geometric ones reprinted by pgjdbc) as binary, in items Debezium declares
    required -- so a NULL element makes the whole value null."""
    encode = binary_encoder(modes)
    items = binary_schema(modes).as_required()
    reprint = java_coordinates if element_name in GEOMETRIC_TYPES else None

    def convert(text: str) -> list[Any] | None:
        out: list[Any] = []
        for value in tv.parse_array(text, delimiter):
            if value is None:
                return None
            if isinstance(value, list):
                out.append(None)
            else:
                out.append(encode((reprint(value) if reprint else value).encode()))
        return out

    return TypeSpec(ConnectSchema("array", optional=True, items=items), convert, convert, convert)


def _java_name_uuid(data: bytes) -> str:
    """Java ``UUID.nameUUIDFromBytes`` (MD5, version 3)."""
    digest = bytearray(hashlib.md5(data).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(_uuid.UUID(bytes=bytes(digest)))
