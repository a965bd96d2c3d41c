"""``java.text.SimpleDateFormat`` in UTC with the JVM's default ``en_US`` symbols and calendar (weeks
start on Sunday, week 1 holds January 1st), as Kafka Connect's ``TimestampConverter`` formats and
parses ``string`` timestamps.

Every pattern letter Java defines is formatted: ``G`` era, ``y`` / ``Y`` year / week year, ``M`` /
``L`` month, ``w`` / ``W`` week in year / month, ``D`` / ``d`` day in year / month, ``F`` day of week
in month, ``E`` / ``u`` day name / number, ``a``, ``H k K h m s S``, ``z Z X`` (UTC), and quoted
text. A letter Java does not define is an error when configured, as Java's ``Illegal pattern
character``. Parsing reads the fields that fix an instant (``y M L d D H k K h m s S a`` and the
zone; ``G`` and ``E`` are read and ignored); a pattern with week fields (``Y w W F u``) cannot be
parsed here: Java resolves them against the other fields by its calendar's rules, so such a string
input fails the record, naming the letter.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import Any

_JAVA_LETTERS = set("GyYMLwWDdFEuaHkKhmsSzZX")
_WEEK_LETTERS = set("YwWFu")
_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_DAYS = [calendar.day_name[i] for i in range(7)]


def _sunday_based(day: dt.date) -> int:
    return (day.weekday() + 1) % 7  # Sunday 0 ... Saturday 6


def _week_of_year(day: dt.date) -> tuple[int, int]:
    """(week year, week of year) with weeks from Sunday and January 1st in week 1 (minimal days 1)."""
    week_start = day - dt.timedelta(days=_sunday_based(day))
    if week_start + dt.timedelta(days=6) >= dt.date(day.year + 1, 1, 1) and day.month == 12:
        return day.year + 1, 1
    jan1 = dt.date(day.year, 1, 1)
    return day.year, (day.timetuple().tm_yday - 1 + _sunday_based(jan1)) // 7 + 1


class SimpleDateFormat:
    _TOKEN = re.compile(r"'[^']*'|''|([A-Za-z])\1*|[^A-Za-z']+")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.tokens: list[tuple[str, str]] = []  # (letter or "", text)
        pos = 0
        while pos < len(pattern):
            match = self._TOKEN.match(pattern, pos)
            if match is None:
                raise ValueError(f"Unterminated quote in {pattern!r}")
            text = match.group(0)
            pos = match.end()
            if text == "''":
                self.tokens.append(("", "'"))
            elif text.startswith("'"):
                self.tokens.append(("", text[1:-1]))
            elif text[0].isalpha():
                if text[0] not in _JAVA_LETTERS:
                    raise ValueError(f"Illegal pattern character '{text[0]}'")
                self.tokens.append((text[0], text))
            else:
                self.tokens.append(("", text))

    def format(self, millis: int) -> str:
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
        day = moment.date()
        out = []
        for letter, text in self.tokens:
            n = len(text)
            if not letter:
                out.append(text)
            elif letter in "yY":
                year = moment.year if letter == "y" else _week_of_year(day)[0]
                out.append(f"{year % 100:02d}" if n == 2 else f"{year:0{n}d}")
            elif letter in "ML":
                out.append(_MONTHS[moment.month - 1][:3] if n == 3 else
                           _MONTHS[moment.month - 1] if n > 3 else f"{moment.month:0{n}d}")
            elif letter == "E":
                name = _DAYS[moment.weekday()]
                out.append(name if n > 3 else name[:3])
            elif letter == "G":
                out.append("AD")
            elif letter == "a":
                out.append("AM" if moment.hour < 12 else "PM")
            elif letter in "zZX":
                out.append({"z": "UTC", "Z": "+0000", "X": "Z"}[letter])
            else:
                out.append(f"{self._number(letter, moment):0{n}d}")
        return "".join(out)

    @staticmethod
    def _number(letter: str, moment: dt.datetime) -> int:
        day = moment.date()
        if letter == "w":
            return _week_of_year(day)[1]
        if letter == "W":
            return (moment.day - 1 + _sunday_based(day.replace(day=1))) // 7 + 1
        return {"d": moment.day, "H": moment.hour, "k": moment.hour or 24, "K": moment.hour % 12,
                "h": moment.hour % 12 or 12, "m": moment.minute, "s": moment.second,
                "S": moment.microsecond // 1000, "D": moment.timetuple().tm_yday,
                "F": (moment.day - 1) // 7 + 1, "u": moment.isoweekday()}[letter]

    def parse(self, text: str) -> int:
        week = next((letter for letter, _ in self.tokens if letter in _WEEK_LETTERS), None)
        if week is not None:
            raise NotImplementedError(f"pattern letter '{week}' (a week field) cannot be parsed by lakecdc")
        regex, readers = [], []
        for letter, token in self.tokens:
            if not letter:
                regex.append(re.escape(token))
                continue
            if letter in "zZX":
                regex.append(r"(UTC|GMT|Z|[+-]\d{2}:?\d{2})")
            elif letter in "EaG" or (letter in "ML" and len(token) >= 3):
                regex.append(r"([A-Za-z]+)")
            else:
                regex.append(r"([+-]?\d+)")
            readers.append(letter)
        match = re.fullmatch("".join(regex), text.strip()) or re.match("".join(regex), text)
        if match is None:
            raise ValueError(text)
        parts: dict[str, Any] = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
        offset_ms, pm = 0, None
        for letter, raw in zip(readers, match.groups()):
            if letter in "ML" and not raw.lstrip("+-").isdigit():
                parts["M"] = next(i + 1 for i, m in enumerate(_MONTHS) if m.lower().startswith(raw.lower()))
            elif letter == "a":
                pm = raw.upper() == "PM"
            elif letter in "EG":
                continue
            elif letter in "zZX":
                if raw not in ("UTC", "GMT", "Z"):
                    sign = -1 if raw[0] == "-" else 1
                    digits = raw[1:].replace(":", "")
                    offset_ms = sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000
            else:
                parts[{"h": "H", "k": "H", "K": "H", "L": "M"}.get(letter, letter)] = int(raw)
        hour = parts["H"]
        if pm is not None:
            hour = hour % 12 + (12 if pm else 0)
        base = dt.datetime(parts["y"], 1, 1) + dt.timedelta(days=parts.get("D", 1) - 1) if "D" in parts else \
            dt.datetime(parts["y"], parts["M"], parts["d"])
        moment = base + dt.timedelta(hours=hour, minutes=parts["m"], seconds=parts["s"], milliseconds=parts["S"])
        return (moment - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1) - offset_ms
