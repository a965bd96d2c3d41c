"""JsonConverter-compatible bytes: the exact text Kafka Connect (Jackson) puts on the wire.

With ``schemas.enable=true`` a record is ``{"schema":<schema>,"payload":<payload>}``; with it off,
just ``<payload>``. A null value (tombstone) or a null key is no bytes at all (Kafka null)::

    {"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"default":0,"field":"id"}],
     "optional":false,"name":"dbz.public.customers.Key"},"payload":{"id":1}}

Text rules (Jackson's, checked byte for byte against JsonConverter in
tests/data/events/jsonconverter-golden.json): no whitespace; non-ASCII kept as UTF-8 except
characters beyond U+FFFF, written as escaped surrogate pairs (``\\uD83D\\uDE00``); ``"`` ``\\``
and control characters escaped (``\\n``, ``\\t``, ... and ``\\u00XX`` with upper-case hex);
numbers as described in :mod:`lakecdc.events.javanum`; bytes as standard base64 with padding.

Hot path: :class:`RecordEncoder` compiles one Python function per struct schema (once per table
and schema version) that concatenates pre-encoded field names with each value's text, so encoding
an event costs one function call per struct and no per-event schema work.
"""

from __future__ import annotations

import json
import re
from binascii import b2a_base64
from collections.abc import Callable
from functools import lru_cache
from json.encoder import encode_basestring  # C implementation, keeps non-ASCII characters
from struct import error as struct_error
from typing import Any

from lakecdc.events.javanum import java_double_str, java_float_str
from lakecdc.events.schema import ConnectSchema
from lakecdc.events.values import Float32, connect_to_json

__all__ = [
    "RecordEncoder",
    "decode",
    "jackson_dumps",
    "jackson_string",
    "compile_value_encoder",
]

# Python writes "\u001f"; Jackson writes "\u001F". The regex walks escapes left to right so an
# escaped backslash followed by "u00.." in the data is never mistaken for an escape.
_ESCAPE = re.compile(r"\\(\\|u00[0-9a-f]{2})")


def _upper_hex(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text == "\\\\" else text.upper().replace("\\U", "\\u")


# Jackson (2.18+, COMBINE_UNICODE_SURROGATES_IN_UTF8 off by default) writes a character outside the
# Basic Multilingual Plane as its escaped UTF-16 surrogate pair: "😀" -> "\\uD83D\\uDE00".
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _surrogate_pair(match: re.Match[str]) -> str:
    code = ord(match.group(0)) - 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _jackson_fixups(text: str) -> str:
    """Turn Python's escaped literal into Jackson's: upper-case hex, escaped surrogate pairs."""
    if "\\u" in text:
        text = _ESCAPE.sub(_upper_hex, text)
    if not text.isascii():
        text = _ASTRAL.sub(_surrogate_pair, text)
    return text


def jackson_string(value: str) -> str:
    """A JSON string literal as Jackson writes it.

    >>> jackson_string('é"\\x1f😀')
    '"é\\\\"\\\\u001F\\\\uD83D\\\\uDE00"'
    """
    text = encode_basestring(value)
    if text.isascii() and "\\u" not in text:  # str.isascii() is O(1) in CPython
        return text
    return _jackson_fixups(text)


def jackson_dumps(node: Any) -> str:
    """Compact Jackson text for a JSON tree (dict/list/str/int/float/bool/None).

    Floats print as Java doubles, :class:`~lakecdc.events.values.Float32` as Java floats.
    """
    if node is None:
        return "null"
    if node is True:
        return "true"
    if node is False:
        return "false"
    t = type(node)
    if t is str:
        return jackson_string(node)
    if t is int:
        return str(node)
    if t is float:
        return java_double_str(node)
    if t is Float32:
        return java_float_str(node)
    if isinstance(node, dict):
        return "{" + ",".join(jackson_string(str(k)) + ":" + jackson_dumps(v) for k, v in node.items()) + "}"
    if isinstance(node, (list, tuple)):
        return "[" + ",".join(jackson_dumps(v) for v in node) + "]"
    if isinstance(node, int):
        return str(int(node))
    if isinstance(node, float):
        return java_double_str(float(node))
    raise TypeError(f"cannot write {type(node).__name__} as JSON")


def _b64(value: bytes) -> str:
    return '"' + b2a_base64(value, newline=False).decode("ascii") + '"'


_BOOL = {True: "true", False: "false"}


class _Compiler:
    """Generates one encoder function per struct/array/map schema.

    Every generated function takes a Connect value and returns its JSON text. Primitive fields are
    inlined into the parent struct's expression, so a flat row costs a single call.
    """

    def __init__(self, replace_null_with_default: bool = True) -> None:
        self.replace_null_with_default = replace_null_with_default
        self.namespace: dict[str, Any] = {
            "_s": encode_basestring,
            "_js": jackson_string,
            "_jfix": _jackson_fixups,
            "_d": java_double_str,
            "_f": java_float_str,
            "_b": _b64,
            "_bool": _BOOL,
            "_BU": "\\u",
            "_RB": "}",
        }
        self.sources: list[str] = []
        self._counter = 0
        self._memo: dict[int, str] = {}

    def _const(self, value: Any) -> str:
        self._counter += 1
        name = f"_c{self._counter}"
        self.namespace[name] = value
        return name

    def _new_name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def value_expr(self, schema: ConnectSchema, var: str, in_fstring: bool = False) -> str:
        """Python expression giving the JSON text of the value in variable ``var`` (may be None).

        Inside an f-string an int may stay an int (formatting prints it); elsewhere it needs str().
        """
        null_text = "'null'"
        has_default = schema.default is not None and self.replace_null_with_default
        if has_default:
            null_text = self._const(jackson_dumps(_default_tree(schema)))
        t = schema.type
        if t in ("int8", "int16", "int32", "int64"):
            text = var if in_fstring else f"str({var})"
        elif t == "string":
            text = f"(_t if (_t := _s({var})).isascii() and _BU not in _t else _jfix(_t))"
        elif t == "boolean":
            text = f"_bool[{var}]"
        elif t == "double":
            text = f"_d({var})"
        elif t == "float":
            text = f"_f({var})"
        elif t == "bytes":
            text = f"_b({var})"
        else:
            fn = self.function_for(schema)
            return f"({null_text} if {var} is None else {fn}({var}))" if has_default else f"{fn}({var})"
        return f"({null_text} if {var} is None else {text})"

    def function_for(self, schema: ConnectSchema) -> str:
        """Name of a generated function that encodes a value of a container schema (None-safe)."""
        key = id(schema)
        if key in self._memo:
            return self._memo[key]
        name = self._new_name("_enc")
        self._memo[key] = name
        self.namespace[f"{name}_schema"] = schema  # keep id() stable while compiling
        lines = [f"def {name}(v):", "    if v is None:", "        return 'null'"]
        if schema.type == "struct":
            if not schema.fields:
                lines.append("    return '{}'")
            parts: list[str] = []
            for index, fld in enumerate(schema.fields):
                prefix = ("{" if index == 0 else ",") + jackson_string(fld.name) + ":"
                var = f"x{index}"
                lines.append(f"    {var} = v[{fld.name!r}]")
                parts.append(self._const(prefix))
                parts.append(self.value_expr(fld.schema, var, in_fstring=True))
            if parts:
                parts.append("_RB")
                # One f-string: CPython builds it in a single allocation (BUILD_STRING), where a
                # chain of + would copy the growing prefix once per field.
                lines.append('    return f"""' + "".join("{" + p + "}" for p in parts) + '"""')
        elif schema.type == "array":
            assert schema.items is not None
            lines.append("    return '[' + ','.join([" + self.value_expr(schema.items, "i") + " for i in v]) + ']'")
        elif schema.type == "map":
            assert schema.keys is not None and schema.values is not None
            val = self.value_expr(schema.values, "b")
            if schema.keys.type == "string":
                lines.append(
                    "    return '{' + ','.join([_js(a) + ':' + " + val + " for a, b in v.items()]) + '}'"
                )
            else:
                key_expr = self.value_expr(schema.keys, "a")
                lines.append(
                    "    return '[' + ','.join(['[' + " + key_expr + " + ',' + " + val
                    + " + ']' for a, b in v.items()]) + ']'"
                )
        else:
            lines.append("    return " + self.value_expr(schema, "v"))
        self.sources.append("\n".join(lines))
        return name

    def build(self, schema: ConnectSchema) -> Callable[[Any], str]:
        if schema.type in ("struct", "array", "map"):
            entry = self.function_for(schema)
        else:
            entry = self._new_name("_enc")
            self.sources.append(f"def {entry}(v):\n    return {self.value_expr(schema, 'v')}")
        exec("\n\n".join(self.sources), self.namespace)  # noqa: S102 - code generated from schema only
        return self.namespace[entry]


def _default_tree(schema: ConnectSchema) -> Any:
    return connect_to_json(schema, schema.default)


@lru_cache(maxsize=1024)
def compile_value_encoder(schema: ConnectSchema, replace_null_with_default: bool = True) -> Callable[[Any], str]:
    """A function turning a Connect value of ``schema`` into its compact JSON text.

    ``replace_null_with_default`` is JsonConverter's option of that name (default true): a null
    value whose schema has a default is written as the default. Cached by schema value: tables
    sharing a schema (and every transaction record) share one compiled function.
    """
    return _Compiler(replace_null_with_default).build(schema)


class RecordEncoder:
    """Encodes keys or values of one Connect schema as JsonConverter bytes.

    >>> from lakecdc.events.schema import struct, INT32
    >>> enc = RecordEncoder(struct([("id", INT32)], name="dbz.public.t.Key"))
    >>> enc.encode({"id": 1})
    b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"dbz.public.t.Key"},"payload":{"id":1}}'
    """

    __slots__ = ("schema", "schemas_enable", "schema_json", "head", "_payload_text", "_prefix")

    def __init__(
        self, schema: ConnectSchema, schemas_enable: bool = True, replace_null_with_default: bool = True
    ) -> None:
        self.schema = schema
        self.schemas_enable = schemas_enable
        self.schema_json: bytes = jackson_dumps(schema.to_json()).encode("utf-8")
        self._payload_text = compile_value_encoder(schema, replace_null_with_default)
        self._prefix = '{"schema":' + self.schema_json.decode("utf-8") + ',"payload":'
        #: what precedes the payload bytes with schemas enabled (a ``"}"`` follows it); empty without
        self.head: bytes = self._prefix.encode("utf-8") if schemas_enable else b""

    def encode(self, payload: Any) -> bytes | None:
        """Bytes for one payload; None (Kafka null) for a None payload, as JsonConverter does."""
        if payload is None:
            return None
        if self.schemas_enable:
            # one copy of the (often kilobytes long) schema text, not one per concatenation
            return f"{self._prefix}{self._text(payload)}}}".encode("utf-8")
        return self._text(payload).encode("utf-8")

    def encode_body(self, payload: Any) -> bytes:
        """The payload's bytes alone: ``encode`` is ``head + encode_body + b"}"`` with schemas
        enabled, and ``encode_body`` without. For writers that can hand the shared ``head`` to the
        OS as is (``os.writev``) instead of copying it into every record."""
        return self._text(payload).encode("utf-8")

    def _text(self, payload: Any) -> str:
        try:
            return self._payload_text(payload)
        except KeyError as exc:
            raise ValueError(
                f"payload for schema {self.schema.name or self.schema.type!r} lacks field {exc.args[0]!r}"
                " (or a boolean field holds that non-boolean value)"
            ) from None
        except (TypeError, AttributeError, OverflowError, struct_error) as exc:
            raise ValueError(
                f"payload does not fit schema {self.schema.name or self.schema.type!r}: {exc}"
            ) from None

    def encode_text(self, payload: Any) -> str:
        """The payload's compact JSON text alone (no schema wrapper)."""
        return self._payload_text(payload)


def decode(data: bytes | str | None, schemas_enable: bool | None = None) -> tuple[dict[str, Any] | None, Any]:
    """Split converter output into ``(schema_json | None, payload JSON tree)``.

    ``schemas_enable=None`` detects the envelope: an object with exactly the keys ``schema`` and
    ``payload``. Kafka null (None) gives ``(None, None)``. Use
    :func:`lakecdc.events.values.json_to_connect` to turn the payload into Connect values.
    """
    if data is None:
        return None, None
    tree = json.loads(data)
    if schemas_enable is None:
        schemas_enable = isinstance(tree, dict) and tree.keys() == {"schema", "payload"}
    if not schemas_enable:
        return None, tree
    if not isinstance(tree, dict) or "payload" not in tree or "schema" not in tree:
        raise ValueError("converter output lacks the 'schema'/'payload' envelope (schemas.enable=true)")
    return tree["schema"], tree["payload"]

