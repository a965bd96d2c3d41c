"""Kafka Connect's ``TimestampConverter$Key`` / ``$Value``: a timestamp field (or the whole key or
value) converted between ``unix`` (int64 in ``unix.precision``), ``string`` (a ``SimpleDateFormat``
``format``, UTC) and Connect's ``Timestamp`` / ``Date`` / ``Time`` logical types.

The input kind comes from the field's schema: a Connect logical name, else ``string``, else
``int64`` (unix: Debezium's ``MicroTimestamp`` is read as a unix value in ``unix.precision``); any
other schema is an error, as in Kafka Connect. Conversions go through epoch milliseconds (Java's
``java.util.Date``), truncating toward zero as ``TimeUnit`` does. Text is written and read in the
proleptic Gregorian calendar: for dates before 1582-10-15 Java's ``GregorianCalendar`` uses the Julian
one and its text differs.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import Any

from lakecdc.events.schema import ConnectField, ConnectSchema, primitive
from lakecdc.transforms.base import (KeyOrValue, Record, SchemaCache, Settings, TransformContext,
                                     TransformDataError, struct_get)
from lakecdc.transforms.fields import CONNECT_DATE, CONNECT_TIME, CONNECT_TIMESTAMP, logical

TARGETS = ("string", "unix", "Date", "Time", "Timestamp")
PRECISIONS = ("nanoseconds", "microseconds", "milliseconds", "seconds")
_DAY_MS = 86_400_000


def _truncate(numerator: int, denominator: int) -> int:
    """Java's integer division (toward zero), as ``TimeUnit.convert`` does."""
    q = abs(numerator) // denominator
    return q if numerator >= 0 else -q


class SimpleDateFormat:
    """The part of ``java.text.SimpleDateFormat`` (UTC) timestamp formats use: y M d H h k K m s S a E
    D z Z X and quoted text. Other letters are refused when configured."""

    _TOKEN = re.compile(r"'[^']*'|''|([A-Za-z])\1*|[^A-Za-z']+")
    _SUPPORTED = set("yMdHhkKmsSaEDzZX")
    _MONTHS = [calendar.month_name[i] for i in range(1, 13)]
    _DAYS = [calendar.day_name[i] for i in range(7)]

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
                if text[0] not in self._SUPPORTED:
                    raise ValueError(f"Illegal pattern character '{text[0]}' (or one lakecdc does not implement)")
                self.tokens.append((text[0], text))
            else:
                self.tokens.append(("", text))

    def format(self, millis: int) -> str:
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)
        out = []
        for letter, text in self.tokens:
            n = len(text)
            if not letter:
                out.append(text)
            elif letter == "y":
                out.append(f"{moment.year % 100:02d}" if n == 2 else f"{moment.year:0{n}d}")
            elif letter == "M":
                out.append(self._MONTHS[moment.month - 1][:3] if n == 3 else
                           self._MONTHS[moment.month - 1] if n > 3 else f"{moment.month:0{n}d}")
            elif letter == "E":
                name = self._DAYS[moment.weekday()]
                out.append(name if n > 3 else name[:3])
            elif letter == "a":
                out.append("AM" if moment.hour < 12 else "PM")
            elif letter in "zZX":
                out.append({"z": "UTC", "Z": "+0000", "X": "Z"}[letter])
            else:
                number = {"d": moment.day, "H": moment.hour, "k": moment.hour or 24, "K": moment.hour % 12,
                          "h": moment.hour % 12 or 12, "m": moment.minute, "s": moment.second,
                          "S": moment.microsecond // 1000, "D": moment.timetuple().tm_yday}[letter]
                out.append(f"{number:0{n}d}")
        return "".join(out)

    def parse(self, text: str) -> int:
        regex, readers = [], []
        for letter, token in self.tokens:
            if not letter:
                regex.append(re.escape(token))
                continue
            if letter in "zZX":
                regex.append(r"(UTC|GMT|Z|[+-]\d{2}:?\d{2})")
            elif letter in "Ea" or (letter == "M" and len(token) >= 3):
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
            if letter == "M" and not raw.lstrip("+-").isdigit():
                parts["M"] = next(i + 1 for i, m in enumerate(self._MONTHS) if m.lower().startswith(raw.lower()))
            elif letter == "a":
                pm = raw.upper() == "PM"
            elif letter == "E":
                continue
            elif letter in "zZX":
                if raw not in ("UTC", "GMT", "Z"):
                    sign = -1 if raw[0] == "-" else 1
                    digits = raw[1:].replace(":", "")
                    offset_ms = sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000
            else:
                parts[{"h": "H", "k": "H", "K": "H"}.get(letter, letter)] = int(raw)
        hour = parts["H"]
        if pm is not None:
            hour = hour % 12 + (12 if pm else 0)
        base = dt.datetime(parts["y"], 1, 1) + dt.timedelta(days=parts.get("D", 1) - 1) if "D" in parts else \
            dt.datetime(parts["y"], parts["M"], parts["d"])
        moment = base + dt.timedelta(hours=hour, minutes=parts["m"], seconds=parts["s"], milliseconds=parts["S"])
        return (moment - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1) - offset_ms


class TimestampConverter:
    """``org.apache.kafka.connect.transforms.TimestampConverter$Key`` / ``$Value``."""

    def __init__(self, settings: Settings, context: TransformContext) -> None:
        self.part = KeyOrValue("key" if settings.class_name.endswith("$Key") else "value")
        self.field = settings.string("field", "") or ""
        self.target = settings.choice("target.type", TARGETS)
        pattern = settings.string("format", "") or ""
        self.precision = settings.choice("unix.precision", PRECISIONS, "milliseconds")
        self.with_default = settings.boolean("replace.null.with.default", True)
        if self.target == "string" and not pattern.strip():
            raise settings.error("format", "TimestampConverter requires format option to be specified when using "
                                           "string timestamps")
        self.format: SimpleDateFormat | None = None
        if pattern.strip():
            try:
                self.format = SimpleDateFormat(pattern)
            except ValueError as exc:
                raise settings.error("format", f"TimestampConverter requires a SimpleDateFormat-compatible pattern "
                                               f"for string timestamps: {pattern} ({exc})") from None
        self._schemas = SchemaCache()

    def apply(self, record: Record) -> Record:
        schema = self.part.schema(record)
        value = self.part.value(record)
        if schema is None:
            if value is None:
                return record
            raise TransformDataError("TimestampConverter: lakecdc converts values with schemas only")
        if not self.field:
            return self.part.new(record, self._target_schema(schema.optional), self._convert(value, schema))
        if value is not None and not isinstance(value, dict):
            raise TransformDataError("Only Struct objects supported for [converting timestamp formats], found: "
                                     f"{type(value).__name__}")
        new_schema = self._schemas.get((schema,), lambda: ConnectSchema(
            type="struct", optional=schema.optional, name=schema.name, version=schema.version, doc=schema.doc,
            parameters=schema.parameters,
            fields=tuple(ConnectField(f.name, self._target_schema(f.schema.optional)) if f.name == self.field else f
                         for f in schema.fields)))
        if value is None:
            return self.part.new(record, new_schema, None)
        new_value = {}
        for f in schema.fields:
            current = struct_get(schema, value, f.name, self.with_default)
            new_value[f.name] = self._convert(current, f.schema) if f.name == self.field else current
        return self.part.new(record, new_schema, new_value)

    def _target_schema(self, optional: bool) -> ConnectSchema:
        if self.target == "string":
            return primitive("string", optional)
        if self.target == "unix":
            return primitive("int64", optional)
        type_name = "int64" if self.target == "Timestamp" else "int32"
        name = {"Timestamp": CONNECT_TIMESTAMP, "Date": CONNECT_DATE, "Time": CONNECT_TIME}[self.target]
        return logical(type_name, name, optional)

    def _convert(self, value: Any, schema: ConnectSchema) -> Any:
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, _kind(schema)))

    def _to_millis(self, value: Any, kind: str) -> int:
        if kind == "Timestamp" or kind == "Time":
            return int(value)
        if kind == "Date":
            return int(value) * _DAY_MS
        if kind == "string":
            if not isinstance(value, str):
                raise TransformDataError(f"Expected string timestamp to be a String, but found {type(value).__name__}")
            if self.format is None:
                raise TransformDataError("TimestampConverter needs 'format' to parse string timestamps")
            try:
                return self.format.parse(value)
            except (ValueError, StopIteration):
                raise TransformDataError(f"Could not parse timestamp: value ({value}) does not match pattern "
                                         f"({self.format.pattern})") from None
        unit = {"seconds": (1000, 1), "milliseconds": (1, 1), "microseconds": (1, 1000),
                "nanoseconds": (1, 1_000_000)}[self.precision]
        return _truncate(int(value) * unit[0], unit[1])

    def _from_millis(self, millis: int) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            factor = {"seconds": None, "milliseconds": 1, "microseconds": 1000, "nanoseconds": 1_000_000}[self.precision]
            return _truncate(millis, 1000) if factor is None else millis * factor
        if self.target == "Date":
            return millis // _DAY_MS
        if self.target == "Time":
            return millis % _DAY_MS
        return millis


def _kind(schema: ConnectSchema) -> str:
    """``timestampTypeFromSchema``."""
    names: dict[str | None, str] = {CONNECT_TIMESTAMP: "Timestamp", CONNECT_DATE: "Date", CONNECT_TIME: "Time"}
    if schema.name in names:
        return names[schema.name]
    if schema.type == "string":
        return "string"
    if schema.type == "int64":
        return "unix"
    raise TransformDataError(f"Schema {schema.name or schema.type} does not correspond to a known timestamp type format")

