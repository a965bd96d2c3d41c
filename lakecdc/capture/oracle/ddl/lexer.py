"""Tokenizer for Oracle DDL as LogMiner's SQL_REDO of a DDL row holds it (the statement as issued).

Unquoted identifiers are folded to upper case (Oracle's rule); ``"Quoted"`` identifiers keep their
case; ``'strings'`` use ``''`` for a quote; ``q'[...]'`` alternative quoting; ``--`` and ``/* */``
comments are dropped. Tokens are the MySQL DDL parser's (``Kind``/``Token``), so its ``Cursor``
serves both grammars.
"""

from __future__ import annotations

from lakecdc.capture.mysql.ddl.lexer import Kind, LexError, Token

__all__ = ["Kind", "LexError", "Token", "tokenize"]

_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_WORD_CHARS = _WORD_START | frozenset("0123456789_$#")
_Q_CLOSERS = {"[": "]", "{": "}", "(": ")", "<": ">"}
_TWO_CHAR_SYMBOLS = {"<=", ">=", "<>", "!=", "||", ":="}


def tokenize(sql: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                raise LexError("unterminated comment")
            i = end + 2
        elif c in "qQnN" and i + 2 < n and sql[i + 1] in "qQ'" and (sql[i + 1] == "'" or sql[i + 2] == "'"):
            i = _string(sql, i, tokens)
        elif c == "'":
            i = _string(sql, i, tokens)
        elif c == '"':
            end = sql.find('"', i + 1)
            if end < 0:
                raise LexError("unterminated quoted identifier")
            tokens.append(Token(Kind.QUOTED_ID, sql[i + 1:end], i, end + 1))
            i = end + 1
        elif c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit()):
            j = i
            while j < n and (sql[j].isdigit() or sql[j] == "."):
                j += 1
            if j < n and sql[j] in "eE" and j + 1 < n and (sql[j + 1].isdigit() or sql[j + 1] in "+-"):
                j += 2
                while j < n and sql[j].isdigit():
                    j += 1
            tokens.append(Token(Kind.NUMBER, sql[i:j], i, j))
            i = j
        elif c in _WORD_START:
            j = i + 1
            while j < n and sql[j] in _WORD_CHARS:
                j += 1
            tokens.append(Token(Kind.WORD, sql[i:j].upper(), i, j))
            i = j
        else:
            two = sql[i:i + 2]
            width = 2 if two in _TWO_CHAR_SYMBOLS else 1
            tokens.append(Token(Kind.SYMBOL, sql[i:i + width], i, i + width))
            i += width
    return tokens


def _string(sql: str, i: int, tokens: list[Token]) -> int:
    """A string literal at ``i`` (N'..', q'[..]', '..'); returns the index after it."""
    start = i
    if sql[i] in "nN" and sql[i + 1] != "'":
        i += 1  # nq'...'
    if sql[i] in "nN":
        i += 1
    if sql[i] in "qQ":
        opener = sql[i + 2]
        closer = _Q_CLOSERS.get(opener, opener) + "'"
        end = sql.find(closer, i + 3)
        if end < 0:
            raise LexError("unterminated q'' string")
        tokens.append(Token(Kind.STRING, sql[i + 3:end], start, end + 2))
        return end + 2
    i += 1
    parts = []
    while True:
        end = sql.find("'", i)
        if end < 0:
            raise LexError("unterminated string")
        parts.append(sql[i:end])
        if sql.startswith("''", end):
            parts.append("'")
            i = end + 2
            continue
        tokens.append(Token(Kind.STRING, "".join(parts), start, end + 1))
        return end + 1
