"""The data type of a column definition: name, length/precision, ENUM/SET values, attributes.

    VARCHAR(20) CHARACTER SET latin1   -> type_name VARCHAR, length 20, charset latin1
    DOUBLE PRECISION UNSIGNED          -> type_name DOUBLE, type_expression "DOUBLE PRECISION UNSIGNED"
    NATIONAL CHAR VARYING(5)           -> type_name VARCHAR, charset utf8

``type_name`` is canonical (it selects the value mapping); ``type_expression`` keeps the name as
written, as Debezium's ``typeName``/``typeExpression`` do (INTEGER, BOOL, DOUBLE PRECISION, ...).
"""

from __future__ import annotations

from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.mysql.ddl.datatypes import DEFAULT_LENGTHS, KNOWN_TYPES, TYPE_ALIASES
from lakecdc.capture.mysql.ddl.lexer import Kind
from lakecdc.capture.mysql.ddl.model import ColumnDef
from lakecdc.capture.mysql.ddl.options import Charset


def data_type(cur: Cursor, col_name: str) -> ColumnDef:
    """Read a data type; the returned column has only the type's fields set."""
    tok = cur.next()
    if tok.kind is not Kind.WORD:
        raise cur.error(f"expected a data type for column '{col_name}' but found '{tok.text}'")
    word, written, implied_charset = _type_words(cur, tok.upper)
    names = Charset(implied_charset)
    word = TYPE_ALIASES.get(word, word)
    if word not in KNOWN_TYPES:
        raise cur.error(f"unknown data type '{tok.text}' for column '{col_name}'")
    length: int | None = None
    scale: int | None = None
    enum_values: tuple[str, ...] = ()
    if cur.peek_symbol("("):
        if word in ("ENUM", "SET"):
            enum_values = tuple(cur.parenthesized_list(lambda: cur.next().text))
        else:
            cur.next()
            length = int(cur.next().text)
            if cur.accept_symbol(","):
                scale = int(cur.next().text)
            cur.expect_symbol(")")
    if word == "FLOAT" and length is not None and (scale is not None or length >= 24):
        word = "DOUBLE"  # FLOAT(p>=24) and FLOAT(M,D) are doubles
    if length is None and word in DEFAULT_LENGTHS:
        length, scale = DEFAULT_LENGTHS[word]
    elif word in ("DECIMAL", "NUMERIC") and scale is None:
        scale = 0
    if word == "ENUM":
        length = 1  # as Debezium's parser reports it
    elif word == "SET":
        length = max(1, 2 * len(enum_values) - 1)
    unsigned = zerofill = char_binary = False
    while True:
        if cur.accept_word("UNSIGNED"):
            unsigned = True
        elif cur.accept_word("SIGNED"):
            pass
        elif cur.accept_word("ZEROFILL"):
            zerofill = unsigned = True
        elif cur.accept_word("BINARY"):
            char_binary = True  # CHAR(n) BINARY: a binary collation, still a character string
        elif cur.accept_word("ASCII"):
            names.charset = "latin1"
        elif cur.accept_word("UNICODE"):
            names.charset = "ucs2"
        elif cur.peek().is_word("CHARACTER") and not cur.peek(1).is_word("SET"):
            break  # not a charset: the column attributes report it
        elif not names.read(cur, equals=False):
            break
    expression = written
    if char_binary:
        expression += " BINARY"
    if unsigned:
        expression += " UNSIGNED"
    if zerofill:
        expression += " ZEROFILL"
    return ColumnDef(
        name=col_name,
        type_name=word,
        type_expression=expression,
        length=length,
        scale=scale,
        unsigned=unsigned,
        zerofill=zerofill,
        enum_values=enum_values,
        charset=names.charset,
        collation=names.collation,
    )


def _type_words(cur: Cursor, word: str) -> tuple[str, str, str | None]:
    """Resolve multi-word type names: returns (type word, name as written, implied charset)."""
    written = word
    charset: str | None = None
    if word == "NATIONAL":
        second = cur.next().upper
        if second in ("CHAR", "CHARACTER") and cur.accept_word("VARYING"):
            second = "VARCHAR"
        written = f"NATIONAL {second}"
        word = "VARCHAR" if second == "VARCHAR" else "CHAR"
        charset = "utf8"
    elif word in ("NCHAR", "NVARCHAR"):
        charset = "utf8"
        if word == "NCHAR" and cur.accept_word("VARYING"):
            word = written = "NVARCHAR"
    if word in ("CHAR", "CHARACTER") and cur.accept_word("VARYING"):
        word = "VARCHAR"
        written = f"{written} VARYING"
    elif word == "DOUBLE":
        if cur.accept_word("PRECISION"):
            written = "DOUBLE PRECISION"
    elif word == "LONG":
        if cur.accept_word("VARBINARY"):
            word, written = "MEDIUMBLOB", "LONG VARBINARY"
        else:
            second = "VARCHAR" if cur.accept_word("VARCHAR", "CHARACTER") else ""
            word, written = "MEDIUMTEXT", f"LONG {second}".strip()
    return word, written, charset
