"""Column definitions, CREATE TABLE bodies and ALTER TABLE specifications."""

from __future__ import annotations

from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.mysql.ddl.datatypes import DEFAULT_LENGTHS, KNOWN_TYPES, TYPE_ALIASES
from lakecdc.capture.mysql.ddl.lexer import Kind
from lakecdc.capture.mysql.ddl.model import (
    CHARACTER_TYPES,
    NO_DEFAULT,
    ColumnDef,
    ColumnDefault,
    DefaultKind,
    TableDef,
    TableId,
)

_CURRENT_TIMESTAMP_WORDS = frozenset(
    {"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_DATE", "CURDATE", "SYSDATE"}
)
_CONSTRAINT_STARTS = frozenset(
    {"PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "CONSTRAINT", "PERIOD"}
)


class ColumnParser:
    def __init__(self, cur: Cursor, table_id: TableId, default_charset: str | None) -> None:
        self.cur = cur
        self.table_id = table_id
        self.default_charset = default_charset

    # -- CREATE TABLE ----------------------------------------------------------------------------
    def create_table_body(self, temporary: bool) -> TableDef:
        cur = self.cur
        columns: list[ColumnDef] = []
        pk: tuple[str, ...] = ()
        uniques: list[tuple[str, tuple[str, ...]]] = []
        if cur.accept_symbol("("):
            while True:
                if cur.peek().upper in _CONSTRAINT_STARTS and not _is_column_named_like_keyword(cur):
                    kind, name, cols = self.table_constraint()
                    if kind == "PRIMARY":
                        pk = cols
                    elif kind == "UNIQUE":
                        uniques.append((name, cols))
                else:
                    col, col_pk, col_unique = self.column_definition()
                    columns.append(col)
                    if col_pk:
                        pk = (col.name,)
                    if col_unique:
                        uniques.append((col.name, (col.name,)))
                if cur.accept_symbol(","):
                    continue
                cur.expect_symbol(")")
                break
        charset, comment = self.table_options()
        # anything left (PARTITION BY ..., AS SELECT ...) does not change the column list
        table_charset = charset or self.default_charset
        columns = [_resolve_charset(c, table_charset) for c in columns]
        columns = _apply_pk_not_null(columns, pk)
        return TableDef(
            id=self.table_id,
            columns=tuple(columns),
            primary_key=_canonical_names(columns, pk),
            unique_keys=tuple(uniques),
            default_charset=table_charset,
            comment=comment,
            temporary=temporary,
        )

    def table_constraint(self) -> tuple[str, str, tuple[str, ...]]:
        """Returns (PRIMARY|UNIQUE|OTHER, index name, columns)."""
        cur = self.cur
        name = ""
        if cur.accept_word("CONSTRAINT"):
            if not cur.peek().upper in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                name = cur.identifier()
        if cur.accept_word("PRIMARY"):
            cur.expect_word("KEY")
            self._skip_index_name_and_type()
            cols = self.index_column_names(cur)
            cur.skip_to_top_level_comma()
            return "PRIMARY", "PRIMARY", cols
        if cur.accept_word("UNIQUE"):
            cur.accept_word("INDEX", "KEY")
            if not cur.peek_symbol("(") and not cur.peek().is_word("USING"):
                name = cur.identifier()
            self._skip_index_name_and_type()
            cols = self.index_column_names(cur)
            cur.skip_to_top_level_comma()
            return "UNIQUE", name or cols[0], cols
        cur.skip_to_top_level_comma()
        return "OTHER", name, ()

    def _skip_index_name_and_type(self) -> None:
        cur = self.cur
        if cur.accept_word("USING"):
            cur.next()
        if not cur.peek_symbol("("):
            cur.identifier()
        if cur.accept_word("USING"):
            cur.next()

    @staticmethod
    def index_column_names(cur: Cursor) -> tuple[str, ...]:
        cur.expect_symbol("(")
        names: list[str] = []
        while True:
            if cur.peek_symbol("("):  # functional key part: not a column
                cur.skip_parenthesized()
            else:
                names.append(cur.identifier())
                if cur.peek_symbol("("):
                    cur.skip_parenthesized()  # prefix length
            cur.accept_word("ASC", "DESC")
            if cur.accept_symbol(","):
                continue
            cur.expect_symbol(")")
            return tuple(names)

    def table_options(self) -> tuple[str | None, str | None]:
        cur = self.cur
        charset: str | None = None
        comment: str | None = None
        collation: str | None = None
        while not cur.at_end():
            if cur.peek().is_word("PARTITION", "AS", "SELECT", "IGNORE", "REPLACE", "WITH"):
                break
            cur.accept_word("DEFAULT")
            if cur.accept_word("CHARACTER"):
                cur.expect_word("SET")
                cur.accept_symbol("=")
                charset = cur.identifier()
            elif cur.accept_word("CHARSET"):
                cur.accept_symbol("=")
                charset = cur.identifier()
            elif cur.accept_word("COLLATE"):
                cur.accept_symbol("=")
                collation = cur.identifier()
            elif cur.accept_word("COMMENT"):
                cur.accept_symbol("=")
                comment = cur.next().text
            elif cur.peek_symbol("("):
                cur.skip_parenthesized()
            else:
                cur.next()
            cur.accept_symbol(",")
        if charset is None and collation is not None:
            charset = collation.split("_", 1)[0]
        return charset, comment

    # -- column definitions ----------------------------------------------------------------------
    def column_definition(self, name: str | None = None) -> tuple[ColumnDef, bool, bool]:
        """Parse ``name type attributes``; returns (column, is_primary_key, is_unique)."""
        cur = self.cur
        col_name = name if name is not None else cur.identifier()
        col = self.data_type(col_name)
        is_pk = is_unique = False
        optional = True
        auto_increment = col.auto_increment
        generated = False
        default = NO_DEFAULT
        charset, collation, comment, srid = col.charset, col.collation, None, None
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
                default = self._default_value()
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
            elif cur.accept_word("COLLATE"):
                collation = cur.identifier()
            elif cur.accept_word("CHARACTER"):
                cur.expect_word("SET")
                charset = cur.identifier()
            elif cur.accept_word("CHARSET"):
                charset = cur.identifier()
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
                cur.identifier()
                if cur.accept_symbol("."):
                    cur.identifier()
                if cur.peek_symbol("("):
                    cur.skip_parenthesized()
                while cur.peek().is_word("MATCH", "ON"):
                    cur.next()
                    while cur.peek().is_word("FULL", "PARTIAL", "SIMPLE", "DELETE", "UPDATE", "RESTRICT", "CASCADE", "SET", "NULL", "NO", "ACTION", "DEFAULT"):
                        cur.next()
            elif cur.accept_word("COLUMN_FORMAT", "STORAGE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
                cur.accept_symbol("=")
                cur.next()
            elif cur.peek().is_word("FIRST", "AFTER"):
                break
            elif cur.accept_word(
                "VIRTUAL", "STORED", "PERSISTENT", "INVISIBLE", "VISIBLE", "BINARY", "ASCII", "UNICODE",
                "COMPRESSED", "SIGNED", "UNSIGNED", "ZEROFILL", "WITHOUT", "SYSTEM", "VERSIONING",
                "INSERT", "ONLY"
            ):
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
        col = ColumnDef(
            name=col_name,
            type_name=col.type_name,
            type_expression=col.type_expression,
            length=col.length,
            scale=col.scale,
            unsigned=col.unsigned,
            zerofill=col.zerofill,
            enum_values=col.enum_values,
            charset=charset,
            collation=collation,
            optional=optional,
            auto_increment=auto_increment,
            generated=generated,
            default=default,
            srid=srid,
            comment=comment,
        )
        return col, is_pk, is_unique

    def data_type(self, col_name: str) -> ColumnDef:
        """Read a data type. ``type_name`` is canonical (for the value mapping); ``type_expression``
        keeps the name as written (Debezium's ``typeName``: INTEGER, BOOL, DOUBLE PRECISION, ...)."""
        cur = self.cur
        tok = cur.next()
        if tok.kind is not Kind.WORD:
            raise cur.error(f"expected a data type for column '{col_name}' but found '{tok.text}'")
        word = tok.upper
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
        word = TYPE_ALIASES.get(word, word)
        if word not in KNOWN_TYPES:
            raise cur.error(f"unknown data type '{tok.text}' for column '{col_name}'")
        length: int | None = None
        scale: int | None = None
        enum_values: tuple[str, ...] = ()
        if cur.peek_symbol("("):
            if word in ("ENUM", "SET"):
                cur.next()
                values = []
                while True:
                    values.append(cur.next().text)
                    if cur.accept_symbol(","):
                        continue
                    cur.expect_symbol(")")
                    break
                enum_values = tuple(values)
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
        collation: str | None = None
        while True:
            if cur.accept_word("UNSIGNED"):
                unsigned = True
            elif cur.accept_word("SIGNED"):
                pass
            elif cur.accept_word("ZEROFILL"):
                zerofill = unsigned = True
            elif cur.peek().is_word("CHARACTER") and cur.peek(1).is_word("SET"):
                cur.next()
                cur.next()
                charset = cur.identifier()
            elif cur.accept_word("CHARSET"):
                charset = cur.identifier()
            elif cur.accept_word("COLLATE"):
                collation = cur.identifier()
            elif cur.accept_word("BINARY"):
                char_binary = True  # CHAR(n) BINARY: a binary collation, still a character string
            elif cur.accept_word("ASCII"):
                charset = "latin1"
            elif cur.accept_word("UNICODE"):
                charset = "ucs2"
            else:
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
            charset=charset,
            collation=collation,
        )

    def _default_value(self) -> ColumnDefault:
        cur = self.cur
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
        if tok.kind is Kind.STRING:
            cur.next()
            return ColumnDefault(DefaultKind.LITERAL, tok.text, "string")
        if tok.kind is Kind.NUMBER:
            cur.next()
            return ColumnDefault(DefaultKind.LITERAL, tok.text, "number")
        if tok.is_symbol("-") or tok.is_symbol("+"):
            cur.next()
            num = cur.next()
            sign = "-" if tok.text == "-" else ""
            return ColumnDefault(DefaultKind.LITERAL, sign + num.text, "number")
        if tok.kind is Kind.BITS:
            cur.next()
            return ColumnDefault(DefaultKind.LITERAL, tok.text, "bits")
        if tok.kind is Kind.HEX:
            cur.next()
            return ColumnDefault(DefaultKind.LITERAL, tok.text, "hex")
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

    # -- ALTER TABLE -----------------------------------------------------------------------------
    def alter_table(self, table: TableDef) -> TableDef:
        cur = self.cur
        columns = list(table.columns)
        pk = table.primary_key
        uniques = list(table.unique_keys)
        table_id = table.id
        charset = table.default_charset
        comment = table.comment
        while not cur.at_end():
            if cur.accept_word("ADD"):
                if cur.peek().upper in _CONSTRAINT_STARTS and not cur.peek().is_word("COLUMN"):
                    kind, name, cols = self.table_constraint()
                    if kind == "PRIMARY":
                        pk = _canonical_names(columns, cols)
                        columns = _apply_pk_not_null(columns, pk)
                    elif kind == "UNIQUE":
                        uniques.append((name, cols))
                else:
                    cur.accept_word("COLUMN")
                    if_not_exists = _accept_if_not_exists(cur)
                    if cur.accept_symbol("("):
                        while True:
                            col, col_pk, _ = self.column_definition()
                            col = _resolve_charset(col, charset)
                            columns = _add_column(columns, col, None, if_not_exists)
                            if col_pk:
                                pk = (col.name,)
                            if not cur.accept_symbol(","):
                                break
                        cur.expect_symbol(")")
                    else:
                        col, col_pk, col_unique = self.column_definition()
                        col = _resolve_charset(col, charset)
                        columns = _add_column(columns, col, self._placement(), if_not_exists)
                        if col_pk:
                            pk = (col.name,)
                        if col_unique:
                            uniques.append((col.name, (col.name,)))
            elif cur.accept_word("DROP"):
                if cur.accept_word("PRIMARY"):
                    cur.expect_word("KEY")
                    pk = ()
                elif cur.accept_word("INDEX", "KEY"):
                    _accept_if_exists(cur)
                    name = cur.identifier()
                    uniques = [u for u in uniques if u[0].lower() != name.lower()]
                elif cur.accept_word("FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "PERIOD", "SYSTEM"):
                    cur.skip_to_top_level_comma()
                else:
                    cur.accept_word("COLUMN")
                    if_exists = _accept_if_exists(cur)
                    name = cur.identifier()
                    if table.column_position(name) < 0 and not any(c.name.lower() == name.lower() for c in columns):
                        if not if_exists:
                            raise cur.error(f"DROP COLUMN names column '{name}', which table '{table_id}' does not have")
                    columns = [c for c in columns if c.name.lower() != name.lower()]
                    pk = tuple(c for c in pk if c.lower() != name.lower())
                    uniques = [(n, tuple(c for c in cols if c.lower() != name.lower())) for n, cols in uniques]
                    uniques = [u for u in uniques if u[1]]
                    cur.accept_word("RESTRICT", "CASCADE")
            elif cur.accept_word("MODIFY"):
                cur.accept_word("COLUMN")
                if_exists = _accept_if_exists(cur)
                col, col_pk, _ = self.column_definition()
                col = _resolve_charset(col, charset)
                columns, pk = _replace_column(cur, columns, pk, col.name, col, self._placement(), if_exists, table_id)
                if col_pk:
                    pk = (col.name,)
            elif cur.accept_word("CHANGE"):
                cur.accept_word("COLUMN")
                if_exists = _accept_if_exists(cur)
                old = cur.identifier()
                col, col_pk, _ = self.column_definition()
                col = _resolve_charset(col, charset)
                columns, pk = _replace_column(cur, columns, pk, old, col, self._placement(), if_exists, table_id)
                uniques = [(n, tuple(col.name if c.lower() == old.lower() else c for c in cols)) for n, cols in uniques]
                if col_pk:
                    pk = (col.name,)
            elif cur.accept_word("RENAME"):
                if cur.accept_word("COLUMN"):
                    old = cur.identifier()
                    cur.expect_word("TO")
                    new = cur.identifier()
                    idx = _find(columns, old)
                    if idx < 0:
                        raise cur.error(f"RENAME COLUMN names column '{old}', which table '{table_id}' does not have")
                    columns[idx] = _renamed(columns[idx], new)
                    pk = tuple(new if c.lower() == old.lower() else c for c in pk)
                    uniques = [(n, tuple(new if c.lower() == old.lower() else c for c in cols)) for n, cols in uniques]
                elif cur.accept_word("INDEX", "KEY"):
                    old = cur.identifier()
                    cur.expect_word("TO")
                    new = cur.identifier()
                    uniques = [(new if n.lower() == old.lower() else n, cols) for n, cols in uniques]
                else:
                    cur.accept_word("TO", "AS")
                    first = cur.identifier()
                    if cur.accept_symbol("."):
                        table_id = TableId(first, cur.identifier())
                    else:
                        table_id = TableId(table_id.database, first)
            elif cur.accept_word("ALTER"):
                cur.accept_word("COLUMN")
                name = cur.identifier()
                idx = _find(columns, name)
                if cur.accept_word("SET"):
                    if cur.accept_word("DEFAULT"):
                        default = self._default_value()
                        if idx >= 0:
                            columns[idx] = _with_default(columns[idx], default)
                    else:
                        cur.skip_to_top_level_comma()
                elif cur.accept_word("DROP"):
                    cur.expect_word("DEFAULT")
                    if idx >= 0:
                        columns[idx] = _with_default(columns[idx], NO_DEFAULT)
                else:
                    cur.skip_to_top_level_comma()
            elif cur.accept_word("CONVERT"):
                cur.expect_word("TO")
                cur.accept_word("CHARACTER") and cur.expect_word("SET")
                cur.accept_word("CHARSET")
                charset = cur.identifier()
                columns = [_convert_charset(c, charset) for c in columns]
                cur.skip_to_top_level_comma()
            elif cur.peek().is_word("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT"):
                new_charset, new_comment = self._single_table_option()
                charset = new_charset or charset
                comment = new_comment if new_comment is not None else comment
            else:
                cur.skip_to_top_level_comma()
            if not cur.accept_symbol(","):
                cur.skip_to_top_level_comma()
                if not cur.accept_symbol(","):
                    if not cur.at_end():
                        cur.next()
        columns = _apply_pk_not_null(columns, pk)
        return table.with_columns(
            columns, id=table_id, primary_key=pk, unique_keys=tuple(uniques), default_charset=charset, comment=comment
        )

    def _single_table_option(self) -> tuple[str | None, str | None]:
        cur = self.cur
        cur.accept_word("DEFAULT")
        if cur.accept_word("CHARACTER"):
            cur.expect_word("SET")
            cur.accept_symbol("=")
            return cur.identifier(), None
        if cur.accept_word("CHARSET"):
            cur.accept_symbol("=")
            return cur.identifier(), None
        if cur.accept_word("COLLATE"):
            cur.accept_symbol("=")
            return cur.identifier().split("_", 1)[0], None
        if cur.accept_word("COMMENT"):
            cur.accept_symbol("=")
            return None, cur.next().text
        return None, None

    def _placement(self) -> tuple[str, str | None] | None:
        cur = self.cur
        if cur.accept_word("FIRST"):
            return ("FIRST", None)
        if cur.accept_word("AFTER"):
            return ("AFTER", cur.identifier())
        return None


def _is_column_named_like_keyword(cur: Cursor) -> bool:
    """`key` VARCHAR(10) / `index` INT: a quoted or keyword-named column, not a constraint."""
    tok = cur.peek()
    if tok.kind is Kind.QUOTED_ID:
        return True
    nxt = cur.peek(1)
    return tok.upper in ("KEY", "INDEX", "CHECK", "PERIOD") and nxt.kind is Kind.WORD and nxt.upper in KNOWN_TYPES | set(TYPE_ALIASES)


def _accept_if_exists(cur: Cursor) -> bool:
    if cur.peek().is_word("IF") and cur.peek(1).is_word("EXISTS"):
        cur.next()
        cur.next()
        return True
    return False


def _accept_if_not_exists(cur: Cursor) -> bool:
    if cur.peek().is_word("IF") and cur.peek(1).is_word("NOT"):
        cur.next()
        cur.next()
        cur.expect_word("EXISTS")
        return True
    return False


def _find(columns: list[ColumnDef], name: str) -> int:
    lowered = name.lower()
    for i, c in enumerate(columns):
        if c.name.lower() == lowered:
            return i
    return -1


def _place(columns: list[ColumnDef], col: ColumnDef, placement: tuple[str, str | None] | None) -> list[ColumnDef]:
    if placement is None:
        return columns + [col]
    if placement[0] == "FIRST":
        return [col] + columns
    idx = _find(columns, placement[1] or "")
    return columns[: idx + 1] + [col] + columns[idx + 1 :] if idx >= 0 else columns + [col]


def _add_column(columns: list[ColumnDef], col: ColumnDef, placement, if_not_exists: bool) -> list[ColumnDef]:
    if _find(columns, col.name) >= 0:
        if if_not_exists:
            return columns
        columns = [c for c in columns if c.name.lower() != col.name.lower()]
    return _place(columns, col, placement)


def _replace_column(cur, columns, pk, old_name, col, placement, if_exists, table_id):
    idx = _find(columns, old_name)
    if idx < 0:
        if if_exists:
            return columns, pk
        raise cur.error(f"column '{old_name}' is not in table '{table_id}'")
    old = columns[idx]
    if col.charset is None and col.type_name in CHARACTER_TYPES:
        col = _renamed(col, col.name, charset=old.charset)
    if placement is None:
        columns = columns[:idx] + [col] + columns[idx + 1 :]
    else:
        columns = _place(columns[:idx] + columns[idx + 1 :], col, placement)
    pk = tuple(col.name if c.lower() == old_name.lower() else c for c in pk)
    return columns, pk


def _renamed(col: ColumnDef, name: str, **changes) -> ColumnDef:
    from dataclasses import replace

    return replace(col, name=name, **changes)


def _with_default(col: ColumnDef, default: ColumnDefault) -> ColumnDef:
    from dataclasses import replace

    return replace(col, default=default)


def _convert_charset(col: ColumnDef, charset: str) -> ColumnDef:
    from dataclasses import replace

    if col.type_name in CHARACTER_TYPES and (col.charset or "").lower() != "binary":
        return replace(col, charset=charset)
    return col


def _resolve_charset(col: ColumnDef, table_charset: str | None) -> ColumnDef:
    from dataclasses import replace

    if col.type_name in CHARACTER_TYPES and col.charset is None:
        charset = table_charset
        if charset is None and col.collation:
            charset = col.collation.split("_", 1)[0]
        return replace(col, charset=charset)
    return col


def _apply_pk_not_null(columns: list[ColumnDef], pk: tuple[str, ...]) -> list[ColumnDef]:
    from dataclasses import replace

    if not pk:
        return list(columns)
    keys = {c.lower() for c in pk}
    return [replace(c, optional=False) if c.name.lower() in keys and c.optional else c for c in columns]


def _canonical_names(columns: list[ColumnDef], names: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for n in names:
        idx = _find(columns, n)
        out.append(columns[idx].name if idx >= 0 else n)
    return tuple(out)
