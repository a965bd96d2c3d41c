"""Tokenizer for the MySQL/MariaDB DDL dialect.

Handles what appears in binlog QUERY events and ``SHOW CREATE TABLE`` output: backtick
identifiers, single and double quoted strings with backslash escapes, ``--``/``#``/``/* */``
comments, executable comments (``/*!50100 PARTITION ...*/`` and MariaDB's ``/*M! ... */``,
whose content is kept as ordinary tokens because the server executed it), hex/bit literals and
charset introducers (``_utf8mb4'x'``).

Every token keeps its character offsets so a statement's original text can be cut out for the
``ddl`` field of schema change events.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    WORD = "word"  # unquoted identifier or keyword
    QUOTED_ID = "quoted_id"  # `name`
    STRING = "string"  # 'text' or "text"
    NUMBER = "number"
    HEX = "hex"  # 0xAB, x'AB'
    BITS = "bits"  # b'0101', 0b0101
    SYMBOL = "symbol"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # identifier/string content without quotes; keywords keep their case
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind is Kind.WORD else ""

    def is_word(self, *words: str) -> bool:
        return self.kind is Kind.WORD and self.text.upper() in words

    def is_symbol(self, symbol: str) -> bool:
        return self.kind is Kind.SYMBOL and self.text == symbol


class LexError(ValueError):
    """The text cannot be tokenized (unterminated string or comment)."""


_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_TWO_CHAR_SYMBOLS = {"<=", ">=", "<>", "!=", ":=", "||", "&&", "<<", ">>", "->"}
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def tokenize(sql: str) -> list[Token]:
    """Split ``sql`` into tokens; comments and whitespace are dropped."""
    tokens: list[Token] = []
    i, n = 0, len(sql)
    open_executable_comments = 0
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
            continue
        if c == "#" or (c == "-" and sql.startswith("--", i) and (i + 2 >= n or sql[i + 2].isspace())):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c == "/" and sql.startswith("/*", i):
            if sql.startswith("/*!", i) or sql.startswith("/*M!", i):
                # executable comment: keep its content, skip the version number
                i += 3 if sql[i + 2] == "!" else 4
                while i < n and sql[i].isdigit():
                    i += 1
                open_executable_comments += 1
                continue
            end = sql.find("*/", i + 2)
            if end < 0:
                raise LexError(f"unterminated comment at offset {i}")
            i = end + 2
            continue
        if c == "*" and open_executable_comments and sql.startswith("*/", i):
            open_executable_comments -= 1
            i += 2
            continue
        if c == "`":
            j = i + 1
            parts: list[str] = []
            while True:
                k = sql.find("`", j)
                if k < 0:
                    raise LexError(f"unterminated quoted identifier at offset {i}")
                parts.append(sql[j:k])
                if k + 1 < n and sql[k + 1] == "`":  # doubled backtick = literal backtick
                    parts.append("`")
                    j = k + 2
                    continue
                break
            tokens.append(Token(Kind.QUOTED_ID, "".join(parts), i, k + 1))
            i = k + 1
            continue
        if c in "'\"":
            text, end = _read_string(sql, i)
            tokens.append(Token(Kind.STRING, text, i, end))
            i = end
            continue
        if c in "xXbB" and i + 1 < n and sql[i + 1] == "'":
            end = sql.find("'", i + 2)
            if end < 0:
                raise LexError(f"unterminated literal at offset {i}")
            kind = Kind.HEX if c in "xX" else Kind.BITS
            tokens.append(Token(kind, sql[i + 2 : end], i, end + 1))
            i = end + 1
            continue
        if c == "0" and i + 1 < n and sql[i + 1] in "xb" and i + 2 < n and sql[i + 2].isalnum():
            j = i + 2
            while j < n and sql[j] in _WORD_CHARS:
                j += 1
            kind = Kind.HEX if sql[i + 1] == "x" else Kind.BITS
            tokens.append(Token(kind, sql[i + 2 : j], i, j))
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit() and not _after_identifier(tokens, i)):
            j = i
            while j < n and (sql[j].isdigit() or sql[j] == "."):
                j += 1
            if j < n and sql[j] in "eE" and j + 1 < n and (sql[j + 1].isdigit() or sql[j + 1] in "+-"):
                j += 2
                while j < n and sql[j].isdigit():
                    j += 1
            if j < n and sql[j] in _WORD_CHARS:  # identifiers may start with digits: 1abc
                while j < n and sql[j] in _WORD_CHARS:
                    j += 1
                tokens.append(Token(Kind.WORD, sql[i:j], i, j))
            else:
                tokens.append(Token(Kind.NUMBER, sql[i:j], i, j))
            i = j
            continue
        if c in _WORD_CHARS or ord(c) > 127:
            j = i
            while j < n and (sql[j] in _WORD_CHARS or ord(sql[j]) > 127):
                j += 1
            word = sql[i:j]
            if word.startswith("_") and j < n and sql[j] in "'\"" and len(word) > 1:
                # charset introducer: _utf8mb4'text' is the string 'text'
                text, end = _read_string(sql, j)
                tokens.append(Token(Kind.STRING, text, i, end))
                i = end
                continue
            tokens.append(Token(Kind.WORD, word, i, j))
            i = j
            continue
        two = sql[i : i + 2]
        if two in _TWO_CHAR_SYMBOLS:
            tokens.append(Token(Kind.SYMBOL, two, i, i + 2))
            i += 2
            continue
        tokens.append(Token(Kind.SYMBOL, c, i, i + 1))
        i += 1
    return tokens


def _after_identifier(tokens: list[Token], offset: int) -> bool:
    """True when a '.' at ``offset`` qualifies a name (db.1tbl) rather than starting a number."""
    return bool(tokens) and tokens[-1].end == offset and tokens[-1].kind in (Kind.WORD, Kind.QUOTED_ID)


def _read_string(sql: str, start: int) -> tuple[str, int]:
    quote = sql[start]
    out: list[str] = []
    i, n = start + 1, len(sql)
    while i < n:
        c = sql[i]
        if c == "\\" and i + 1 < n:
            nxt = sql[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if c == quote:
            if i + 1 < n and sql[i + 1] == quote:  # doubled quote
                out.append(quote)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise LexError(f"unterminated string starting at offset {start}")
