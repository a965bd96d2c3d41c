"""CREATE TABLE bodies and the key definitions inside them (also used by ALTER TABLE ... ADD).

    (id INT, code CHAR(3) NOT NULL, PRIMARY KEY (id), UNIQUE KEY uk (code)) DEFAULT CHARSET=latin1
      -> TableDef(columns=(id, code), primary_key=("id",), unique_keys=(("uk", ("code",)),),
                  default_charset="latin1")

Only primary and unique keys are kept: Debezium uses the first unique key of NOT NULL columns as
the message key of a table without a primary key. Other indexes, foreign keys and checks are skipped.
"""

from __future__ import annotations

from lakecdc.capture.mysql.ddl.column_list import apply_pk_not_null, canonical_names, resolve_charset
from lakecdc.capture.mysql.ddl.columns import column_definition
from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.mysql.ddl.datatypes import KNOWN_TYPES, TYPE_ALIASES
from lakecdc.capture.mysql.ddl.lexer import Kind
from lakecdc.capture.mysql.ddl.model import ColumnDef, TableDef, TableId
from lakecdc.capture.mysql.ddl.options import table_options

CONSTRAINT_STARTS = frozenset(
    {"PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "CONSTRAINT", "PERIOD"}
)
_TYPE_WORDS = KNOWN_TYPES | set(TYPE_ALIASES)


def create_table_body(cur: Cursor, table_id: TableId, default_charset: str | None, temporary: bool) -> TableDef:
    """Read ``( elements ) options`` after the table name; ``default_charset`` is the database's."""
    columns: list[ColumnDef] = []
    pk: tuple[str, ...] = ()
    uniques: list[tuple[str, tuple[str, ...]]] = []

    def element() -> None:
        nonlocal pk
        if cur.peek().upper in CONSTRAINT_STARTS and not _is_column_named_like_keyword(cur):
            kind, name, cols = table_constraint(cur)
            if kind == "PRIMARY":
                pk = cols
            elif kind == "UNIQUE":
                uniques.append((name, cols))
        else:
            col, col_pk, col_unique = column_definition(cur)
            columns.append(col)
            if col_pk:
                pk = (col.name,)
            if col_unique:
                uniques.append((col.name, (col.name,)))

    if cur.peek_symbol("("):  # CREATE TABLE t SELECT ... has no element list
        cur.parenthesized_list(element)
    options = table_options(cur)
    # anything left (PARTITION BY ..., AS SELECT ...) does not change the column list
    table_charset = options.resolved_charset or default_charset
    columns = [resolve_charset(c, table_charset) for c in columns]
    columns = apply_pk_not_null(columns, pk)
    return TableDef(
        id=table_id,
        columns=tuple(columns),
        primary_key=canonical_names(columns, pk),
        unique_keys=tuple(uniques),
        default_charset=table_charset,
        comment=options.comment,
        temporary=temporary,
    )


def table_constraint(cur: Cursor) -> tuple[str, str, tuple[str, ...]]:
    """Read a key or constraint definition; returns (PRIMARY|UNIQUE|OTHER, index name, columns)."""
    name = ""
    if cur.accept_word("CONSTRAINT"):
        if cur.peek().upper not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            name = cur.identifier()
    if cur.accept_word("PRIMARY"):
        cur.expect_word("KEY")
        _skip_index_name_and_type(cur)
        cols = index_column_names(cur)
        cur.skip_to_top_level_comma()
        return "PRIMARY", "PRIMARY", cols
    if cur.accept_word("UNIQUE"):
        cur.accept_word("INDEX", "KEY")
        if not cur.peek_symbol("(") and not cur.peek().is_word("USING"):
            name = cur.identifier()
        _skip_index_name_and_type(cur)
        cols = index_column_names(cur)
        cur.skip_to_top_level_comma()
        return "UNIQUE", name or cols[0], cols
    cur.skip_to_top_level_comma()
    return "OTHER", name, ()


def index_column_names(cur: Cursor) -> tuple[str, ...]:
    """``(a, b(10) DESC, (expr))`` -> ("a", "b"): prefix lengths and functional parts dropped."""

    def key_part() -> str | None:
        name = None
        if cur.peek_symbol("("):  # functional key part: not a column
            cur.skip_parenthesized()
        else:
            name = cur.identifier()
            if cur.peek_symbol("("):
                cur.skip_parenthesized()  # prefix length
        cur.accept_word("ASC", "DESC")
        return name

    return tuple(name for name in cur.parenthesized_list(key_part) if name is not None)


def _skip_index_name_and_type(cur: Cursor) -> None:
    if cur.accept_word("USING"):
        cur.next()
    if not cur.peek_symbol("("):
        cur.identifier()
    if cur.accept_word("USING"):
        cur.next()


def _is_column_named_like_keyword(cur: Cursor) -> bool:
    """`key` VARCHAR(10) / `index` INT: a quoted or keyword-named column, not a constraint."""
    tok = cur.peek()
    if tok.kind is Kind.QUOTED_ID:
        return True
    nxt = cur.peek(1)
    return tok.upper in ("KEY", "INDEX", "CHECK", "PERIOD") and nxt.kind is Kind.WORD and nxt.upper in _TYPE_WORDS
