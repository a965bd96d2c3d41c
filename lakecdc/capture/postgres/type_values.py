"""PostgreSQL text output (pgoutput, COPY) -> Debezium 3.6 values: numbers, binary, geometry,
arrays and hstore. Date/time text is in :mod:`lakecdc.capture.postgres.type_temporal`.

Every function takes the exact text PostgreSQL prints (see ``types.SESSION_OPTIONS``) and
returns what Debezium puts in the Connect payload for it.
"""

from __future__ import annotations

import decimal
import re
import struct
from collections.abc import Callable
from typing import Any

from lakecdc.events.java_hashmap import java_hashmap_order
from lakecdc.events.logical import EXACT as _EXACT

# ---- numbers -------------------------------------------------------------------------------

def unscaled_bytes(unscaled: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal two's-complement big-endian (0 -> ``b"\\x00"``)."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


_SPECIAL_NUMERIC = frozenset({"NaN", "Infinity", "-Infinity"})


def decimal_exact(text: str) -> decimal.Decimal:
    return decimal.Decimal(text)


SPECIAL_DECIMAL_NAMES = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}


def variable_scale(text: str) -> dict[str, Any] | None:
    """numeric without typmod, precise mode -> VariableScaleDecimal struct (trailing zeros stripped,
    never a negative scale); NaN/Infinity -> null."""
    if text in _SPECIAL_NUMERIC:
        return None
    value = decimal.Decimal(text)
    if not value:
        return {"scale": 0, "value": b"\x00"}
    stripped = value.normalize(_EXACT)
    exponent = stripped.as_tuple().exponent
    assert isinstance(exponent, int)
    scale = -exponent if exponent < 0 else 0
    return {"scale": scale, "value": unscaled_bytes(int(stripped.scaleb(scale, _EXACT)))}


def fixed_scale(scale: int) -> Callable[[str], bytes | None]:
    """numeric(p, s), precise mode -> Connect Decimal bytes at scale ``s``; NaN -> null."""

    def convert(text: str) -> bytes | None:
        if text in _SPECIAL_NUMERIC:
            return None
        return unscaled_bytes(int(decimal.Decimal(text).scaleb(scale, _EXACT)))

    return convert


def decimal_string(scale: int | None) -> Callable[[str], str]:
    """decimal.handling.mode=string: plain text at the column's scale; NaN -> "NAN" (Java enum name)."""

    def convert(text: str) -> str:
        special = SPECIAL_DECIMAL_NAMES.get(text)
        if special is not None:
            return special
        if scale is None:
            return text
        return format(decimal.Decimal(text).quantize(decimal.Decimal(1).scaleb(-scale), context=_EXACT), "f")

    return convert


def java_double(text: str) -> float:
    """Numeric text as Java's ``BigDecimal.doubleValue()`` / ``Double.parseDouble`` (NaN kept)."""
    return float(text)


def money_decimal(text: str) -> decimal.Decimal:
    """``'-$92,233,720,368,547,758.08'`` -> Decimal (currency symbol and grouping removed)."""
    negative = text.startswith("-") or text.startswith("(")
    cleaned = "".join(ch for ch in text if ch.isdigit() or ch == ".")
    value = decimal.Decimal(cleaned)
    return -value if negative else value


# ---- bytea, bits ---------------------------------------------------------------------------


def bytea_bytes(text: str) -> bytes:
    """``'\\x00ff10'`` (hex output) or escape output -> bytes."""
    if text.startswith("\\x"):
        return bytes.fromhex(text[2:])
    out = bytearray()
    i = 0
    raw = text.encode("latin-1", errors="surrogateescape")
    while i < len(raw):
        ch = raw[i]
        if ch == 0x5C:  # backslash
            if raw[i + 1] == 0x5C:
                out.append(0x5C)
                i += 2
            else:
                out.append(int(raw[i + 1:i + 4], 8))
                i += 4
        else:
            out.append(ch)
            i += 1
    return bytes(out)


def bits_bytes(text: str) -> bytes:
    """``'10101010'`` -> io.debezium.data.Bits bytes (Java ``BitSet.toByteArray``: bit 0 is the
    right-most character, little-endian bytes, no trailing zero bytes)."""
    if not text:
        return b""
    value = int(text, 2)
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


# ---- geometry ------------------------------------------------------------------------------


_EWKB_SRID_FLAG = 0x20000000


def ewkb_srid(ewkb: bytes) -> int | None:
    """The SRID of a PostGIS EWKB value, or None when it carries none (flag 0x20000000 in the
    geometry type word; the SRID follows it, in the value's byte order)."""
    order = "<" if ewkb[0] == 1 else ">"
    (type_word,) = struct.unpack_from(order + "I", ewkb, 1)
    if not type_word & _EWKB_SRID_FLAG:
        return None
    (srid,) = struct.unpack_from(order + "i", ewkb, 5)
    return srid


def postgis_struct(text: str) -> dict[str, Any]:
    """PostGIS HexEWKB text -> io.debezium.data.geometry.Geometry/Geography {wkb, srid}: the EWKB
    bytes unchanged (as Debezium sends them) and the SRID read from them."""
    ewkb = bytes.fromhex(text)
    return {"wkb": ewkb, "srid": ewkb_srid(ewkb)}


_WKB_POINT = struct.Struct("<bIdd")  # byte order 1 (little-endian), geometry type 1 (point), x, y


def point_struct(text: str) -> dict[str, Any]:
    """``'(1.5,-2)'`` -> io.debezium.data.geometry.Point {x, y, wkb, srid} (WKB little-endian)."""
    x_text, y_text = text.strip("()").split(",")
    x, y = float(x_text), float(y_text)
    return {"x": x, "y": y, "wkb": _WKB_POINT.pack(1, 1, x, y), "srid": None}


# ---- arrays --------------------------------------------------------------------------------


def parse_array(text: str, delimiter: str = ",") -> list[Any]:
    """PostgreSQL array literal -> nested lists of element text (None for NULL).

    ``'{1,NULL,"a b","x\\"y",{2,3}}'`` -> ``['1', None, 'a b', 'x"y', ['2', '3']]``.
    """
    if text.startswith("["):  # explicit bounds: '[0:1]={1,2}'
        text = text[text.index("=") + 1:]
    if '"' not in text and "\\" not in text and text.count("{") == 1:
        # hot path: one dimension, nothing quoted or escaped
        inner = text[1:-1]
        if not inner:
            return []
        return [None if item.upper() == "NULL" else item
                for item in (part.strip() for part in inner.split(delimiter))]
    pos = 0
    n = len(text)

    def parse_level() -> list[Any]:
        nonlocal pos
        assert text[pos] == "{"
        pos += 1
        items: list[Any] = []
        if pos < n and text[pos] == "}":
            pos += 1
            return items
        while True:
            while text[pos] == " ":
                pos += 1
            ch = text[pos]
            if ch == "{":
                items.append(parse_level())
            elif ch == '"':
                pos += 1
                buf = []
                while text[pos] != '"':
                    if text[pos] == "\\":
                        pos += 1
                    buf.append(text[pos])
                    pos += 1
                pos += 1
                items.append("".join(buf))
            else:
                buf = []
                while text[pos] != delimiter and text[pos] != "}":
                    if text[pos] == "\\":
                        pos += 1
                    buf.append(text[pos])
                    pos += 1
                token = "".join(buf).strip()
                items.append(None if token.upper() == "NULL" else token)
            while text[pos] == " ":
                pos += 1
            if text[pos] == "}":
                pos += 1
                return items
            pos += 1  # delimiter

    return parse_level()


# ---- hstore --------------------------------------------------------------------------------

_HSTORE_PAIR = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*=>\s*(NULL|"((?:[^"\\]|\\.)*)")\s*,?')
_UNESCAPE = re.compile(r"\\(.)")


def parse_hstore(text: str) -> dict[str, str | None]:
    """hstore output ``'"a"=>"1", "b"=>NULL'`` -> dict in the order Debezium emits the pairs.

    Debezium reads hstore into a ``java.util.HashMap`` (pgjdbc's HStoreConverter), so its JSON and
    map values follow HashMap iteration order, not PostgreSQL's: see :func:`java_hashmap_order`.
    """
    pairs = []
    for m in _HSTORE_PAIR.finditer(text):
        key = _UNESCAPE.sub(r"\1", m.group(1))
        pairs.append((key, None if m.group(2) == "NULL" else _UNESCAPE.sub(r"\1", m.group(3))))
    return dict(java_hashmap_order(pairs))
