"""Digit generation of Java 8-18 ``Double.toString`` / ``Float.toString`` (``FloatingDecimal``).

Before Java 19 the JDK printed doubles with the Steele & White free-format method: scale the value
to ``B/S`` with a margin ``M`` of half an ULP, emit digits while the remainder is farther than the
margin from both neighbours, then round the last digit. Its known quirks are reproduced here
because Debezium's output depends on them when it runs on Java 17:

* the margin is symmetric, also at powers of two where the lower neighbour is only half as far,
  so a longer digit string than necessary comes out (``Float.MIN_NORMAL`` -> ``1.17549435E-38``);
* the stopping test for the upper neighbour is strict in the 32/64-bit arithmetic paths and not
  strict in the big-number path (``9.999999999999999E22`` for ``1e23``);
* values printed in E-form (below 1e-3, from 1e8 up) always get a second digit before stopping;
* integral values below 2^63 are printed from their exact integer (see :mod:`javanum`).

Returns ``(digits, exponent)`` meaning ``0.<digits> * 10**exponent``; layout is done by the caller.
The result was checked against 500,000 outputs of OpenJDK 17 (tests/data/events holds a sample).
"""

from __future__ import annotations

import math
import struct

_D = struct.Struct("<d")
_Q = struct.Struct("<q")
_F = struct.Struct("<f")
_I = struct.Struct("<i")

_EXP_SHIFT = 52
_FRACT_HOB = 1 << _EXP_SHIFT
_SIGNIF_MASK = _FRACT_HOB - 1
_MAX_SMALL_BIN_EXP = 62
_MIN_SMALL_BIN_EXP = -21


def _bit_cost_of_pow5(exponent: int) -> int:
    """Approximate bits of 5**exponent the way the JDK estimates them (table, then 3 per power)."""
    return (5**exponent).bit_length() if exponent < 27 else exponent * 3


def _wrap(value: int, bits: int) -> int:
    """Java int/long overflow: keep ``bits`` bits, two's complement."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """floor(log10(value)) estimated from the binary exponent (may be one too high)."""
    one_point_fraction: float = _D.unpack(_Q.pack((1023 << 52) | (fract_bits & _SIGNIF_MASK)))[0]
    estimate = (one_point_fraction - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981
    return math.floor(estimate)


def _decompose_double(value: float) -> tuple[int, int, int]:
    bits = _Q.unpack(_D.pack(value))[0] & 0x7FFFFFFFFFFFFFFF
    fraction = bits & _SIGNIF_MASK
    raw_exp = bits >> 52
    if raw_exp == 0:
        leading = 64 - fraction.bit_length()
        shift = leading - (63 - _EXP_SHIFT)
        return fraction << shift, 1 - shift - 1023, 64 - leading
    return fraction | _FRACT_HOB, raw_exp - 1023, _EXP_SHIFT + 1


def _decompose_float(value: float) -> tuple[int, int, int]:
    bits = _I.unpack(_F.pack(value))[0] & 0x7FFFFFFF
    fraction = bits & ((1 << 23) - 1)
    raw_exp = bits >> 23
    if raw_exp == 0:
        leading = 32 - fraction.bit_length()
        shift = leading - (31 - 23)
        fraction <<= shift
        bin_exp = 1 - shift - 127
        significant = 32 - leading
    else:
        fraction |= 1 << 23
        bin_exp = raw_exp - 127
        significant = 24
    return fraction << (_EXP_SHIFT - 23), bin_exp, significant


def jdk17_digits(value: float, is_float32: bool) -> tuple[str, int] | None:
    """Java 17's digits for a finite, non-zero ``value`` (positive or negative), or None when the
    value takes the exact-integer path (handled by the caller)."""
    fract_bits, bin_exp, n_significant = (_decompose_float if is_float32 else _decompose_double)(abs(value))
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = _EXP_SHIFT + 1 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if _MIN_SMALL_BIN_EXP <= bin_exp <= _MAX_SMALL_BIN_EXP and n_tiny_bits == 0:
        if n_fract_bits < 64:
            return None  # exact integer path
    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant
    fract_bits >>= tail_zeros
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2 -= common
    s2 -= common
    m2 -= common
    if n_fract_bits == 1:  # the JDK's power-of-two adjustment
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0

    b_bits = n_fract_bits + b2 + _bit_cost_of_pow5(b5)
    ten_s_bits = s2 + 1 + _bit_cost_of_pow5(s5 + 1)
    b = fract_bits * 5**b5 << b2
    s = 5**s5 << s2
    m = 5**m5 << m2
    tens = s * 10
    digits: list[int] = []
    e_form = dec_exp < -3 or dec_exp >= 8

    if b_bits < 64 and ten_s_bits < 64:
        width = 32 if (b_bits < 32 and ten_s_bits < 32) else 64
        q, b = divmod(b, s)
        b *= 10
        m = _wrap(m * 10, width)
        low = b < m
        high = _wrap(b + m, width) > tens
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if e_form:
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b *= 10
            m = _wrap(m * 10, width)
            if m > 0:
                low = b < m
                high = _wrap(b + m, width) > tens
            else:  # the JDK's overflow escape
                low = high = True
            digits.append(q)
        low_digit_difference = 2 * b - tens
    else:
        m *= 10
        q, b = divmod(b, s)
        b *= 10
        low = b < m
        high = b + m >= tens
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if e_form:
            low = high = False
        while not low and not high:
            q, b = divmod(b, s)
            b *= 10
            m *= 10
            low = b < m
            high = b + m >= tens
            digits.append(q)
        low_digit_difference = 2 * b - tens if (high and low) else 0

    exponent = dec_exp + 1
    round_up = False
    if high:
        if low:
            if low_digit_difference == 0:
                round_up = digits[-1] % 2 == 1
            elif low_digit_difference > 0:
                round_up = True
        else:
            round_up = True
    if round_up:
        i = len(digits) - 1
        while i >= 0 and digits[i] == 9:
            i -= 1
        if i < 0:
            digits = [1] + [0] * (len(digits) - 1)
            exponent += 1
        else:
            digits = digits[:i] + [digits[i] + 1] + [0] * (len(digits) - i - 1)
    # No stripping: after a carry Java keeps the zeroed digits (and prints them).
    return "".join(map(str, digits)), exponent
