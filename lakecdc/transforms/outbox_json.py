"""The outbox ``EventRouter``'s ``table.expand.json.payload``: a JSON text payload becomes a struct
with a schema inferred from it (Debezium's ``EventRouterDelegate`` with ``JsonSchemaData``).

A payload that is a string starting with ``{`` or ``[`` is parsed (as Jackson's ``readTree``: the
first JSON value, text after it ignored). The schema, inferred from that one document:

- object: an optional struct named by its path (``payload``, ``payload.items``, ...) with a field per
  member in document order (names through ``field.name.adjustment.mode`` of the transform; Debezium
  then looks the value up by the adjusted name, so a renamed member's value is null); a member
  whose schema is unknown (null, empty array) is left out, unless ``table.json.payload.null.behavior``
  is ``optional_bytes``, which makes a null an optional ``bytes`` field;
- string / boolean: optional string / boolean; number: optional int32 when it fits an int, int64
  when it fits a long, else optional float64;
- array: an optional array of its first non-null element's schema, all non-null elements of the
  same JSON type (and of the same number schema); an array of objects has the merged schema of its
  elements (fields of the first, then new ones; Debezium merges them in a ``HashSet``'s order, lakecdc
  in the order they come; merged from several, the struct is required, ``copySchemaBasics``).

What Debezium logs as "JSON expansion failed" (not JSON, not homogeneous arrays, an array of nulls)
leaves the payload as it was, with a warning. A value that does not fit the inferred schema (a
number past a long, mixed member types across array elements) fails the record, as the struct Debezium
builds is refused there. A document that is an array at the top fails the record too (Debezium gives
the array schema to the text payload and the converter refuses it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from lakecdc.events.schema import ConnectField, ConnectSchema, primitive
from lakecdc.transforms.base import TransformDataError

log = logging.getLogger(__name__)

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
Namer = Callable[[str], str]


class ExpansionFailed(Exception):
    """What Debezium catches and logs: the payload is kept as it was."""


class JsonPayloadExpander:
    def __init__(self, null_as_bytes: bool, namer: Namer) -> None:
        self.null_as_bytes = null_as_bytes
        self.namer = namer

    def expand(self, key: str, text: str, schema: ConnectSchema, record_key: Any) -> tuple[ConnectSchema, Any]:
        """The payload's (schema, value) after expansion; the given ones when Debezium keeps them."""
        try:
            document = _parse(text)
            inferred = self.schema_of(key, document)
        except ExpansionFailed as exc:
            log.warning("JSON expansion failed: %s", exc)
            return schema, text
        if inferred is None or inferred.type != "struct":
            raise TransformDataError(f"the JSON payload is a {type(document).__name__} at the top; expanded, "
                                     "it has no struct to put into the event (Debezium's converter refuses it too)")
        return inferred, self._value(document, inferred)

    def schema_of(self, key: str | None, node: Any) -> ConnectSchema | None:
        """``JsonSchemaData.toConnectSchema``."""
        if isinstance(node, str):
            return primitive("string", True)
        if isinstance(node, bool):
            return primitive("boolean", True)
        if isinstance(node, int):
            return primitive(_number_type(node), True)
        if isinstance(node, float):
            return primitive("double", True)
        if isinstance(node, list):
            return ConnectSchema(type="array", optional=True, items=self._element_schema(key, node)) if node else None
        if isinstance(node, dict):
            fields: list[ConnectField] = []
            for name, member in node.items():
                adjusted = self.namer(name)
                field_schema = self.schema_of(f"{key}.{adjusted}" if key and key.strip() else adjusted, member)
                if field_schema is not None and all(f.name != adjusted for f in fields):
                    fields.append(ConnectField(adjusted, field_schema))
            return ConnectSchema(type="struct", optional=True, name=key, fields=tuple(fields))
        return primitive("bytes", True) if self.null_as_bytes else None

    def _element_schema(self, key: str | None, array: list[Any]) -> ConnectSchema:
        sample = _first_element(array, self)
        if isinstance(sample, dict):
            distinct: list[ConnectSchema] = []
            for element in array:
                if isinstance(element, dict):
                    found = self.schema_of(key, element)
                    assert found is not None
                    if found not in distinct:
                        distinct.append(found)
            merged = distinct[0]
            for other in distinct[1:]:
                merged = _merge(merged, other)
            return merged
        found = self.schema_of(None, sample)
        if found is None:
            raise ExpansionFailed(f"Array '{array!r}' has unrecognized member schema.")
        return found

    def _value(self, node: Any, schema: ConnectSchema) -> Any:
        """``JsonSchemaData.toConnectData``: members the schema has, put as Connect values."""
        if isinstance(node, dict) and schema.type == "struct":
            return {f.name: self._value(node[f.name], f.schema) if f.name in node else None for f in schema.fields}
        if node is None:
            return None
        if isinstance(node, list) and schema.type == "array" and schema.items is not None:
            return [self._value(element, schema.items) for element in node]
        fits = {"string": str, "boolean": bool, "double": float}.get(schema.type)
        if fits is not None and isinstance(node, fits):
            return node
        if schema.type in ("int32", "int64") and isinstance(node, int) and not isinstance(node, bool) \
                and _number_type(node) == schema.type:
            return node
        raise TransformDataError(f"Invalid value {node!r} for the {schema.type} field inferred from the JSON payload")


def field_namer(mode: str) -> Namer:
    """``FieldNameAdjustmentMode``: ``none`` keeps a member name; ``avro`` / ``avro_unicode`` replace
    each character an Avro field name cannot have (a leading digit, ``.``, ``-``...) with ``_`` /
    ``_uXXXX``."""
    if mode == "none":
        return lambda name: name

    def fix(ch: str) -> str:
        return f"_u{ord(ch):04x}" if mode == "avro_unicode" else "_"

    def adjust(name: str) -> str:
        return "".join(ch if ch.isascii() and (ch.isalpha() or ch == "_" or (i > 0 and ch.isdigit())) else fix(ch)
                       for i, ch in enumerate(name))
    return adjust


def _reject(constant: str) -> Any:
    raise ValueError(f"Non-standard token '{constant}'")  # Jackson refuses NaN / Infinity by default


def _parse(text: str) -> Any:
    if not text.startswith(("{", "[")):
        raise ExpansionFailed(f"Unable to parse payload starting with '{text[:1]}'")
    try:
        return json.JSONDecoder(parse_constant=_reject).raw_decode(text)[0]
    except ValueError as exc:
        raise ExpansionFailed(str(exc)) from None


def _number_type(number: int) -> str:
    if _INT32[0] <= number <= _INT32[1]:
        return "int32"
    return "int64" if _INT64[0] <= number <= _INT64[1] else "double"  # a BigInteger: float64 schema


def _kind(node: Any) -> str:
    """Jackson's ``JsonNodeType``."""
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, (int, float)):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    return "ARRAY" if isinstance(node, list) else "OBJECT"


def _first_element(array: list[Any], expander: JsonPayloadExpander) -> Any:
    """``getFirstArrayElement``: the first non-null element, all non-null ones of its JSON type."""
    first: Any = None
    reference: ConnectSchema | None = None
    for element in array:
        if element is None:
            continue
        if first is None:
            first = element
        if _kind(element) != _kind(first):
            raise ExpansionFailed(f"Field is not a homogenous array ({first!r} x {_kind(element)}).")
        if _kind(first) == "NUMBER":
            reference = reference or expander.schema_of(None, first)
            if expander.schema_of(None, element) != reference:
                raise ExpansionFailed(f"Field is not a homogenous array ({first!r} x {element!r}), different "
                                      "number types")
    return first


def _merge(left: ConnectSchema, right: ConnectSchema) -> ConnectSchema:
    """``mergeSchema``: the left's fields, then the right's new ones (a bytes field of the left gives
    way to a non-bytes one); ``copySchemaBasics``: required."""
    fields = {f.name: f for f in left.fields}
    for f in right.fields:
        old = fields.get(f.name)
        if old is None or (old.schema != f.schema and old.schema.type == "bytes" and f.schema.type != "bytes"):
            fields[f.name] = f
    return ConnectSchema(type="struct", name=left.name, version=left.version, doc=left.doc,
                         parameters=left.parameters, fields=tuple(fields.values()))
