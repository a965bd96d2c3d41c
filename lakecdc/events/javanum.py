"""Java's number-to-text rules, as Jackson applies them when Kafka Connect writes JSON.

Jackson prints a ``double`` with ``Double.toString`` and a ``float`` with ``Float.toString``. Both
give the shortest decimal that reads back to the same binary value (JDK 19+, the same digits
Python's ``repr`` picks), but lay them out differently from Python::

    value        Python repr     Java
    1e300        1e+300          1.0E300
    -1e-06       -1e-06          -1.0E-6
    12345678.0   12345678.0      1.2345678E7
    0.001        0.001           0.001
    0.5 (float)  0.5             0.5
    0.1 (float)  0.10000000149.. 0.1       <- float32 gets its own shortest digits

Java uses plain notation for magnitudes in [1e-3, 1e7) and ``d.dddE<exp>`` outside, always with at
least one digit after the point.

Java 17 and 18 (``FloatingDecimal``) differ from the shortest digits in one family of values:
integral numbers of magnitude in [2^53, 2^63) for doubles and [2^24, 2^63) for floats are printed
from their exact integer value, keeping more digits (``Float.toString(123456789f)`` is
``1.23456792E8`` on Java 17, ``1.2345679E8`` on Java 19+). Debezium's reference run here used
Java 17, so that is the default; ``set_java_number_format("jdk19")`` (or the environment variable
``LAKECDC_JAVA_NUMBER_FORMAT=jdk19``) selects the newer rule. Verified against 500,000
``Double.toString`` / ``Float.toString`` outputs of OpenJDK 17 (one known residual: Java 17's
general path occasionally adds a digit above 2^63, about 1 in 300,000 random doubles). Non-finite values are written by Jackson as the quoted strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (WRITE_NAN_AS_STRINGS is on by default).
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable
from functools import lru_cache

_F32 = struct.Struct("<f")

JAVA_NUMBER_FORMATS = ("jdk17", "jdk19")
_jdk17_integers = os.environ.get("LAKECDC_JAVA_NUMBER_FORMAT", "jdk17").lower() != "jdk19"


def set_java_number_format(name: str) -> None:
    """Choose the Java release whose number text we reproduce: ``jdk17`` (17-18) or ``jdk19`` (19+)."""
    global _jdk17_integers
    if name not in JAVA_NUMBER_FORMATS:
        raise ValueError(f"Java number format must be one of {JAVA_NUMBER_FORMATS}, not {name!r}")
    _jdk17_integers = name == "jdk17"


def java_number_format() -> str:
    return "jdk17" if _jdk17_integers else "jdk19"


def _jdk17_integer_text(value: float, significant_bits: int) -> str:
    """Java 17 ``FloatingDecimal`` for an integral value in [1, 2^63): the exact integer, with the
    low decimal digits that the binary precision cannot hold rounded away."""
    magnitude = int(abs(value))
    bin_exp = magnitude.bit_length() - 1
    insignificant = 0
    if bin_exp > significant_bits:
        p2 = bin_exp - significant_bits - 1
        insignificant = len(str(1 << p2)) - 1 if p2 > 1 else 0
    if insignificant:
        pow10 = 10**insignificant
        magnitude, residue = divmod(magnitude, pow10)
        if residue >= pow10 >> 1:
            magnitude += 1
    text = str(magnitude)
    digits = text.rstrip("0")
    sign = "-" if value < 0 else ""
    exponent = len(text) + insignificant
    if 0 < exponent < 8:
        return _plain(sign, digits, exponent)
    return _scientific(sign, digits, exponent)
NON_FINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _scientific(sign: str, digits: str, exponent: int) -> str:
    """Java layout for ``0.digits * 10**exponent`` (digits without leading/trailing zeros)."""
    sci_exp = exponent - 1
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{sci_exp}"


def _plain(sign: str, digits: str, exponent: int) -> str:
    """Java layout for ``0.digits * 10**exponent`` in plain notation (at least ``x.y``)."""
    if exponent <= 0:
        return f"{sign}0.{'0' * -exponent}{digits}"
    if exponent >= len(digits):
        return f"{sign}{digits}{'0' * (exponent - len(digits))}.0"
    return f"{sign}{digits[:exponent]}.{digits[exponent:]}"


def _split_shortest(text: str) -> tuple[str, str, int]:
    """Split a shortest-repr string into (sign, significant digits, exponent) with value 0.DIGITS e EXP."""
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    exp = 0
    if "e" in text:
        text, exp_text = text.split("e")
        exp = int(exp_text)
    if "." in text:
        int_part, frac_part = text.split(".")
    else:
        int_part, frac_part = text, ""
    all_digits = int_part + frac_part
    stripped = all_digits.lstrip("0")
    leading_zeros = len(all_digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    # value = 0.all_digits * 10**(len(int_part) + exp); dropping leading zeros shifts the exponent.
    exponent = len(int_part) + exp - leading_zeros
    return sign, digits, exponent


def _two_digit_rule(value: float, shortest: str, reads_back: Callable[[str], bool]) -> str:
    """Java (JDK 19+) picks among 1- *and* 2-digit decimals when 1 digit suffices, the one closest
    to the binary value: ``Double.MIN_VALUE`` is ``4.9E-324`` where Python says ``5e-324``."""
    sign, digits, _ = _split_shortest(shortest)
    if len(digits) != 1:
        return shortest
    candidate = "%.1e" % value
    return candidate if reads_back(candidate) else shortest


def _java_layout(value: float, shortest: str) -> str:
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        if "e" not in shortest:
            return shortest if "." in shortest else shortest + ".0"
        return _plain(*_split_shortest(shortest))
    return _scientific(*_split_shortest(shortest))


def java_double_str(value: float) -> str:
    """``Double.toString(value)`` for finite values; Jackson's quoted text for NaN and infinities.

    >>> java_double_str(-1e300), java_double_str(3.14159), java_double_str(1e7)
    ('-1.0E300', '3.14159', '1.0E7')
    """
    shortest = repr(value)
    # Fast path: Python and Java agree on plain notation for ordinary magnitudes.
    if "e" not in shortest and (1e-3 <= value < 1e7 or -1e7 < value <= -1e-3):
        return shortest
    if not math.isfinite(value):
        return '"NaN"' if value != value else ('"Infinity"' if value > 0 else '"-Infinity"')
    if _jdk17_integers and 9007199254740992.0 <= abs(value) < 9223372036854775808.0 and value.is_integer():
        return _jdk17_integer_text(value, 53)
    if value != 0.0:
        shortest = _two_digit_rule(value, shortest, lambda text: float(text) == value)
    return _java_layout(value, shortest)


def float32_round(value: float) -> float:
    """Round a Python float to the nearest float32 (OverflowError when out of float32 range)."""
    rounded: float = _F32.unpack(_F32.pack(value))[0]
    return rounded


_F32_BITS = struct.Struct("<I")


def float32_shortest(value: float) -> str:
    """Shortest decimal (Python notation) that reads back, as a float32, to float32(value)."""
    # Cache by bit pattern: 0.0 and -0.0 are equal as floats but print differently.
    return _shortest_for_bits(_F32_BITS.unpack(_F32.pack(value))[0])


@lru_cache(maxsize=8192)
def _shortest_for_bits(bits: int) -> str:
    target = _F32.unpack(_F32_BITS.pack(bits))[0]
    if not math.isfinite(target):
        return repr(target)
    for precision in range(1, 10):
        text = "%.*g" % (precision, target)
        try:
            if float32_round(float(text)) == target:
                break
        except OverflowError:  # a short candidate near FLT_MAX rounds past it
            continue
    else:
        return repr(target)  # unreachable: 9 significant digits always round-trip a float32
    if precision == 1 and target != 0.0:
        text = _two_digit_rule(target, text, lambda t: _reads_back_f32(t, target))
    return repr(float(text))


def _reads_back_f32(text: str, target: float) -> bool:
    try:
        return float32_round(float(text)) == target
    except OverflowError:
        return False
    return repr(target)  # unreachable: 9 significant digits always round-trip a float32


def java_float_str(value: float) -> str:
    """``Float.toString((float) value)``, Jackson quoting for non-finite values.

    >>> java_float_str(0.1), java_float_str(-0.5), java_float_str(1e10)
    ('0.1', '-0.5', '1.0E10')
    """
    if not math.isfinite(value):
        return java_double_str(value)
    shortest = float32_shortest(value)
    rounded = float(shortest)
    if _jdk17_integers and 16777216.0 <= abs(value) < 9223372036854775808.0:
        exact = float32_round(value)
        if exact.is_integer():
            return _jdk17_integer_text(exact, 24)
    return _java_layout(rounded, shortest)


def float32_json_value(value: float) -> float:
    """The Python float a JSON reader gets from Java's text for float32 ``value``."""
    if not math.isfinite(value):
        return value
    return float(java_float_str(value))
