"""Oracle DDL -> table structure changes: CREATE TABLE, ALTER TABLE (ADD / MODIFY / DROP column,
RENAME COLUMN, ADD / DROP / RENAME constraint, RENAME TO, SET UNUSED), DROP TABLE, RENAME.

Names are resolved as Oracle does: unquoted names upper case, ``"quoted"`` names as written, an
unqualified table in the schema the statement ran in (LogMiner's SEG_OWNER). Statements that do
not change a table's columns or key (indexes, comments, grants, views, sequences, supplemental
logging, storage clauses ...) give no change; a statement of any other kind, or one whose syntax
is not understood, raises ``OracleDdlParseError`` naming it. ``TRUNCATE`` gives no change here:
it is a data event (op ``t``).
"""

from __future__ import annotations

from dataclasses import replace

from lakecdc.capture.mysql.ddl.cursor import Cursor, DdlParseError
from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.ddl.columns import read_column, read_table_name
from lakecdc.capture.oracle.ddl.lexer import Kind, LexError, tokenize
from lakecdc.capture.oracle.ddl.model import OracleTable, OracleTables, TableChange
from lakecdc.capture.oracle.errors import OracleDdlParseError

_TABLE_CONSTRAINT_START = frozenset({"CONSTRAINT", "PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "SUPPLEMENTAL",
                                     "PERIOD", "SCOPE", "REF"})
#: CREATE/ALTER/DROP of these objects never changes a table's structure
_OTHER_OBJECTS = frozenset({
    "INDEX", "UNIQUE", "BITMAP", "MULTIVALUE", "SEQUENCE", "VIEW", "OR", "FORCE", "NOFORCE", "EDITIONABLE",
    "NONEDITIONABLE", "EDITIONING", "SYNONYM", "PUBLIC", "TRIGGER", "PROCEDURE", "FUNCTION", "PACKAGE", "TYPE",
    "MATERIALIZED", "USER", "ROLE", "PROFILE", "TABLESPACE", "DIRECTORY", "DATABASE", "SESSION", "SYSTEM",
    "CLUSTER", "CONTEXT", "EDITION", "JAVA", "LIBRARY", "AUDIT", "OPERATOR", "DIMENSION", "OUTLINE",
})
#: FLASHBACK TABLE ... TO BEFORE DROP: the table is read from the dictionary at its next change
_IGNORED_STATEMENTS = frozenset({"COMMENT", "GRANT", "REVOKE", "ANALYZE", "AUDIT", "NOAUDIT", "ASSOCIATE",
                                 "DISASSOCIATE", "LOCK", "PURGE", "TRUNCATE", "SET", "CALL", "DECLARE",
                                 "BEGIN", "FLASHBACK"})
_TABLE_KINDS = frozenset({"GLOBAL", "PRIVATE", "TEMPORARY", "SHARDED", "DUPLICATED", "IMMUTABLE", "BLOCKCHAIN"})


class OracleDdlParser:
    def __init__(self, tables: OracleTables) -> None:
        self.tables = tables

    def parse(self, sql: str, default_owner: str) -> list[TableChange]:
        """Apply one statement to ``tables``; the changes it made (none for statements that change
        no table structure)."""
        text = sql.strip().rstrip(";").strip()
        try:
            cur = Cursor(tokenize(text), text, text)
            return _Statement(cur, self.tables, default_owner).parse()
        except DdlParseError as exc:
            raise OracleDdlParseError(exc.reason, text) from None
        except LexError as exc:
            raise OracleDdlParseError(str(exc), text) from None


class _Statement:
    def __init__(self, cur: Cursor, tables: OracleTables, owner: str) -> None:
        self.cur = cur
        self.tables = tables
        self.owner = owner

    def parse(self) -> list[TableChange]:
        cur = self.cur
        first = cur.peek()
        if first.kind is not Kind.WORD:
            raise cur.error("not a DDL statement")
        word = first.upper
        if word in _IGNORED_STATEMENTS:
            return []
        if word == "RENAME":
            cur.next()
            old = cur.identifier()
            cur.expect_word("TO")
            return self._rename_table((self.owner, old), cur.identifier())
        if word not in ("CREATE", "ALTER", "DROP"):
            raise cur.error(f"{word} statements are not understood")
        cur.next()
        while cur.peek().upper in _TABLE_KINDS:
            cur.next()
        if not cur.accept_word("TABLE"):
            if cur.peek().upper in _OTHER_OBJECTS:
                return []
            raise cur.error(f"{word} {cur.peek().text} statements are not understood")
        if word == "CREATE":
            return self._create()
        if word == "DROP":
            owner, name = self._table_name()
            previous = self.tables.remove(owner, name) or OracleTable(owner, name, ())
            return [TableChange("DROP", previous)]
        return self._alter()

    # -- names ----------------------------------------------------------------------------------
    def _table_name(self) -> tuple[str, str]:
        return read_table_name(self.cur, self.owner)

    def _names(self) -> list[str]:
        return self.cur.parenthesized_list(self.cur.identifier)

    # -- CREATE TABLE -----------------------------------------------------------------------------
    def _create(self) -> list[TableChange]:
        cur = self.cur
        owner, name = self._table_name()
        if not cur.peek_symbol("("):
            raise cur.error("CREATE TABLE without a column list (AS SELECT, OF type) is not understood")
        table = OracleTable(owner, name, ())
        columns: list[ColumnInfo] = []
        cur.expect_symbol("(")
        while True:
            if cur.peek().upper in _TABLE_CONSTRAINT_START:
                table = self._table_constraint(table)
            else:
                col, clauses = read_column(self.cur, len(columns) + 1)
                if not clauses.virtual:
                    columns.append(col)
                    table = clauses.keys(table, col.name)
            if not cur.accept_symbol(","):
                cur.expect_symbol(")")
                break
        # storage, partitioning, LOB and tablespace clauses follow: no structure in them
        table = _key_not_null(table.with_columns(columns))
        self.tables.put(table)
        return [TableChange("CREATE", table)]

    # -- constraints -----------------------------------------------------------------------------------
    def _table_constraint(self, table: OracleTable) -> OracleTable:
        cur = self.cur
        name = cur.identifier() if cur.accept_word("CONSTRAINT") else None
        if cur.accept_word("PRIMARY"):
            cur.expect_word("KEY")
            table = replace(table, primary_key=tuple(self._names()), primary_key_name=name)
        elif cur.accept_word("UNIQUE"):
            names = tuple(self._names())
            if not table.unique_key:
                table = replace(table, unique_key=names)
        cur.skip_to_top_level_comma()  # FOREIGN KEY, CHECK, USING INDEX, ENABLE ...
        return table

    # -- ALTER TABLE -------------------------------------------------------------------------------------
    def _alter(self) -> list[TableChange]:
        cur = self.cur
        owner, name = self._table_name()
        before = self.tables.get(owner, name)
        if before is None:
            raise cur.error(f"table {owner}.{name} is not known (no CREATE TABLE for it in the schema history)")
        table = before
        while not cur.at_end():
            clause = cur.next()
            if clause.is_word("ADD"):
                table = self._add(table)
            elif clause.is_word("MODIFY"):
                table = self._modify(table)
            elif clause.is_word("DROP"):
                table = self._drop(table)
            elif clause.is_word("SET") and cur.accept_word("UNUSED"):
                table = self._drop_columns(table, self._column_names())
                self._skip_words("CASCADE", "CONSTRAINTS", "INVALIDATE", "ONLINE")
            elif clause.is_word("RENAME"):
                if cur.accept_word("TO"):
                    self.tables.put(table)
                    return self._rename_table((owner, name), cur.identifier())
                table = self._rename(table)
            else:
                break  # storage, logging, movement, enable/disable ...: nothing structural follows
        if table == before:
            return []
        self.tables.put(table)
        return [TableChange("ALTER", table)]

    def _add(self, table: OracleTable) -> OracleTable:
        cur = self.cur
        if cur.peek().upper in ("SUPPLEMENTAL", "PARTITION", "SUBPARTITION", "OVERFLOW"):
            cur.i = len(cur.tokens)
            return table
        parenthesized = cur.accept_symbol("(")
        columns = list(table.columns)
        while True:
            if cur.peek().upper in _TABLE_CONSTRAINT_START:
                table = self._table_constraint(table)
            else:
                col, clauses = read_column(cur, len(columns) + 1)
                if table.column(col.name) is not None or any(c.name == col.name for c in columns):
                    raise cur.error(f"column {col.name} already exists in {table.owner}.{table.name}")
                if not clauses.virtual:
                    columns.append(col)
                    table = clauses.keys(table, col.name)
            if not (parenthesized and cur.accept_symbol(",")):
                break
        if parenthesized:
            cur.expect_symbol(")")
        return _key_not_null(table.with_columns(columns))

    def _modify(self, table: OracleTable) -> OracleTable:
        cur = self.cur
        if cur.peek().upper in ("CONSTRAINT", "PRIMARY", "UNIQUE", "PARTITION", "SUBPARTITION", "LOB",
                                "DEFAULT", "NESTED", "VARRAY", "OPAQUE", "COLUMN"):
            cur.i = len(cur.tokens)
            return table
        parenthesized = cur.accept_symbol("(")
        columns = list(table.columns)
        while True:
            name = cur.identifier()
            index = next((i for i, c in enumerate(columns) if c.name == name), None)
            if index is None:
                raise cur.error(f"MODIFY of column {name}, which {table.owner}.{table.name} does not have")
            columns[index], clauses = read_column(cur, index + 1, existing=columns[index])
            table = clauses.keys(table, name)
            if not (parenthesized and cur.accept_symbol(",")):
                break
        if parenthesized:
            cur.expect_symbol(")")
        return table.with_columns(columns)

    def _drop(self, table: OracleTable) -> OracleTable:
        cur = self.cur
        if cur.accept_word("PRIMARY"):
            cur.expect_word("KEY")
            table = replace(table, primary_key=(), primary_key_name=None)
        elif cur.accept_word("CONSTRAINT"):
            name = cur.identifier()
            if name == table.primary_key_name:
                table = replace(table, primary_key=(), primary_key_name=None)
        elif cur.accept_word("UNIQUE"):
            if tuple(self._names()) == table.unique_key:
                table = replace(table, unique_key=())
        elif cur.peek().is_word("COLUMN") or cur.peek_symbol("("):
            table = self._drop_columns(table, self._column_names())
        else:  # DROP UNUSED COLUMNS, DROP SUPPLEMENTAL LOG ..., DROP PARTITION ...
            cur.i = len(cur.tokens)
            return table
        self._skip_words("CASCADE", "CONSTRAINTS", "INVALIDATE", "CHECKPOINT", "KEEP", "INDEX", "ONLINE")
        return table

    def _column_names(self) -> list[str]:
        cur = self.cur
        if cur.accept_word("COLUMN"):
            return [cur.identifier()]
        return self._names()

    def _drop_columns(self, table: OracleTable, names: list[str]) -> OracleTable:
        for name in names:
            if table.column(name) is None:
                raise self.cur.error(f"DROP of column {name}, which {table.owner}.{table.name} does not have")
        gone = set(names)
        pk = () if gone & set(table.primary_key) else table.primary_key
        unique = () if gone & set(table.unique_key) else table.unique_key
        table = replace(table, primary_key=pk, primary_key_name=table.primary_key_name if pk else None,
                        unique_key=unique)
        return table.with_columns([c for c in table.columns if c.name not in gone])

    def _rename(self, table: OracleTable) -> OracleTable:
        cur = self.cur
        if cur.accept_word("CONSTRAINT"):
            old = cur.identifier()
            cur.expect_word("TO")
            new = cur.identifier()
            return replace(table, primary_key_name=new) if old == table.primary_key_name else table
        cur.expect_word("COLUMN")
        old = cur.identifier()
        cur.expect_word("TO")
        new = cur.identifier()
        if table.column(old) is None:
            raise cur.error(f"RENAME of column {old}, which {table.owner}.{table.name} does not have")

        def renamed(names: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(new if n == old else n for n in names)

        return replace(table, columns=tuple(replace(c, name=new) if c.name == old else c for c in table.columns),
                       primary_key=renamed(table.primary_key), unique_key=renamed(table.unique_key))

    def _rename_table(self, old: tuple[str, str], new_name: str) -> list[TableChange]:
        table = self.tables.remove(*old)
        if table is None:
            raise self.cur.error(f"table {old[0]}.{old[1]} is not known (no CREATE TABLE for it in the schema history)")
        table = replace(table, name=new_name)
        self.tables.put(table)
        return [TableChange("ALTER", table, previous=old)]

    def _skip_words(self, *words: str) -> None:
        while self.cur.accept_word(*words) or (self.cur.peek().kind is Kind.NUMBER and self.cur.next()):
            pass


def _key_not_null(table: OracleTable) -> OracleTable:
    """Primary key columns are NOT NULL (Oracle adds the constraint; Debezium's parser marks them
    so, and keeps them so when the key is dropped later)."""
    if not table.primary_key:
        return table
    key = set(table.primary_key)
    return replace(table, columns=tuple(replace(c, nullable=False) if c.name in key and c.nullable else c
                                        for c in table.columns))
