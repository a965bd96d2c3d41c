"""Is a record what Kafka Connect's ``JsonConverter`` (with schemas) would have written for its schema?

JsonConverter writes every field of a struct, nulls included, each with the JSON type of its
Connect type, and never a null in a required field (Connect's ``Struct.validate`` refuses it
before the converter runs). A record that differs was not written by a Debezium connector through
that converter -- or was damaged on the way -- and the decoder cannot tell which row it means, so
it becomes a dead letter whose reason names the field, what its schema expects and what came::

    field 'source.ts_ms': expected int64, got string 'noon'
    field 'transaction': expected struct, got array []
    key: field(s) 'id' missing

Checks are compiled once per schema (``value_check``) into closures; the per-record cost is one
type test per field. The row image's columns are checked column by column in ``connect_types``
instead (the same ``value_problem`` rules), where they are converted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecdc.errors import LakecdcError
from lakecdc.events.schema import ConnectSchema
from lakecdc.ingest.connect_types import DECIMAL, INT_BITS, fields_problem, json_kinds, json_type_name, value_problem

Check = Callable[[Any], None]


class RecordError(LakecdcError):
    """One record cannot be decoded; the message is the dead-letter reason."""


def value_check(schema: ConnectSchema, path: str) -> Check:
    """A function raising ``RecordError`` naming ``path`` when a JSON value does not fit ``schema``."""
    if schema.type == "struct":
        return _struct_check(schema, path)
    item_check: Check | None = None
    if schema.type == "array" and schema.items is not None:
        item_check = value_check(schema.items, f"{path}[]")
    key_check = value_check(schema.keys, f"{path}{{key}}") if schema.type == "map" and schema.keys else None
    value_of = value_check(schema.values, f"{path}{{value}}") if schema.type == "map" and schema.values else None

    def check(value: Any) -> None:
        if value is None:
            if not schema.optional:
                raise RecordError(f"field '{path}': null in a required {schema.type} field")
            return
        problem = value_problem(schema, value)
        if problem is not None:
            raise RecordError(f"field '{path}': {problem}")
        if item_check is not None:
            for item in value:
                item_check(item)
        elif key_check is not None and value_of is not None:
            for pair in (value.items() if isinstance(value, dict) else value):
                if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                    raise RecordError(f"field '{path}': a map entry must be a [key, value] pair, "
                                      f"got {json_type_name(pair)}")
                key_check(pair[0])
                value_of(pair[1])
    return check


def _struct_check(schema: ConnectSchema, path: str) -> Check:
    declared = frozenset(schema.field_names)
    children = [_Child(f.name, f.schema, value_check(f.schema, f"{path}.{f.name}" if path else f.name))
                for f in schema.fields]

    def check(value: Any) -> None:
        if value is None:
            if not schema.optional:
                raise RecordError(f"field '{path}': null in a required struct field")
            return
        if type(value) is not dict:
            raise RecordError(f"{f'field {path!r}: ' if path else ''}expected struct, got {json_type_name(value)}")
        if value.keys() != declared:
            raise RecordError(f"{f'field {path!r}: ' if path else ''}{fields_problem(declared, value)}")
        _check_children(children, value)
    return check


class _Child:
    """A struct field with what passes its check at once: ``plain`` JSON types (null when optional,
    text, booleans, numbers of a float) and integers in ``low..high`` (an int field's range)."""

    __slots__ = ("name", "plain", "low", "high", "check")

    def __init__(self, name: str, schema: ConnectSchema, check: Check) -> None:
        self.name = name
        self.check = check
        simple = schema.type not in ("struct", "array", "map") and schema.name != DECIMAL
        kinds = set(json_kinds(schema)) if simple else set()
        bits = INT_BITS.get(schema.type)
        self.low, self.high = (-(1 << (bits - 1)), 1 << (bits - 1)) if bits and int in kinds else (1, 0)
        if bits:
            kinds.discard(int)  # by range
        if schema.type in ("float", "double"):
            kinds.discard(str)  # "NaN" and the infinities only
        if schema.optional:
            kinds.add(type(None))
        self.plain = frozenset(kinds)


def _check_children(children: list[_Child], value: dict[str, Any]) -> None:
    """Each field of ``value``: the common cases inline (a source block has ~15 fields per record),
    the rest through the field's own check."""
    for child in children:
        v = value[child.name]
        kind = type(v)
        if kind in child.plain or (kind is int and child.low <= v < child.high):
            continue
        child.check(v)


def envelope_check(envelope: ConnectSchema, skip: frozenset[str]) -> Check:
    """Checks a change event payload against its envelope schema, except the fields in ``skip``
    (the row images, checked column by column where they are converted)."""
    declared = frozenset(envelope.field_names)
    children = [_Child(f.name, f.schema, value_check(f.schema, f.name)) for f in envelope.fields
                if f.name not in skip]

    def check(payload: dict[str, Any]) -> None:
        if payload.keys() != declared:
            raise RecordError(f"payload does not match its schema: {fields_problem(declared, payload)}")
        _check_children(children, payload)
    return check


def not_an_envelope(schema: ConnectSchema) -> RecordError:
    """The dead-letter reason for a value that is not a Debezium change event envelope, naming the
    transform that most likely replaced it: Debezium's ``ExtractNewRecordState`` leaves the row
    (``<topic>.Value``, maybe with ``__``-prefixed metadata fields), the outbox ``EventRouter`` the
    payload column (often a string or ``io.debezium.data.Json``) or a struct with a ``payload`` field."""
    names = schema.field_names if schema.type == "struct" else ()
    if schema.type == "struct" and "payload" in names and "op" not in names:
        likely = "the outbox EventRouter (io.debezium.transforms.outbox.EventRouter)"
    elif schema.type != "struct":
        likely = "the outbox EventRouter (io.debezium.transforms.outbox.EventRouter), which sends the payload alone"
    elif (schema.name or "").endswith(".Value") or any(n.startswith("__") for n in names):
        likely = "ExtractNewRecordState (io.debezium.transforms.ExtractNewRecordState), which unwraps the row"
    else:
        likely = "a transform that replaces the envelope (ExtractNewRecordState, the outbox EventRouter)"
    return RecordError(f"value schema '{schema.name or schema.type}' is not a Debezium change event envelope "
                       f"(no 'op' field): the records were most likely transformed by {likely}. The ingest needs "
                       "the envelope (before, after, source, op): remove that transform from the connector's "
                       "transforms, or limit it to other topics with a predicate")


def read_text(value: Any, where: str, optional: bool = True) -> str | None:
    """``value`` where the decoder reads text (validated there, whatever the schema says)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RecordError(f"field '{where}': expected text, got {json_type_name(value)}")
    return value


def read_int(value: Any, where: str, optional: bool = True, minimum: int = -(1 << 63)) -> int | None:
    """``value`` where the decoder reads a bigint: an integer (not a boolean) in ``minimum..2^63-1``."""
    if value is None and optional:
        return None
    if type(value) is not int:
        raise RecordError(f"field '{where}': expected an integer, got {json_type_name(value)}")
    if not minimum <= value < 1 << 63:
        raise RecordError(f"field '{where}': {value} is outside {minimum}..2^63-1")
    return value
