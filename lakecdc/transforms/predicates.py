"""Kafka Connect's predicates (``predicates=<alias>``, ``predicates.<alias>.type=...``): they choose
which records a transform applies to (``transforms.<t>.predicate=<alias>``, ``...negate=true``).

- ``TopicNameMatches`` (``pattern``): the whole topic matches the Java regex;
- ``HasHeaderKey`` (``name``): the record has at least one header with that key;
- ``RecordIsTombstone``: the record's value is null.
"""

from __future__ import annotations

import re
from typing import Protocol

from lakecdc.transforms.base import Record, Settings
from lakecdc.transforms.headers import has_header
from lakecdc.transforms.java_regex import compile_java

_PACKAGE = "org.apache.kafka.connect.transforms.predicates."


class Predicate(Protocol):
    def test(self, record: Record) -> bool: ...


class TopicNameMatches:
    def __init__(self, settings: Settings) -> None:
        pattern = settings.required("pattern")
        try:
            self.pattern = compile_java(pattern)
        except re.error as exc:
            raise settings.error("pattern", f"invalid regular expression {pattern!r}: {exc}") from None

    def test(self, record: Record) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey:
    def __init__(self, settings: Settings) -> None:
        self.name = settings.required("name")

    def test(self, record: Record) -> bool:
        return has_header(record.headers, self.name)


class RecordIsTombstone:
    def __init__(self, settings: Settings) -> None:
        pass

    def test(self, record: Record) -> bool:
        return record.value is None


PREDICATES: dict[str, type[TopicNameMatches] | type[HasHeaderKey] | type[RecordIsTombstone]] = {
    _PACKAGE + "TopicNameMatches": TopicNameMatches,
    _PACKAGE + "HasHeaderKey": HasHeaderKey,
    _PACKAGE + "RecordIsTombstone": RecordIsTombstone,
}
