"""Oracle column definitions: name, data type, and the column clauses (NOT NULL, DEFAULT,
PRIMARY KEY, UNIQUE, identity, virtual) of CREATE TABLE and ALTER TABLE ADD / MODIFY."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.ddl.datatypes import column_info
from lakecdc.capture.oracle.ddl.lexer import Kind
from lakecdc.capture.oracle.ddl.model import OracleTable

#: words that end a DEFAULT expression or a data type: the column constraints that may follow
CONSTRAINT_WORDS = frozenset({
    "NOT", "NULL", "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "REFERENCES", "ENABLE", "DISABLE",
    "VISIBLE", "INVISIBLE", "ENCRYPT", "DECRYPT", "GENERATED", "COLLATE", "SORT", "DEFAULT", "USING",
    "VALIDATE", "NOVALIDATE", "RELY", "NORELY", "DEFERRABLE", "INITIALLY", "AS", "VIRTUAL", "ANNOTATIONS",
})


@dataclass
class ColumnClauses:
    """What a column definition says beyond the column itself."""

    primary_key: bool = False
    unique: bool = False
    virtual: bool = False  # [GENERATED ALWAYS] AS (expr): not in the redo, Debezium leaves it out
    constraint_name: str | None = None

    def keys(self, table: OracleTable, name: str) -> OracleTable:
        """``table`` with this column's inline PRIMARY KEY / first UNIQUE applied."""
        if self.primary_key:
            return replace(table, primary_key=(name,), primary_key_name=self.constraint_name)
        if self.unique and not table.unique_key:
            return replace(table, unique_key=(name,))
        return table


def read_table_name(cur: Cursor, default_owner: str = "") -> tuple[str, str]:
    """``[IF [NOT] EXISTS] [owner.]name``."""
    if cur.peek().is_word("IF"):
        cur.next()
        cur.accept_word("NOT")
        cur.expect_word("EXISTS")
    first = cur.identifier()
    if cur.accept_symbol("."):
        return first, cur.identifier()
    return default_owner, first


def read_column(cur: Cursor, position: int, existing: ColumnInfo | None = None) -> tuple[ColumnInfo, ColumnClauses]:
    """A column definition (or, with ``existing``, a MODIFY of it: type and clauses optional)."""
    name = existing.name if existing is not None else cur.identifier()
    col = existing
    typ = read_data_type(cur, name, position)
    if typ is not None:
        if existing is not None:
            typ = replace(typ, nullable=existing.nullable, default=existing.default)
        col = typ
    if col is None and cur.peek().is_word("AS", "GENERATED"):
        col = ColumnInfo(name, "VIRTUAL", None, None, None, True, None, position)  # typed by its expression
    if col is None:
        raise cur.error(f"column {name} has no data type")
    clauses = ColumnClauses()
    nullable, default = col.nullable, col.default
    while not cur.at_end() and not cur.peek_symbol(",") and not cur.peek_symbol(")"):
        tok = cur.next()
        if tok.is_symbol("("):
            cur.i -= 1
            cur.skip_parenthesized()
        elif tok.is_word("NOT"):
            if cur.accept_word("NULL"):
                nullable = False
        elif tok.is_word("NULL"):
            nullable = True
        elif tok.is_word("DEFAULT"):
            if cur.accept_word("ON"):
                cur.expect_word("NULL")
            default = read_expression(cur)
        elif tok.is_word("PRIMARY"):
            cur.expect_word("KEY")
            clauses.primary_key, nullable = True, False
        elif tok.is_word("UNIQUE"):
            clauses.unique = True
        elif tok.is_word("CONSTRAINT"):
            clauses.constraint_name = cur.identifier()
        elif tok.is_word("REFERENCES"):
            read_table_name(cur)
        elif tok.is_word("GENERATED"):
            if not cur.accept_word("ALWAYS") and cur.accept_word("BY"):
                cur.expect_word("DEFAULT")
                if cur.accept_word("ON"):
                    cur.expect_word("NULL")
            cur.expect_word("AS")
            if cur.accept_word("IDENTITY"):
                # the dictionary says NOT NULL; Debezium's parser leaves the column optional, as here
                if cur.peek_symbol("("):
                    cur.skip_parenthesized()
            else:
                clauses.virtual = True
        elif tok.is_word("AS") and cur.peek_symbol("("):
            clauses.virtual = True  # [GENERATED ALWAYS] AS (expr) [VIRTUAL]
    return replace(col, nullable=nullable, default=default), clauses

def read_data_type(cur: Cursor, name: str, position: int) -> ColumnInfo | None:
    tok = cur.peek()
    if tok.kind is not Kind.WORD or tok.upper in CONSTRAINT_WORDS:
        return None
    base = cur.next().upper
    if cur.accept_symbol("."):  # SYS.XMLTYPE, MDSYS.SDO_GEOMETRY
        base = cur.identifier().upper()
    if base == "DOUBLE":
        cur.expect_word("PRECISION")
        base = "DOUBLE PRECISION"
    elif base == "LONG" and cur.accept_word("RAW"):
        base = "LONG RAW"
    elif base in ("CHARACTER", "CHAR", "NATIONAL") and cur.accept_word("VARYING"):
        base = "VARCHAR2"
    args: list[int | None] = []
    suffix = ""
    if base == "INTERVAL":
        unit = cur.next().upper
        if unit not in ("YEAR", "DAY"):
            raise cur.error(f"INTERVAL {unit} is not an Oracle interval type")
        base = f"INTERVAL {unit}"
        args.append(read_size(cur)[0] if cur.peek_symbol("(") else None)
        cur.expect_word("TO")
        cur.expect_word("MONTH" if unit == "YEAR" else "SECOND")
        if cur.peek_symbol("("):
            args.append(read_size(cur)[0])
    else:
        if cur.peek_symbol("("):
            args = read_size(cur)
        if base == "TIMESTAMP" and cur.accept_word("WITH"):
            local = cur.accept_word("LOCAL")
            cur.expect_word("TIME")
            cur.expect_word("ZONE")
            suffix = " WITH LOCAL TIME ZONE" if local else " WITH TIME ZONE"
    return column_info(name, base, args, suffix, position)

def read_size(cur: Cursor) -> list[int | None]:
    """``(n [BYTE|CHAR] [, s])``; ``*`` (NUMBER(*, 2)) is no precision."""

    def one() -> int | None:
        tok = cur.next()
        sign = -1 if tok.is_symbol("-") else 1
        if sign < 0:
            tok = cur.next()
        if tok.is_symbol("*"):
            return None
        if tok.kind is not Kind.NUMBER:
            raise cur.error(f"expected a size but found '{tok.text}'")
        cur.accept_word("BYTE", "CHAR")
        return sign * int(tok.text)

    return cur.parenthesized_list(one)

def read_expression(cur: Cursor) -> str:
    """An expression up to the next column clause, ',' or ')' (depth 0), as its tokens' source
    text without the whitespace between them (Debezium's parse-tree text: ``'a'||'b'``)."""
    parts: list[str] = []
    depth = 0
    while not cur.at_end():
        tok = cur.peek()
        if depth == 0 and (tok.is_symbol(",") or tok.is_symbol(")") or
                           (tok.kind is Kind.WORD and tok.upper in CONSTRAINT_WORDS and parts)):
            break
        if tok.is_symbol("("):
            depth += 1
        elif tok.is_symbol(")"):
            depth -= 1
        parts.append(cur.source[tok.start:tok.end])
        cur.next()
    if not parts:
        raise cur.error("DEFAULT without an expression")
    return "".join(parts)
