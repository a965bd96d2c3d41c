"""A token cursor with the small vocabulary the DDL grammar needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from lakecdc.capture.mysql.ddl.lexer import Kind, Token
from lakecdc.errors import TerminalError

_END = Token(Kind.SYMBOL, "", -1, -1)
T = TypeVar("T")


class DdlParseError(TerminalError):
    """A DDL statement could not be understood.

    ``statement`` is the text at fault; the streaming source adds ``position`` (binlog file/pos)
    before reporting it.
    """

    def __init__(self, reason: str, statement: str, position: str | None = None) -> None:
        self.reason = reason
        self.statement = statement
        self.position = position
        where = f" at binlog position {position}" if position else ""
        super().__init__(f"cannot parse DDL{where}: {reason}; statement: {statement}")

    def at(self, position: str) -> DdlParseError:
        return DdlParseError(self.reason, self.statement, position)


class AlterOfUnknownTableError(DdlParseError):
    """``ALTER TABLE`` of a table whose structure is not known (``table_id``): an error only for a
    captured table; Debezium's ``AlterTableParserListener`` ignores it for any other."""

    def __init__(self, reason: str, statement: str, table_id: Any, position: str | None = None) -> None:
        super().__init__(reason, statement, position)
        self.table_id = table_id

    def at(self, position: str) -> AlterOfUnknownTableError:
        return AlterOfUnknownTableError(self.reason, self.statement, self.table_id, position)


class Cursor:
    def __init__(self, tokens: list[Token], text_source: str, statement: str) -> None:
        self.tokens = tokens
        self.i = 0
        self.source = text_source
        self.statement = statement

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def peek(self, ahead: int = 0) -> Token:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else _END

    def next(self) -> Token:
        tok = self.peek()
        if tok is _END:
            raise self.error("unexpected end of statement")
        self.i += 1
        return tok

    def peek_symbol(self, symbol: str) -> bool:
        return self.peek().is_symbol(symbol)

    def accept_symbol(self, symbol: str) -> bool:
        if self.peek().is_symbol(symbol):
            self.i += 1
            return True
        return False

    def expect_symbol(self, symbol: str) -> None:
        if not self.accept_symbol(symbol):
            raise self.error(f"expected '{symbol}' but found '{self.peek().text or 'end of statement'}'")

    def accept_word(self, *words: str) -> bool:
        if self.peek().is_word(*words):
            self.i += 1
            return True
        return False

    def expect_word(self, *words: str) -> bool:
        if not self.accept_word(*words):
            raise self.error(f"expected {' or '.join(words)} but found '{self.peek().text or 'end of statement'}'")
        return True

    def accept_if_exists(self) -> bool:
        """``IF EXISTS`` (IF is a reserved word, so it always starts the clause)."""
        return bool(self.accept_word("IF") and self.expect_word("EXISTS"))

    def accept_if_not_exists(self) -> bool:
        return bool(self.accept_word("IF") and self.expect_word("NOT") and self.expect_word("EXISTS"))

    def identifier(self) -> str:
        tok = self.peek()
        if tok.kind in (Kind.WORD, Kind.QUOTED_ID) or (tok.kind is Kind.STRING):
            self.i += 1
            return tok.text
        raise self.error(f"expected a name but found '{tok.text or 'end of statement'}'")

    def parenthesized_list(self, read_item: Callable[[], T]) -> list[T]:
        """Read ``( item, item, ... )``; ``read_item`` reads one item at the cursor."""
        self.expect_symbol("(")
        items = []
        while True:
            items.append(read_item())
            if not self.accept_symbol(","):
                self.expect_symbol(")")
                return items

    def skip_parenthesized(self) -> str:
        """Skip a balanced ( ... ) group starting at the cursor; return its inner source text."""
        self.expect_symbol("(")
        start = self.peek().start
        depth = 1
        end = start
        while depth:
            tok = self.next()
            if tok.is_symbol("("):
                depth += 1
            elif tok.is_symbol(")"):
                depth -= 1
                end = tok.start
        return self.source[start:end] if start >= 0 else ""

    def skip_to_top_level_comma(self) -> None:
        """Skip the rest of an alter specification or table element up to ',' or the end."""
        depth = 0
        while not self.at_end():
            tok = self.peek()
            if tok.is_symbol("("):
                depth += 1
            elif tok.is_symbol(")"):
                if depth == 0:
                    return
                depth -= 1
            elif tok.is_symbol(",") and depth == 0:
                return
            self.i += 1

    def error(self, reason: str) -> DdlParseError:
        return DdlParseError(reason, self.statement)
