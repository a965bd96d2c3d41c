"""PostgreSQL date/time text (DateStyle=ISO, IntervalStyle=postgres) -> Debezium 3.6 time values.

Two routes give Debezium different results for the same text:

- *streaming* (pgoutput): Debezium parses scalar text itself (proleptic Gregorian dates, BC kept).
- *jdbc* (snapshot rows, and array elements on both routes, read through pgjdbc): values pass
  through ``java.sql.Date``/``Timestamp``, so BC years lose their era and ``infinity`` becomes
  pgjdbc's sentinel dates.

Arithmetic is on integers (no ``datetime``), so years before 1 or after 9999 work; where Debezium's
Java arithmetic overflows or wraps, these functions do the same (noted on each).
"""

from __future__ import annotations

import decimal
import re

# ---- calendar ------------------------------------------------------------------------------


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical year: 1 BC is 0)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`days_from_civil`."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


MICROS_PER_DAY = 86_400_000_000
# Debezium's POSITIVE/NEGATIVE_INFINITY_LOCAL_DATE (-5877611-06-21 / -06-22), used for streamed dates.
STREAM_DATE_POS_INF = days_from_civil(-5877611, 6, 21)
STREAM_DATE_NEG_INF = days_from_civil(-5877611, 6, 22)
# pgjdbc's DATE_POSITIVE/NEGATIVE_INFINITY millisecond sentinels, as Debezium turns them into dates.
JDBC_DATE_POS_INF = -622191234
JDBC_DATE_NEG_INF = -625821272
# ... and as io.debezium.time.IsoDate text (java.util.Date's year wraps differently).
JDBC_ISO_DATE_POS_INF = "+292278994-08-16"
JDBC_ISO_DATE_NEG_INF = "+292269055-12-02"
# The same sentinels read as microseconds (Debezium's *_INFINITY_INSTANT) for timestamps.
TIMESTAMP_POS_INF_MICROS = 9223372036825200000
TIMESTAMP_NEG_INF_MICROS = -9223372036832400000

_DATE = re.compile(r"(\d+)-(\d\d)-(\d\d)")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?")


def _fraction_micros(frac: str | None) -> int:
    return int(frac.ljust(6, "0")) if frac else 0


def parse_date_parts(text: str) -> tuple[int, int, int, bool]:
    """``'2024-02-29'`` / ``'0044-03-15 BC'`` -> (year as printed, month, day, bc)."""
    m = _DATE.match(text)
    if m is None:
        raise ValueError(f"not a PostgreSQL date: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), text.endswith(" BC")


def stream_epoch_days(text: str) -> int:
    """Streamed ``date`` -> io.debezium.time.Date (days since epoch, BC as proleptic year 1-y)."""
    if len(text) == 10 and text[4] == "-":  # hot path: YYYY-MM-DD
        return days_from_civil(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    if text == "infinity":
        return STREAM_DATE_POS_INF
    if text == "-infinity":
        return STREAM_DATE_NEG_INF
    y, mo, d, bc = parse_date_parts(text)
    return days_from_civil(1 - y if bc else y, mo, d)


def jdbc_epoch_days(text: str) -> int:
    """Snapshot/array ``date`` as Debezium gets it through ``java.sql.Date`` (BC era dropped)."""
    if text == "infinity":
        return JDBC_DATE_POS_INF
    if text == "-infinity":
        return JDBC_DATE_NEG_INF
    y, mo, d, _bc = parse_date_parts(text)
    return days_from_civil(y, mo, d)


def time_micros(text: str) -> int:
    """``'13:14:15.123456'`` -> microseconds of the day (``24:00:00`` is 86 400 000 000)."""
    m = _TIME.match(text)
    if m is None:
        raise ValueError(f"not a PostgreSQL time: {text!r}")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3))
    return ((h * 60 + mi) * 60 + s) * 1_000_000 + _fraction_micros(m.group(4))


def _offset_seconds(text: str) -> int:
    m = _OFFSET.fullmatch(text)
    if m is None:
        raise ValueError(f"not a UTC offset: {text!r}")
    secs = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
    return -secs if m.group(1) == "-" else secs


def timetz_utc_micros(text: str) -> int:
    """``'13:14:15.5+05:30'`` -> microseconds of the UTC day (wrapped into 0..24h)."""
    m = _TIME.match(text)
    if m is None:
        raise ValueError(f"not a PostgreSQL timetz: {text!r}")
    local = time_micros(text)
    offset = _offset_seconds(text[m.end():])
    return (local - offset * 1_000_000) % MICROS_PER_DAY


_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)


def java_epoch_micros(seconds: int, micros: int) -> int:
    """Debezium's ``TimeUnit.SECONDS.toMicros(s) + microOfSecond``: the multiplication saturates at
    the long range and the addition wraps (year 294276 comes out negative, as Debezium emits it)."""
    scaled = max(_LONG_MIN, min(_LONG_MAX, seconds * 1_000_000))
    total = scaled + micros
    return (total - _LONG_MIN) % (1 << 64) + _LONG_MIN


def timestamp_micros(text: str) -> int:
    """``timestamp`` text -> microseconds since the epoch (wall clock as UTC; BC kept)."""
    if text == "infinity":
        return TIMESTAMP_POS_INF_MICROS
    if text == "-infinity":
        return TIMESTAMP_NEG_INF_MICROS
    y, mo, d, bc = parse_date_parts(text)
    days = days_from_civil(1 - y if bc else y, mo, d)
    return days * MICROS_PER_DAY + time_micros(text[text.index(" ") + 1:])


def _common_form(text: str) -> bool:
    """``YYYY-MM-DD HH:MM:SS[.f...]`` with a 4-digit AD year: the shape nearly every value has."""
    return len(text) >= 19 and text[4] == "-" and text[10] == " " and not text.endswith(" BC")


def nano_timestamp(text: str) -> int | None:
    """io.debezium.time.NanoTimestamp: exact long arithmetic, so a value outside 1677-09-21 ..
    2262-04-11 fails and Debezium emits null; ``±infinity`` are Long.MAX_VALUE / MIN_VALUE."""
    if text == "infinity":
        return _LONG_MAX
    if text == "-infinity":
        return _LONG_MIN
    nanos = timestamp_micros(text) * 1000
    return nanos if _LONG_MIN <= nanos <= _LONG_MAX else None


def micro_timestamp(text: str) -> int:
    """io.debezium.time.MicroTimestamp, overflowing past year 294247 exactly like Debezium."""
    if _common_form(text):  # hot path: slicing instead of regexes, no overflow possible
        micros = ((int(text[11:13]) * 60 + int(text[14:16])) * 60 + int(text[17:19])) * 1_000_000
        if len(text) > 20:
            micros += int(text[20:26].ljust(6, "0"))
        return days_from_civil(int(text[0:4]), int(text[5:7]), int(text[8:10])) * MICROS_PER_DAY + micros
    seconds, micros = divmod(timestamp_micros(text), 1_000_000)
    return java_epoch_micros(seconds, micros)


def timestamptz_micros(text: str) -> int:
    """``'2024-02-29 13:14:15.123456+05:30'`` (optionally `` BC``) -> UTC microseconds since epoch."""
    bc = text.endswith(" BC")
    body = text[:-3] if bc else text
    y, mo, d, _ = parse_date_parts(body)
    days = days_from_civil(1 - y if bc else y, mo, d)
    clock = body[body.index(" ") + 1:]
    m = _TIME.match(clock)
    if m is None:
        raise ValueError(f"not a PostgreSQL timestamptz: {text!r}")
    offset = _offset_seconds(clock[m.end():])
    return days * MICROS_PER_DAY + time_micros(clock) - offset * 1_000_000


# ---- Java-style ISO formatting -------------------------------------------------------------


def iso_year(year: int) -> str:
    """Year as java.time prints it: 4 digits, sign for < 0, ``+`` for > 9999."""
    if year < 0:
        return f"-{-year:04d}"
    if year > 9999:
        return f"+{year}"
    return f"{year:04d}"


def iso_date(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{iso_year(y)}-{m:02d}-{d:02d}"


def iso_clock(micros_of_day: int, digits: int | None) -> str:
    """``HH:MM:SS[.f]`` with ``digits`` fraction digits, or (None) without trailing zeros."""
    secs, micros = divmod(micros_of_day, 1_000_000)
    h, rem = divmod(secs, 3600)
    mi, s = divmod(rem, 60)
    out = f"{h:02d}:{mi:02d}:{s:02d}"
    if digits is None:
        if micros:
            out += "." + f"{micros:06d}".rstrip("0")
        return out
    if digits > 0:
        out += "." + f"{micros:06d}"[:digits]
    return out


def iso_clock_minimal(micros_of_day: int) -> str:
    """``HH:MM:SS`` plus the fraction with trailing zeros removed (Debezium's ZonedTime)."""
    secs, micros = divmod(micros_of_day, 1_000_000)
    h, rem = divmod(secs, 3600)
    mi, s = divmod(rem, 60)
    out = f"{h:02d}:{mi:02d}:{s:02d}"
    if micros:
        out += "." + f"{micros:06d}".rstrip("0")
    return out


def zoned_timestamp_text(text: str, digits: int) -> str:
    """timestamptz text -> io.debezium.time.ZonedTimestamp text (``infinity`` kept as is).

    A value already in UTC (the session TimeZone is UTC) is reshaped without any arithmetic:
    ``2024-01-02 03:04:05.5+00`` -> ``2024-01-02T03:04:05.500000Z``.
    """
    if text.endswith("+00") and _common_form(text):
        frac = text[20:-3] if text[19] == "." else ""
        if digits:
            return f"{text[:10]}T{text[11:19]}.{frac.ljust(digits, '0')[:digits]}Z"
        return f"{text[:10]}T{text[11:19]}Z"
    if text == "infinity" or text == "-infinity":
        return text
    return zoned_timestamp(timestamptz_micros(text), digits)


def zoned_timestamp(utc_micros: int, digits: int) -> str:
    """io.debezium.time.ZonedTimestamp text, e.g. ``2024-02-29T07:44:15.123456Z``."""
    days, micros = divmod(utc_micros, MICROS_PER_DAY)
    return f"{iso_date(days)}T{iso_clock(micros, digits)}Z"


# ---- intervals -----------------------------------------------------------------------------

_INTERVAL_UNIT = re.compile(r"([+-]?\d+) (year|mon|day)s?")
_INTERVAL_CLOCK = re.compile(r"([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d+))?")
MICRO_DAYS_PER_MONTH = 365.25 / 12


def interval_fields(text: str) -> tuple[int, int, int, int, int, int, int]:
    """postgres-style interval -> (years, months, days, hours, minutes, whole seconds, micros),
    signed the way pgjdbc's ``PGInterval`` signs them."""
    years = months = days = hours = minutes = seconds = micros = 0
    for amount, unit in _INTERVAL_UNIT.findall(text):
        if unit == "year":
            years = int(amount)
        elif unit == "mon":
            months = int(amount)
        else:
            days = int(amount)
    m = _INTERVAL_CLOCK.search(text)
    if m is not None:
        hours, minutes, seconds = int(m.group(2)), int(m.group(3)), int(m.group(4))
        micros = round(float("0." + m.group(5)) * 1_000_000) if m.group(5) else 0
        if m.group(1) == "-":
            hours, minutes, seconds, micros = -hours, -minutes, -seconds, -micros
    return years, months, days, hours, minutes, seconds, micros


def interval_micro_duration(text: str) -> int:
    """io.debezium.time.MicroDuration: Debezium's double arithmetic (a month is 30.4375 days),
    truncated and saturated like Java's ``(long)`` cast."""
    years, months, days, hours, minutes, whole, micros = interval_fields(text)
    seconds = whole + micros / 1_000_000
    number_of_days = (years * 12 + months) * MICRO_DAYS_PER_MONTH + days
    number_of_seconds = ((number_of_days * 24 + hours) * 60 + minutes) * 60 + seconds
    total = number_of_seconds * 1e6
    if total != total:
        return 0
    if total >= 9.223372036854775807e18:
        return 9223372036854775807
    if total <= -9.223372036854775808e18:
        return -9223372036854775808
    return int(total)


def interval_iso(text: str) -> str:
    """io.debezium.time.Interval: ``P1Y2M3DT4H5M6.789S``."""
    years, months, days, hours, minutes, whole, micros = interval_fields(text)
    seconds = decimal.Decimal(repr(whole + micros / 1_000_000))
    seconds_text = format(seconds.normalize(), "f") if seconds else "0"
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{seconds_text}S"
