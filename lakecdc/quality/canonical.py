"""The canonical text of a value in reconciliation: what every side hashes, so equal rows hash equal.

Each database and lake engine renders this text in its own SQL (``lakecdc.quality.range_checksums``);
this module is its definition in Python, and DataFusion's implementation where DataFusion's SQL has
no function for it (IEEE bits of a double, nested values: its SQL has no lambdas).

- integers: decimal digits; decimals: plain notation with the column's scale (``1.50``, ``0.00``);
- booleans: ``true`` / ``false``; dates ``YYYY-MM-DD``; timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC);
- text as stored (a uuid as its text); binary: lowercase hex;
- floats: the 16 lowercase hex digits of the IEEE 754 double's bits (a float32 widened to a double,
  which is exact; every NaN as ``7ff8000000000000``). An exact bit compare, not a tolerance: a change
  data capture moves a double unchanged (Debezium's FLOAT64 carries it exactly), so any other double
  in silver is a real difference, and a tolerance would need a rounding rule every engine applies
  identically at its edges, which text formatting of doubles does not give;
- nested values: ``[e1,e2]`` for arrays, ``{f1,f2}`` for structs (fields in declared order),
  ``{k1=v1,k2=v2}`` for maps (entries in key order); each element ``<length>:<text>`` (length in
  characters, so a comma inside a text cannot shift a boundary) and a null element ``∅`` (U+2205).

A null value (top level) is null; the row hash replaces it with ``∅`` (``NULL_TEXT``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import math
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

NULL_TEXT = "\u2205"
NAN_BITS = "7ff8000000000000"


def is_nested(type_: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_struct(type_) or \
        pa.types.is_map(type_)


def is_text(type_: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_string(type_) or pa.types.is_large_string(type_) or type_ == pa.string_view()


def is_binary(type_: pa.DataType) -> bool:
    """Binary of any layout (delta-rs tables read through DataFusion come as ``binary_view``)."""
    import pyarrow as pa

    return pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or pa.types.is_fixed_size_binary(type_) \
        or type_ == pa.binary_view()


def float_bits(value: float) -> str:
    return NAN_BITS if math.isnan(value) else struct.pack(">d", value).hex()


def text_of(value: Any, type_: pa.DataType) -> str | None:
    """The canonical text of ``value`` (as pyarrow's ``to_pylist`` gives it) of arrow type ``type_``."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_boolean(type_):
        return "true" if value else "false"
    if pa.types.is_floating(type_):
        return float_bits(float(value))
    if pa.types.is_decimal(type_):
        text = f"{decimal.Decimal(value):.{type_.scale}f}"
        return text[1:] if text.startswith("-") and decimal.Decimal(text) == 0 else text
    if is_binary(type_):
        return bytes(value).hex()
    if pa.types.is_timestamp(type_):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if pa.types.is_date(type_):
        return value.isoformat()
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return "[" + ",".join(_element(v, type_.value_type) for v in value) + "]"
    if pa.types.is_struct(type_):
        return "{" + ",".join(_element(value.get(f.name), f.type) for f in type_) + "}"
    if pa.types.is_map(type_):
        entries = sorted(value, key=lambda kv: kv[0])
        return "{" + ",".join(f"{_element(k, type_.key_type)}={_element(v, type_.item_type)}"
                              for k, v in entries) + "}"
    return str(value)


def _element(value: Any, type_: pa.DataType) -> str:
    text = text_of(value, type_)
    return NULL_TEXT if text is None else f"{len(text)}:{text}"


def row_hash(texts: list[str | None]) -> str:
    """md5 of the column texts (null as ``∅``) joined by U+001F, as every dialect computes it."""
    joined = "\x1f".join(NULL_TEXT if t is None else t for t in texts)
    return hashlib.md5(joined.encode("utf-8")).hexdigest()


def udf_name(type_: pa.DataType) -> str:
    """The DataFusion function computing the canonical text of a value of ``type_``."""
    return f"lakecdc_text_{hashlib.md5(str(type_).encode()).hexdigest()[:12]}"


#: str(pyarrow type) -> DataFusion's own text of that type (``arrow_typeof``), for ``arrow_cast``: a
#: pure function of the type, filled when the type's function is registered
_DATAFUSION_TYPES: dict[str, str] = {}


def register_datafusion_udfs(context: Any, types: list[pa.DataType]) -> None:
    """Register, on a DataFusion ``SessionContext``, ``udf_name(t)`` for each float and nested type."""
    import pyarrow as pa
    from datafusion import udf

    for type_ in types:
        def canonical(values: pa.Array, type_: pa.DataType = type_) -> pa.Array:
            return pa.array([text_of(v, type_) for v in values.to_pylist()], pa.string())

        context.register_udf(udf(canonical, [type_], pa.string(), "immutable", name=udf_name(type_)))
        if is_nested(type_) and str(type_) not in _DATAFUSION_TYPES:
            nulls = context.from_arrow(pa.table({"c": pa.nulls(1, type_)}))
            _DATAFUSION_TYPES[str(type_)] = nulls.select_exprs("arrow_typeof(c) AS t").to_pylist()[0]["t"]


def datafusion_text(c: str, type_: pa.DataType) -> str:
    """SQL calling the registered function of nested ``type_`` on expression ``c``.

    A function's signature is exact, and a map in a table's column is not of the map type pyarrow
    describes: DataFusion names a map's entries field "key_value", pyarrow "entries" (the
    signature's). DataFusion coerces a list of maps to the signature, not a struct holding a map
    (a planning error), so the value is cast first to the type as pyarrow names it, in DataFusion's
    own spelling of that type (``arrow_cast``): any nesting plans."""
    spelled = _DATAFUSION_TYPES.get(str(type_))
    if spelled is None:
        raise LookupError(f"no DataFusion function registered for {type_}: call register_datafusion_udfs")
    return f"{udf_name(type_)}(arrow_cast({c}, '{spelled.replace(chr(39), chr(39) * 2)}'))"
