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

Java before 19 (``FloatingDecimal``) does not always print the shortest digits: integral values
of magnitude in [2^53, 2^63) (doubles) or [2^24, 2^63) (floats) are printed from their exact integer
(``Float.toString(123456789f)`` is ``1.23456792E8`` on Java 17, ``1.2345679E8`` on Java 19+), and a
few others get a longer digit string (``1e23`` -> ``9.999999999999999E22``,
``Float.MIN_NORMAL`` -> ``1.17549435E-38``); :mod:`lakecdc.events.jdk17_dtoa` reproduces that
algorithm. Debezium's reference run here used Java 17, so ``jdk17`` is the default;
``set_java_number_format("jdk19")`` (or ``LAKECDC_JAVA_NUMBER_FORMAT=jdk19``) selects the newer
shortest-digits rule. Both were checked against OpenJDK 17 on 1.2 million values (random bit
patterns, subnormals, powers of two and ten and their neighbours, human-scale decimals).
Non-finite values are written by Jackson as the quoted strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` (WRITE_NAN_AS_STRINGS is on by default).
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable
from functools import lru_cache

from lakecdc.events.jdk17_dtoa import jdk17_digits

_F32 = struct.Struct("<f")

JAVA_NUMBER_FORMATS = ("jdk17", "jdk19")
_jdk17 = os.environ.get("LAKECDC_JAVA_NUMBER_FORMAT", "jdk17").lower() != "jdk19"


def set_java_number_format(name: str) -> None:
    """Choose the Java release whose number text we reproduce: ``jdk17`` (17-18) or ``jdk19`` (19+)."""
    global _jdk17
    if name not in JAVA_NUMBER_FORMATS:
        raise ValueError(f"Java number format must be one of {JAVA_NUMBER_FORMATS}, not {name!r}")
    _jdk17 = name == "jdk17"


def java_number_format() -> str:
    return "jdk17" if _jdk17 else "jdk19"


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


_MIN_NORMAL = {False: 2.2250738585072014e-308, True: 1.1754943508222875e-38}
_EXACT_INTEGER_LIMIT = {False: 9007199254740992.0, True: 16777216.0}  # 2^53, 2^24


def _java17_differs(value: float, is_float32: bool) -> bool:
    """Whether Java 17's digits may differ from the shortest ones, so the slow emulation runs.

    Outside these classes both give the same text (checked on 1.2 million OpenJDK 17 outputs):
    integral values from 2^53 (2^24 for floats), powers of two, magnitudes from 2^63, subnormals.
    """
    magnitude = abs(value)
    return (
        magnitude >= 9223372036854775808.0
        or magnitude < _MIN_NORMAL[is_float32]
        or math.frexp(magnitude)[0] == 0.5
        or (magnitude >= _EXACT_INTEGER_LIMIT[is_float32] and magnitude.is_integer())
    )


def _jdk17_text(value: float, is_float32: bool) -> str:
    """Java 17 text of a finite non-zero value."""
    generated = jdk17_digits(value, is_float32)
    if generated is None:
        return _jdk17_integer_text(value, 24 if is_float32 else 53)
    digits, exponent = generated
    sign = "-" if value < 0 else ""
    if -3 < exponent < 8:
        return _plain(sign, digits, exponent)
    return _scientific(sign, digits, exponent)


def java_double_str(value: float) -> str:
    """``Double.toString(value)`` for finite values; Jackson's quoted text for NaN and infinities.

    >>> java_double_str(-1e300), java_double_str(3.14159), java_double_str(1e7)
    ('-1.0E300', '3.14159', '1.0E7')
    """
    shortest = repr(value)
    # Fast path: for ordinary magnitudes Python's repr is Java's text (checked for Java 17 and 19+).
    if value.__class__ is float and "e" not in shortest and (1e-3 <= value < 1e7 or -1e7 < value <= -1e-3):
        return shortest
    if value.__class__ is not float:  # int, Decimal, numpy scalars: a Java double prints as a double
        return java_double_str(float(value))
    if not math.isfinite(value):
        return '"NaN"' if value != value else ('"Infinity"' if value > 0 else '"-Infinity"')
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if _jdk17 and _java17_differs(value, False):
        return _jdk17_text(value, False)
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


def java_float_str(value: float) -> str:
    """``Float.toString((float) value)``, Jackson quoting for non-finite values.

    >>> java_float_str(0.1), java_float_str(-0.5), java_float_str(1e10)
    ('0.1', '-0.5', '1.0E10')
    """
    if not math.isfinite(value):
        return java_double_str(value)
    return _float_text_for_bits(_F32_BITS.unpack(_F32.pack(value))[0], _jdk17)


@lru_cache(maxsize=16384)
def _float_text_for_bits(bits: int, jdk17: bool) -> str:
    target = _F32.unpack(_F32_BITS.pack(bits))[0]
    if target == 0.0:
        return "-0.0" if bits >> 31 else "0.0"
    if jdk17 and _java17_differs(target, True):
        return _jdk17_text(target, True)
    shortest = _shortest_for_bits(bits)
    return _java_layout(float(shortest), shortest)


def float32_json_value(value: float) -> float:
    """The Python float a JSON reader gets from Java's text for float32 ``value``."""
    if not math.isfinite(value):
        return value
    return float(java_float_str(value))
