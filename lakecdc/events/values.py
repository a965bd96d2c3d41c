"""Connect values <-> JSON trees, following Kafka Connect's JsonConverter.

Connect values in Python:

    int8/16/32/64 -> int        float/double -> float     boolean -> bool    string -> str
    bytes -> bytes              array -> list             map -> dict        struct -> dict (field order)

In JSON, bytes are base64 text; a map whose key schema is ``string`` is an object, any other map is
an array of ``[key, value]`` pairs; a null struct field whose schema has a default is written as
the default (Connect's ``Struct.get`` substitutes it, JsonConverter ``replace.null.with.default``).
float32 values are given as the double Java's ``Float.toString`` text reads back as, so that
``json.dumps`` of a tree prints what a Python reader of Debezium's output sees.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from lakecdc.events.javanum import NON_FINITE_TEXT, float32_json_value, float32_round

if TYPE_CHECKING:
    from lakecdc.events.schema import ConnectSchema

_INT_TYPES = frozenset({"int8", "int16", "int32", "int64"})
_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


class Float32(float):
    """Marks a float in a JSON tree as a Connect FLOAT32 (written with ``Float.toString``)."""

    __slots__ = ()


def connect_to_json(schema: ConnectSchema, value: Any) -> Any:
    """Convert a Connect value to the JSON tree JsonConverter writes (bytes -> base64 text)."""
    if value is None:
        if schema.default is not None:
            return connect_to_json(schema, schema.default)
        return None
    t = schema.type
    if t in _INT_TYPES or t == "string" or t == "boolean":
        return value
    if t == "double":
        return float(value)
    if t == "float":
        return Float32(float32_json_value(float(value)))
    if t == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "array":
        assert schema.items is not None
        return [connect_to_json(schema.items, item) for item in value]
    if t == "map":
        assert schema.keys is not None and schema.values is not None
        pairs = value.items() if hasattr(value, "items") else value
        if schema.keys.type == "string":
            return {k: connect_to_json(schema.values, v) for k, v in pairs}
        return [[connect_to_json(schema.keys, k), connect_to_json(schema.values, v)] for k, v in pairs]
    if t == "struct":
        return {f.name: connect_to_json(f.schema, value.get(f.name)) for f in schema.fields}
    raise ValueError(f"cannot convert a value for schema type {t!r}")


def json_to_connect(schema: ConnectSchema, node: Any, path: str = "$") -> Any:
    """Convert a JSON tree (as read by ``json.loads``) to the Connect value for ``schema``.

    Raises ValueError naming the JSON path of the first value that does not fit the schema.
    """
    if node is None:
        if schema.default is not None:
            return schema.default
        if not schema.optional:
            raise ValueError(f"{path}: null for required {schema.type} {schema.name or ''}".rstrip())
        return None
    t = schema.type
    if t in _INT_TYPES:
        if isinstance(node, bool) or not isinstance(node, int):
            raise ValueError(f"{path}: expected {t}, got {type(node).__name__} {node!r}")
        lo, hi = _INT_RANGES[t]
        if not lo <= node <= hi:
            raise ValueError(f"{path}: {node} is out of range for {t}")
        return node
    if t in ("double", "float"):
        if isinstance(node, str) and node in NON_FINITE_TEXT:  # Jackson writes NaN/Infinity quoted
            return NON_FINITE_TEXT[node]
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise ValueError(f"{path}: expected {t}, got {type(node).__name__} {node!r}")
        if t == "float":
            try:
                return float32_round(float(node))
            except OverflowError:
                raise ValueError(f"{path}: {node!r} is out of range for float (float32)") from None
        return float(node)
    if t == "boolean":
        if not isinstance(node, bool):
            raise ValueError(f"{path}: expected boolean, got {node!r}")
        return node
    if t == "string":
        if not isinstance(node, str):
            raise ValueError(f"{path}: expected string, got {type(node).__name__} {node!r}")
        return node
    if t == "bytes":
        if not isinstance(node, str):
            raise ValueError(f"{path}: expected base64 text for bytes, got {node!r}")
        try:
            return base64.b64decode(node, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"{path}: invalid base64 for bytes: {exc}") from None
    if t == "array":
        assert schema.items is not None
        if not isinstance(node, list):
            raise ValueError(f"{path}: expected array, got {type(node).__name__}")
        return [json_to_connect(schema.items, item, f"{path}[{i}]") for i, item in enumerate(node)]
    if t == "map":
        assert schema.keys is not None and schema.values is not None
        if schema.keys.type == "string":
            if not isinstance(node, dict):
                raise ValueError(f"{path}: expected object for map, got {type(node).__name__}")
            return {k: json_to_connect(schema.values, v, f"{path}.{k}") for k, v in node.items()}
        if not isinstance(node, list):
            raise ValueError(f"{path}: expected array of [key, value] for map")
        return {
            json_to_connect(schema.keys, k, f"{path}[{i}][0]"): json_to_connect(
                schema.values, v, f"{path}[{i}][1]"
            )
            for i, (k, v) in enumerate(node)
        }
    if t == "struct":
        if not isinstance(node, dict):
            raise ValueError(f"{path}: expected object for struct {schema.name!r}")
        known = {f.name for f in schema.fields}
        unknown = [k for k in node if k not in known]
        if unknown:
            raise ValueError(f"{path}: field {unknown[0]!r} is not in struct {schema.name!r}")
        return {
            f.name: json_to_connect(f.schema, node.get(f.name), f"{path}.{f.name}")
            for f in schema.fields
        }
    raise ValueError(f"{path}: unsupported schema type {t!r}")

