"""MySQL/MariaDB SQL for the canonical texts its functions do not give directly: a double's bits
and the geometry structs of Debezium's MySQL mapping.

**Floats.** MySQL has no cast of a double to its bytes, and its text of a double is not its bits
(MariaDB prints FLOAT with 6 significant digits: 0.1234567 is sent as ``0.123457``). The bits are
computed: in IEEE 754 arithmetic, which MySQL's doubles use, scaling by a power of two is exact, so
for ``a = |x|`` in the normal range with ``2^e <= a < 2^(e+1)`` the fraction field is exactly
``(a / 2^e - 1) * 2^52``; ``e`` is ``FLOOR(LOG2(a))`` corrected by one step where LOG2 rounds across
a power of two, kept in [-1022, 1023] (``POW(2, 1024)`` overflows). A subnormal's fraction field is
``a * 2^1074``, in two exact steps. The sign of a zero is ``ATAN2(x, -1) < 0`` (MariaDB stores -0 as
0, an expression keeps it). MySQL stores no NaN or infinity. A FLOAT column's value takes part in
arithmetic as its float32 widened to a double, exactly: what Debezium emits for FLOAT (Connect
FLOAT32, read from the binlog row's four bytes), widened the same way in the canonical text. A
value read through the client (as a snapshot SELECT does, Debezium's too) comes at 6 significant
digits: a lake row holding that rounding of a longer FLOAT differs from the source, and is reported.

**Geometry.** Debezium's MySQL connector emits POINT as ``io.debezium.data.geometry.Point``
{x, y, wkb, srid} and other spatial types as ``...Geometry`` {wkb, srid}: ``wkb`` is the stored value
after its 4-byte SRID, ``srid`` null for 0 (``BinlogGeometry``), x and y the point's doubles. These
are the nested values a MySQL source has; a struct of another shape has no MySQL value to compare.
"""

from __future__ import annotations

POINT_FIELDS = ("x", "y", "wkb", "srid")
GEOMETRY_FIELDS = ("wkb", "srid")
_TWO_52 = "4503599627370496"
_MIN_NORMAL = "2.2250738585072014e-308"


def double_bits(c: str) -> str:
    """The 16 lowercase hex digits of the IEEE 754 bits of expression ``c`` as a double (null stays null)."""
    a = f"ABS({c})"
    e0 = f"LEAST(GREATEST(FLOOR(LOG2({a})), -1022), 1023)"
    m0 = f"({a} / POW(2, {e0}))"
    e = f"({e0} + ({m0} >= 2) - ({m0} < 1))"
    normal = f"(CAST({e} + 1023 AS UNSIGNED) << 52) | CAST(({a} / POW(2, {e}) - 1) * {_TWO_52} AS UNSIGNED)"
    subnormal = f"CAST({a} * POW(2, 1022) * {_TWO_52} AS UNSIGNED)"
    bits = f"(IF({c} < 0, 1, 0) << 63) | IF({a} < {_MIN_NORMAL}, {subnormal}, {normal})"
    return (f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} = 0 THEN IF(ATAN2({c}, -1) < 0, '8000000000000000', "
            f"'0000000000000000') ELSE LPAD(LOWER(HEX({bits})), 16, '0') END")


def geometry_fields(c: str, names: tuple[str, ...]) -> list[str] | None:
    """SQL of each field of Debezium's geometry struct of column ``c``; None: not a geometry struct."""
    if names not in (POINT_FIELDS, GEOMETRY_FIELDS):
        return None
    fields = {"x": f"ST_X({c})", "y": f"ST_Y({c})", "wkb": f"SUBSTRING({c}, 5)", "srid": f"NULLIF(ST_SRID({c}), 0)"}
    return [fields[n] for n in names]
