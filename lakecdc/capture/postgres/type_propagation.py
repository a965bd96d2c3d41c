"""``column.propagate.source.type`` / ``datatype.propagate.source.type``: the source-column schema
parameters Debezium 3.6 adds to a field, e.g. for ``balance numeric(12,2)``::

    "parameters": {"scale": "2", "connect.decimal.precision": "12",
                   "__debezium.source.column.type": "NUMERIC",
                   "__debezium.source.column.length": "12",
                   "__debezium.source.column.scale": "2",
                   "__debezium.source.column.name": "balance"}

Length and scale are pgjdbc's column size and decimal digits for the type (a ``timestamp(3)`` is 26
characters wide with scale 3). Snapshot schemas come from JDBC metadata, streamed ones from the
pgoutput Relation message, and Debezium's two differ for serial columns (``SERIAL`` vs ``INT4``) and
unconstrained numerics (length 0 without scale vs 131089 with scale 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakecdc.capture.postgres.types import PgColumn

UNBOUNDED = 2147483647
VARIABLE_NUMERIC_LENGTH = 131089
_FIXED_SIZE: dict[str, tuple[int, int]] = {  # type -> (length, scale)
    "int2": (5, 0), "int4": (10, 0), "int8": (19, 0), "oid": (10, 0), "bool": (1, 0),
    "float4": (8, 8), "float8": (17, 17), "date": (13, 0), "char": (1, 0),
}
_SERIALS = {"int2": "SMALLSERIAL", "int4": "SERIAL", "int8": "BIGSERIAL"}


def _seconds_precision(typmod: int) -> int:
    return 6 if typmod < 0 else typmod


def length_and_scale(type_name: str, typmod: int, *, snapshot: bool) -> tuple[int, int | None]:
    """pgjdbc's (column size, decimal digits) of ``type_name`` with ``typmod``; scale None = absent."""
    fixed = _FIXED_SIZE.get(type_name)
    if fixed is not None:
        return fixed
    if type_name == "numeric":
        if typmod < 0:
            return (0, None) if snapshot else (VARIABLE_NUMERIC_LENGTH, 0)
        return ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
    if type_name in ("varchar", "bpchar"):
        return (typmod - 4, 0) if typmod >= 4 else (UNBOUNDED, 0)
    if type_name in ("bit", "varbit"):
        return (typmod, 0) if typmod > 0 else (UNBOUNDED, 0)
    if type_name in ("time", "timetz", "timestamp", "timestamptz"):
        precision = _seconds_precision(typmod)
        width = (8 if type_name.startswith("time") and not type_name.startswith("timestamp") else 22)
        width += precision + 1 if precision > 0 else 0
        if type_name.endswith("tz"):
            width += 6
        return width, precision
    if type_name == "interval":
        precision = typmod & 0xFFFF if typmod >= 0 else 0xFFFF
        return 49, 6 if precision == 0xFFFF else precision
    return UNBOUNDED, 0


def source_type_parameters(col: PgColumn, *, snapshot: bool) -> tuple[tuple[str, str], ...]:
    """The ``__debezium.source.column.*`` parameters for ``col``, in Debezium's order."""
    declared = col.pg_type
    type_name = declared.name if declared is not None else f"oid{col.type_oid}"
    root = col.root
    measured = root.name if root is not None else type_name
    typmod = col.root_typmod
    if col.element is not None:
        measured = col.element.name
    label = type_name.upper()
    if snapshot and type_name in _SERIALS and (col.default_expr or "").startswith("nextval("):
        label = _SERIALS[type_name]
    length, scale = length_and_scale(measured, typmod, snapshot=snapshot and col.element is None)
    params = [("__debezium.source.column.type", label), ("__debezium.source.column.length", str(length))]
    if scale is not None:
        params.append(("__debezium.source.column.scale", str(scale)))
    params.append(("__debezium.source.column.name", col.name))
    return tuple(params)
