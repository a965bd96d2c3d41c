"""Character set, collation and comment clauses of databases, tables and columns.

The same ``CHARACTER SET x`` / ``CHARSET x`` / ``COLLATE x`` words appear in CREATE/ALTER DATABASE,
table options, ALTER TABLE specifications, data types and column attributes; table and database
options also allow ``DEFAULT`` before them and ``=`` after them:

    ... ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_bin COMMENT='x'
      -> TableOptions(charset="latin1", collation="latin1_bin", comment="x")

Debezium derives a column's character set from its collation when only the collation is given
(``utf8mb4_bin`` -> ``utf8mb4``), which ``charset_of_collation`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakecdc.capture.mysql.ddl.cursor import Cursor

# words that end the table options of CREATE TABLE: partitioning and CREATE ... SELECT follow them
_AFTER_TABLE_OPTIONS = ("PARTITION", "AS", "SELECT", "IGNORE", "REPLACE", "WITH")


def charset_of_collation(collation: str) -> str:
    return collation.split("_", 1)[0]


@dataclass
class Charset:
    """The ``CHARACTER SET`` and ``COLLATE`` given for a database, table, data type or column."""

    charset: str | None = None
    collation: str | None = None

    @property
    def resolved_charset(self) -> str | None:
        """The character set given, else the one the collation implies."""
        if self.charset is None and self.collation is not None:
            return charset_of_collation(self.collation)
        return self.charset

    def read(self, cur: Cursor, *, equals: bool) -> bool:
        """Read ``CHARACTER SET name``, ``CHARSET name`` or ``COLLATE name`` at the cursor; False
        (nothing consumed) when the cursor is elsewhere. ``equals``: an optional ``=`` may follow
        the keyword (table and database options, not data types and columns)."""
        if cur.accept_word("CHARACTER"):
            cur.expect_word("SET")
            field = "charset"
        elif cur.accept_word("CHARSET"):
            field = "charset"
        elif cur.accept_word("COLLATE"):
            field = "collation"
        else:
            return False
        if equals:
            cur.accept_symbol("=")
        setattr(self, field, cur.identifier())
        return True


@dataclass
class TableOptions(Charset):
    comment: str | None = None

    def read_charset(self, cur: Cursor) -> bool:
        """Read ``[DEFAULT] CHARACTER SET|CHARSET|COLLATE [=] name``; False when the option at the
        cursor is another one (a leading DEFAULT is consumed either way)."""
        cur.accept_word("DEFAULT")
        return self.read(cur, equals=True)

    def read_one(self, cur: Cursor) -> bool:
        """``read_charset``, or ``COMMENT [=] 'text'``; False for any other option (ENGINE=..., ...)."""
        if self.read_charset(cur):
            return True
        if cur.accept_word("COMMENT"):
            cur.accept_symbol("=")
            self.comment = cur.next().text
            return True
        return False


def table_options(cur: Cursor) -> TableOptions:
    """Read the options after a CREATE TABLE body, up to partitioning or a SELECT."""
    options = TableOptions()
    while not cur.at_end():
        if cur.peek().is_word(*_AFTER_TABLE_OPTIONS):
            break
        if not options.read_one(cur):
            if cur.peek_symbol("("):
                cur.skip_parenthesized()  # UNION=(t1, t2), ...
            else:
                cur.next()
        cur.accept_symbol(",")
    return options


def database_options(cur: Cursor) -> str | None:
    """Read CREATE/ALTER DATABASE options; returns the character set when given."""
    options = TableOptions()
    while not cur.at_end():
        if not options.read_charset(cur):
            cur.next()
    return options.resolved_charset
