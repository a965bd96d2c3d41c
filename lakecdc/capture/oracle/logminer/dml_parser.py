"""Parser for the ``SQL_REDO`` text LogMiner writes for INSERT, UPDATE and DELETE.

The statements, as Oracle renders them (numbers are quoted; temporal values are function calls in
the session's NLS formats; binary values ``HEXTORAW``; national strings ``UNISTR``)::

    insert into "DEBEZIUM"."CUSTOMERS"("ID","FIRST_NAME","EMAIL") values ('1004','Anne',NULL);
    update "DEBEZIUM"."CUSTOMERS" set "EMAIL" = 'anne@example.com' where "ID" = '1004' and
        "FIRST_NAME" = 'O''Brien' and "EMAIL" IS NULL and ROWID = 'AAAR1cAAHAAAACFAAA';
    delete from "DEBEZIUM"."CUSTOMERS" where "ID" = '1004' and "DOB" = TO_DATE('2020-01-02 00:00:00',
        'YYYY-MM-DD HH24:MI:SS');

Values come back as ``str`` (the literal, ``''`` unescaped), ``None`` (``NULL`` / ``IS NULL``) or a
:class:`RedoCall` (function name, arguments, and the original text, which is what Debezium's own
parser returns for calls). The type converters turn them into Connect values. For an update the
``old`` values come from the WHERE clause (supplemental logging puts every column there) and the
``new`` values are the old ones overlaid with the SET clause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from lakecdc.capture.oracle.errors import DmlParseError


@dataclass(frozen=True)
class RedoCall:
    """A function call in SQL_REDO, e.g. ``TO_DATE('2020-01-02 00:00:00', 'YYYY-MM-DD HH24:MI:SS')``."""

    name: str
    args: tuple[Any, ...]
    text: str

    def __str__(self) -> str:
        return self.text


RedoValue = Union[str, None, RedoCall]


@dataclass
class ParsedDml:
    op: str  # "c", "u" or "d"
    schema: str
    table: str
    #: column -> value before the change (update, delete), in the order the redo lists them
    old: dict[str, RedoValue] = field(default_factory=dict)
    #: column -> value after the change (insert, update)
    new: dict[str, RedoValue] = field(default_factory=dict)


class _Scanner:
    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> DmlParseError:
        shown = self.text if len(self.text) <= 300 else self.text[:300] + "..."
        return DmlParseError(f"cannot parse SQL_REDO at offset {self.pos} ({what}): {shown}")

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos

    def peek_word(self, word: str) -> bool:
        self.ws()
        end = self.pos + len(word)
        if self.text[self.pos:end].lower() != word.lower():
            return False
        return end >= len(self.text) or not (self.text[end].isalnum() or self.text[end] in "_$#")

    def word(self, word: str) -> None:
        if not self.peek_word(word):
            raise self.fail(f"expected {word!r}")
        self.pos += len(word)

    def char(self, ch: str) -> None:
        self.ws()
        if self.text[self.pos:self.pos + 1] != ch:
            raise self.fail(f"expected {ch!r}")
        self.pos += 1

    def peek_char(self, ch: str) -> bool:
        self.ws()
        return self.text[self.pos:self.pos + 1] == ch

    def identifier(self) -> str:
        """A quoted ("...") or bare identifier; Oracle quotes every name it writes in SQL_REDO."""
        self.ws()
        text = self.text
        if text[self.pos:self.pos + 1] == '"':
            end = text.find('"', self.pos + 1)
            if end < 0:
                raise self.fail("unterminated quoted identifier")
            name = text[self.pos + 1:end]
            self.pos = end + 1
            return name
        return self.token("_$#", "an identifier")

    def token(self, extra: str, what: str) -> str:
        """A run of letters, digits and ``extra`` characters at the current position."""
        text, start = self.text, self.pos
        while self.pos < len(text) and (text[self.pos].isalnum() or text[self.pos] in extra):
            self.pos += 1
        if start == self.pos:
            raise self.fail(f"expected {what}")
        return text[start:self.pos]

    def string(self) -> str:
        text = self.text
        pos = self.pos + 1  # after the opening quote
        parts: list[str] = []
        while True:
            end = text.find("'", pos)
            if end < 0:
                raise self.fail("unterminated string literal")
            parts.append(text[pos:end])
            if text[end + 1:end + 2] == "'":  # '' is one quote
                parts.append("'")
                pos = end + 2
                continue
            self.pos = end + 1
            return "".join(parts)

    def value(self) -> RedoValue:
        self.ws()
        text = self.text
        ch = text[self.pos:self.pos + 1]
        if ch == "'":
            return self.string()
        if self.peek_word("NULL"):
            self.pos += 4
            return None
        start = self.pos
        token = self.token("_.+-$#", "a value")
        if self.peek_char("("):
            self.pos += 1
            args: list[Any] = []
            if not self.peek_char(")"):
                args.append(self.value())
                while self.peek_char(","):
                    self.pos += 1
                    args.append(self.value())
            self.char(")")
            return RedoCall(token.upper(), tuple(args), text[start:self.pos])
        return token  # an unquoted number


def _table(scanner: _Scanner) -> tuple[str, str]:
    first = scanner.identifier()
    if scanner.peek_char("."):
        scanner.pos += 1
        return first, scanner.identifier()
    raise scanner.fail("expected a schema-qualified table name")


def _conditions(scanner: _Scanner, into: dict[str, RedoValue]) -> None:
    """``"C" = v and "D" IS NULL and ROWID = '...'`` up to the end of the statement."""
    while True:
        scanner.ws()
        if scanner.peek_char("("):
            raise scanner.fail("parenthesised conditions are not written by LogMiner")
        quoted = scanner.peek_char('"')
        column = scanner.identifier()
        if scanner.peek_word("IS"):
            scanner.word("IS")
            scanner.word("NULL")
            value: RedoValue = None
        else:
            scanner.char("=")
            value = scanner.value()
        if quoted or column.upper() != "ROWID":  # the pseudo-column LogMiner adds is not data
            into[column] = value
        if not scanner.peek_word("and"):
            return
        scanner.word("and")


def _end(scanner: _Scanner) -> None:
    scanner.ws()
    if scanner.peek_char(";"):
        scanner.pos += 1
    scanner.ws()
    if scanner.pos != len(scanner.text):
        raise scanner.fail("unexpected text after the statement")


def parse_dml(sql: str) -> ParsedDml:
    """Parse one SQL_REDO INSERT / UPDATE / DELETE; raises :class:`DmlParseError` otherwise."""
    s = _Scanner(sql)
    if s.peek_word("insert"):
        s.word("insert")
        s.word("into")
        schema, table = _table(s)
        s.char("(")
        columns = [s.identifier()]
        while s.peek_char(","):
            s.pos += 1
            columns.append(s.identifier())
        s.char(")")
        s.word("values")
        s.char("(")
        values = [s.value()]
        while s.peek_char(","):
            s.pos += 1
            values.append(s.value())
        s.char(")")
        _end(s)
        if len(columns) != len(values):
            raise s.fail(f"{len(columns)} columns but {len(values)} values")
        return ParsedDml("c", schema, table, new=dict(zip(columns, values)))
    if s.peek_word("update"):
        s.word("update")
        schema, table = _table(s)
        s.word("set")
        changed: dict[str, RedoValue] = {}
        while True:
            column = s.identifier()
            s.char("=")
            changed[column] = s.value()
            if not s.peek_char(","):
                break
            s.pos += 1
        old: dict[str, RedoValue] = {}
        if s.peek_word("where"):
            s.word("where")
            _conditions(s, old)
        _end(s)
        return ParsedDml("u", schema, table, old=old, new={**old, **changed})
    if s.peek_word("delete"):
        s.word("delete")
        s.word("from")
        schema, table = _table(s)
        old = {}
        if s.peek_word("where"):
            s.word("where")
            _conditions(s, old)
        _end(s)
        return ParsedDml("d", schema, table, old=old)
    raise s.fail("not an INSERT, UPDATE or DELETE")
