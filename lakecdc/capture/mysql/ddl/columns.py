"""Column definitions: ``name data_type attributes`` in CREATE TABLE and ALTER TABLE.

    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY
      -> (ColumnDef(id, INT, optional=False, auto_increment=True), is_primary_key=True, is_unique=False)

The attributes that matter for change events are kept (nullability, default, auto-increment,
generated, character set, collation, SRID, comment); the others (storage, visibility, foreign
key references, checks, ...) are read and dropped.
"""

from __future__ import annotations

from dataclasses import replace

from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.mysql.ddl.data_type import data_type
from lakecdc.capture.mysql.ddl.lexer import Kind
from lakecdc.capture.mysql.ddl.model import NO_DEFAULT, ColumnDef, ColumnDefault, DefaultKind
from lakecdc.capture.mysql.ddl.options import Charset

_CURRENT_TIMESTAMP_WORDS = frozenset(
    {"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_DATE", "CURDATE", "SYSDATE"}
)
# column attributes that do not change what Debezium reports
_IGNORED_ATTRIBUTES = (
    "VIRTUAL", "STORED", "PERSISTENT", "INVISIBLE", "VISIBLE", "BINARY", "ASCII", "UNICODE",
    "COMPRESSED", "SIGNED", "UNSIGNED", "ZEROFILL", "WITHOUT", "SYSTEM", "VERSIONING",
    "INSERT", "ONLY",
)
_REFERENCE_ACTION_WORDS = (
    "FULL", "PARTIAL", "SIMPLE", "DELETE", "UPDATE", "RESTRICT", "CASCADE", "SET", "NULL", "NO", "ACTION",
    "DEFAULT",
)
_LITERAL_KINDS = {Kind.STRING: "string", Kind.NUMBER: "number", Kind.BITS: "bits", Kind.HEX: "hex"}


def column_definition(cur: Cursor, name: str | None = None) -> tuple[ColumnDef, bool, bool]:
    """Parse ``name type attributes``; returns (column, is_primary_key, is_unique).

    ``name`` is given when the caller has already read it (ALTER TABLE ... CHANGE old new ...
    reads the old name itself). Stops before ``,``, ``)``, ``FIRST`` and ``AFTER``.
    """
    col_name = name if name is not None else cur.identifier()
    col = data_type(cur, col_name)
    is_pk = is_unique = False
    optional = True
    auto_increment = col.auto_increment
    generated = False
    default = NO_DEFAULT
    names = Charset(col.charset, col.collation)
    comment: str | None = None
    srid: int | None = None
    if col.type_name == "SERIAL":
        col = ColumnDef(col_name, "BIGINT", "BIGINT UNSIGNED", unsigned=True)
        optional, auto_increment, is_unique = False, True, True
    while not cur.at_end() and not cur.peek_symbol(",") and not cur.peek_symbol(")"):
        if cur.accept_word("NOT"):
            cur.expect_word("NULL")
            optional = False
        elif cur.accept_word("NULL"):
            optional = True
        elif cur.accept_word("DEFAULT"):
            default = default_value(cur)
        elif cur.accept_word("AUTO_INCREMENT"):
            auto_increment = True
        elif cur.accept_word("PRIMARY"):
            cur.expect_word("KEY")
            is_pk = True
        elif cur.accept_word("KEY"):
            is_pk = True  # "KEY" alone in a column definition means PRIMARY KEY
        elif cur.accept_word("UNIQUE"):
            cur.accept_word("KEY")
            is_unique = True
        elif cur.accept_word("COMMENT"):
            comment = cur.next().text
        elif names.read(cur, equals=False):
            pass
        elif cur.accept_word("GENERATED"):
            cur.expect_word("ALWAYS")
        elif cur.accept_word("AS"):
            if cur.accept_word("ROW"):  # MariaDB system-versioning: AS ROW START/END
                cur.next()
            else:
                cur.skip_parenthesized()
            generated = True
        elif cur.accept_word("ON"):
            cur.expect_word("UPDATE")
            cur.next()
            if cur.peek_symbol("("):
                cur.skip_parenthesized()
            auto_increment = True  # Debezium reports ON UPDATE CURRENT_TIMESTAMP columns as auto-incremented
        elif cur.accept_word("SRID"):
            srid = int(cur.next().text)
        elif cur.accept_word("CHECK"):
            cur.skip_parenthesized()
        elif cur.accept_word("CONSTRAINT"):
            if not cur.peek().is_word("CHECK"):
                cur.identifier()
        elif cur.accept_word("REFERENCES"):
            _skip_reference(cur)
        elif cur.accept_word("COLUMN_FORMAT", "STORAGE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
            cur.accept_symbol("=")
            cur.next()
        elif cur.peek().is_word("FIRST", "AFTER"):
            break
        elif cur.accept_word(*_IGNORED_ATTRIBUTES):
            pass
        elif cur.peek_symbol("="):  # COMPRESSED=zlib
            cur.next()
            cur.next()
        else:
            raise cur.error(f"unexpected '{cur.peek().text}' in the definition of column '{col_name}'")
    if is_pk:
        optional = False
    # MySQL implicitly makes TIMESTAMP NOT NULL only with explicit_defaults_for_timestamp=OFF;
    # the binlog carries the server's DDL text, and SHOW CREATE TABLE spells it out.
    col = replace(
        col,
        name=col_name,
        charset=names.charset,
        collation=names.collation,
        optional=optional,
        auto_increment=auto_increment,
        generated=generated,
        default=default,
        srid=srid,
        comment=comment,
    )
    return col, is_pk, is_unique


def default_value(cur: Cursor) -> ColumnDefault:
    """The value after ``DEFAULT`` (also ``ALTER COLUMN c SET DEFAULT ...``)."""
    tok = cur.peek()
    if tok.is_word("NULL"):
        cur.next()
        return ColumnDefault(DefaultKind.NULL)
    if tok.upper in _CURRENT_TIMESTAMP_WORDS:
        cur.next()
        if cur.peek_symbol("("):
            cur.skip_parenthesized()
        return ColumnDefault(DefaultKind.CURRENT_TIMESTAMP, tok.upper)
    if tok.is_word("TRUE", "FALSE"):
        cur.next()
        return ColumnDefault(DefaultKind.LITERAL, tok.upper, "bool")
    literal_kind = _LITERAL_KINDS.get(tok.kind)
    if literal_kind is not None:
        cur.next()
        return ColumnDefault(DefaultKind.LITERAL, tok.text, literal_kind)
    if tok.is_symbol("-") or tok.is_symbol("+"):
        cur.next()
        num = cur.next()
        sign = "-" if tok.text == "-" else ""
        return ColumnDefault(DefaultKind.LITERAL, sign + num.text, "number")
    if tok.is_symbol("("):
        inner = cur.skip_parenthesized().strip()
        # MariaDB's SHOW CREATE TABLE wraps expression defaults in parentheses
        return ColumnDefault(DefaultKind.EXPRESSION, inner)
    if tok.kind is Kind.WORD:
        cur.next()
        if cur.peek_symbol("("):
            cur.skip_parenthesized()
        return ColumnDefault(DefaultKind.EXPRESSION, tok.text)
    raise cur.error(f"cannot read the DEFAULT value '{tok.text}'")


def _skip_reference(cur: Cursor) -> None:
    """``REFERENCES t [(cols)] [MATCH ...] [ON DELETE|UPDATE action]`` after a column: no effect here."""
    cur.identifier()
    if cur.accept_symbol("."):
        cur.identifier()
    if cur.peek_symbol("("):
        cur.skip_parenthesized()
    while cur.peek().is_word("MATCH", "ON"):
        cur.next()
        while cur.peek().is_word(*_REFERENCE_ACTION_WORDS):
            cur.next()
