"""Column default expressions -> the ``"default"`` Debezium 3.6 puts in a field schema.

Debezium parses ``pg_get_expr(adbin)`` text only for some types, by the column's type name (so a
domain column gets no default). A literal (``'hello'::text``, ``42``, ``'2020-01-01'::date``) is
converted like a value; a function call (``nextval(...)``, ``now()``) or ``CURRENT_TIMESTAMP`` becomes
a fixed stand-in (0, epoch, ...) -- which is why serial ids carry ``"default": 0``::

    {"type": "int32", "optional": false, "default": 0, "field": "id"}

Structs (VariableScaleDecimal) never become defaults (KAFKA-12694), nor does anything unparsable.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from lakecdc.capture.postgres import type_values as tv

if TYPE_CHECKING:
    from lakecdc.capture.postgres.type_mapping import TypeSpec
    from lakecdc.capture.postgres.types import PgColumn
    from lakecdc.events.schema import ConnectSchema

# Type name -> the stand-in text used when the default is computed by a function.
_GENERATED_STAND_IN = {
    "bit": "00", "varbit": "0", "bool": "false", "bpchar": "", "varchar": "", "text": "",
    "numeric": "0.0", "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0", "int8": "0",
    "json": "{}", "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00", "timestamp": "1970-01-01", "timestamptz": "1970-01-01 00:00:00+00",
    "interval": "epoch",
}
_NULL_AWARE = frozenset({"bool", "numeric", "float4", "float8", "int2", "int4", "int8"})
_FUNCTION_CALL = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT = frozenset({"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"})
_LITERAL = re.compile(r"'((?:[^']|'')*)'")


def _literal(expr: str) -> str | None:
    """The first quoted literal (``''`` unescaped), or the raw expression when there is none."""
    if "'" not in expr:
        return None if expr.startswith("NULL::") else expr
    m = _LITERAL.search(expr)
    return m.group(1).replace("''", "'") if m else None


def _extract(expr: str, stand_in: str) -> str | None:
    if _FUNCTION_CALL.search(expr) or expr.lower() in _CURRENT:
        return stand_in
    return _literal(expr)


def _enum_literal(type_name: str, expr: str) -> str | None:
    cast = expr.rfind("::")
    if cast < 0:
        return None
    suffix = expr[cast + 2:].strip('"')
    if suffix.split(".")[-1].strip('"') != type_name:
        return None
    body = expr[:cast]
    if len(body) >= 2 and body[0] == "'" and body[-1] == "'":
        return body[1:-1].replace("''", "'")
    return None


def default_value(col: PgColumn, spec: TypeSpec, schema: ConnectSchema) -> Any:
    """The Connect default of ``col`` or None (no default, or one Debezium does not parse)."""
    pg_type = col.pg_type
    expr = col.default_expr
    if expr is None or pg_type is None or pg_type.kind == "d" or col.element is not None:
        return None
    expr = expr.strip()
    try:
        if pg_type.kind == "e":
            text = _enum_literal(pg_type.name, expr)
            return None if text is None else text
        name = pg_type.name
        if name not in _GENERATED_STAND_IN:
            return None
        if name in _NULL_AWARE and expr.startswith("NULL::"):
            return None
        text = _extract(expr, _GENERATED_STAND_IN[name])
        if text is None:
            return None
        value = _convert(name, text, spec)
    except (ValueError, ArithmeticError, IndexError):
        return None  # Debezium logs "Cannot parse column default value" and leaves it out
    if isinstance(value, dict) and schema.type == "struct":
        return None
    return value


def _convert(name: str, text: str, spec: TypeSpec) -> Any:
    if name == "bool":
        return spec.stream("t" if text.strip().lower() == "true" else "f")
    if name == "bit":
        if len(text) == 1:
            return text == "1"
        return spec.stream(text)
    if name == "uuid":
        return str(uuid.UUID(text))
    if name in ("int2", "int4", "int8"):
        return int(text)
    if name in ("float4", "float8"):
        return float(text)
    if name == "timestamptz" and text == "1970-01-01":
        text = "1970-01-01 00:00:00+00"
    if name == "time" and text.count(":") == 1:
        text += ":00"
    if name == "timestamp" and " " not in text:
        text += " 00:00:00"
    if name == "interval" and text == "epoch":
        text = "00:00:00"
    if name == "numeric":
        tv.decimal_exact(text)  # raises on garbage, like Java's BigDecimal
    return spec.stream(text)
