"""``java.util.regex`` patterns and ``Matcher.replaceFirst`` replacements, on Python's ``re``.

Kafka Connect's ``RegexRouter`` and Debezium's routers test ``matcher.matches()`` (the whole topic)
and then call ``replaceFirst(replacement)``, which replaces the *first* match ``find()`` sees --
Python's ``re.sub(count=1)`` finds the same leftmost match. The replacement is Java's syntax, not
Python's: ``$1`` / ``${name}`` are groups, ``\\x`` is a literal ``x``; after ``$`` Java reads the
longest run of digits that is still a group number (``$10`` is group 1 then ``0`` when there are
fewer than ten groups). Named groups are written ``(?<name>...)`` in Java.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def compile_java(pattern: str) -> re.Pattern[str]:
    """The Python pattern for a Java one (named groups translated); ``re.error`` when invalid."""
    return re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern))


Piece = str | int  # literal text, or a group number / name to insert
Expander = Callable[[re.Match[str]], str]


def java_replacement(replacement: str, pattern: re.Pattern[str]) -> Expander:
    """A function giving ``replacement`` expanded for one match; ValueError as Java would throw it
    (``Illegal group reference``, ``No group 3``, ``No group with name {x}``)."""
    pieces: list[Piece | tuple[str]] = []
    text: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        ch = replacement[i]
        if ch == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing")
            text.append(replacement[i + 1])
            i += 2
            continue
        if ch != "$":
            text.append(ch)
            i += 1
            continue
        i += 1
        if i >= n:
            raise ValueError("Illegal group reference: group index is missing")
        if replacement[i] == "{":
            end = replacement.find("}", i)
            if end < 0:
                raise ValueError("named capturing group is missing trailing '}'")
            name = replacement[i + 1:end]
            if name not in pattern.groupindex:
                raise ValueError(f"No group with name {{{name}}}")
            pieces.append("".join(text))
            text = []
            pieces.append((name,))
            i = end + 1
            continue
        if not replacement[i].isdigit() or not replacement[i].isascii():
            raise ValueError("Illegal group reference")
        number = int(replacement[i])
        if number > pattern.groups:
            raise ValueError(f"No group {number}")
        i += 1
        while i < n and replacement[i].isascii() and replacement[i].isdigit():
            longer = number * 10 + int(replacement[i])
            if longer > pattern.groups:
                break
            number = longer
            i += 1
        pieces.append("".join(text))
        text = []
        pieces.append(number)
    pieces.append("".join(text))

    def expand(match: re.Match[str]) -> str:
        out = []
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)
            else:
                group = match.group(piece[0] if isinstance(piece, tuple) else piece)
                out.append(group or "")
        return "".join(out)
    return expand


class JavaRouter:
    """``if matcher.matches(): matcher.replaceFirst(replacement)`` on a topic; None when no match."""

    def __init__(self, pattern: str, replacement: str) -> None:
        self.pattern = compile_java(pattern)
        self.expand = java_replacement(replacement, self.pattern)

    def route(self, topic: str) -> str | None:
        if self.pattern.fullmatch(topic) is None:
            return None
        return self.pattern.sub(self.expand, topic, count=1)
