"""Parser for MySQL/MariaDB DDL as it appears in the binlog and in ``SHOW CREATE TABLE``.

``DdlParser(tables).parse(sql, default_database)`` applies each statement to the ``Tables``
registry and returns one ``ParsedStatement`` per statement, describing what changed:

    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(255))
      -> ParsedStatement(kind="CREATE_TABLE", database="inventory",
                         changes=[TableChange("CREATE", <TableDef inventory.customers>)])

Statements that cannot change a table structure (views, routines, triggers, users, grants,
indexes other than unique ones, ...) are recognised and reported with ``kind="IGNORED"``. A
statement that looks like a table DDL but cannot be understood raises ``DdlParseError`` with the
statement text; the caller adds the binlog position (``schema.history.internal.skip.unparseable.ddl``
decides whether that stops capture).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakecdc.capture.mysql.ddl.alter_table import alter_table
from lakecdc.capture.mysql.ddl.create_table import create_table_body, index_column_names
from lakecdc.capture.mysql.ddl.cursor import AlterOfUnknownTableError, Cursor, DdlParseError
from lakecdc.capture.mysql.ddl.lexer import Kind, LexError, Token, tokenize
from lakecdc.capture.mysql.ddl.model import TableDef, TableId
from lakecdc.capture.mysql.ddl.options import database_options
from lakecdc.capture.mysql.ddl.tables import Tables

__all__ = ["DdlParseError", "DdlParser", "ParsedStatement", "TableChange", "AlterOfUnknownTableError"]


@dataclass(frozen=True)
class TableChange:
    """One entry of a schema change event's ``tableChanges`` (type CREATE, ALTER or DROP)."""

    type: str
    table: TableDef
    previous_id: TableId | None = None  # set for renames: id becomes "<old>,<new>"


@dataclass
class ParsedStatement:
    kind: str  # CREATE_TABLE ALTER_TABLE DROP_TABLE RENAME_TABLE TRUNCATE CREATE_DATABASE ...
    text: str
    database: str | None
    changes: list[TableChange] = field(default_factory=list)
    truncated: list[TableId] = field(default_factory=list)
    dropped_database: str | None = None
    use_database: str | None = None


# first words of statements that never change a table's structure
_IGNORED_FIRST_WORDS = frozenset(
    {
        "GRANT", "REVOKE", "FLUSH", "SET", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "CHECKSUM",
        "INSTALL", "UNINSTALL", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA",
        "INSERT", "UPDATE", "DELETE", "REPLACE", "SELECT", "CALL", "DO", "LOCK", "UNLOCK",
        "PURGE", "RESET", "KILL", "SHOW", "LOAD", "HANDLER", "SHUTDOWN", "PREPARE", "EXECUTE",
        "DEALLOCATE", "CACHE", "BINLOG", "HELP", "CHANGE", "START", "STOP", "SIGNAL",
    }
)
_IGNORED_OBJECTS = frozenset(
    {
        "VIEW", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "USER", "ROLE", "SERVER",
        "TABLESPACE", "LOGFILE", "SEQUENCE", "SPATIAL", "FULLTEXT", "RESOURCE", "PACKAGE",
        "AGGREGATE", "DEFINER", "ALGORITHM", "SQL", "OR", "INDEX", "INSTANCE",
    }
)


class DdlParser:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def parse(self, sql: str, default_database: str | None) -> list[ParsedStatement]:
        """Parse and apply every statement in ``sql`` (several when separated by ';')."""
        try:
            tokens = tokenize(sql)
        except LexError as exc:
            raise DdlParseError(str(exc), sql) from exc
        results: list[ParsedStatement] = []
        database = default_database
        for stmt_tokens in _split_statements(tokens, sql):
            text = sql[stmt_tokens[0].start : stmt_tokens[-1].end]
            cur = Cursor(stmt_tokens, text_source=sql, statement=text)
            result = self._statement(cur, text, database)
            if result.use_database is not None:
                database = result.use_database
            results.append(result)
        return results

    # -- dispatch --------------------------------------------------------------------------------
    def _statement(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        first = cur.peek()
        word = first.upper
        if word == "USE":
            cur.next()
            name = cur.identifier()
            return ParsedStatement("USE", text, name, use_database=name)
        if word == "SET" and cur.peek(1).is_word("CHARACTER_SET_SERVER"):
            # recorded by the snapshot so recovery knows the server's default character set
            cur.next()
            cur.next()
            cur.accept_symbol("=")
            self.tables.server_charset = cur.identifier()
            return ParsedStatement("IGNORED", text, db)
        if word in _IGNORED_FIRST_WORDS:
            return ParsedStatement("IGNORED", text, db)
        if word == "CREATE":
            return self._create(cur, text, db)
        if word == "ALTER":
            return self._alter(cur, text, db)
        if word == "DROP":
            return self._drop(cur, text, db)
        if word == "RENAME":
            cur.next()
            if cur.accept_word("USER"):
                return ParsedStatement("IGNORED", text, db)
            cur.expect_word("TABLE", "TABLES")
            return self._rename_tables(cur, text, db)
        if word == "TRUNCATE":
            cur.next()
            cur.accept_word("TABLE")
            ids = [self._table_id(cur, db)]
            while cur.accept_symbol(","):
                ids.append(self._table_id(cur, db))
            return ParsedStatement("TRUNCATE", text, ids[0].database, truncated=ids)
        raise cur.error(f"unsupported statement starting with '{first.text}'")

    # -- CREATE ----------------------------------------------------------------------------------
    def _create(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        cur.expect_word("CREATE")
        cur.accept_word("OR") and cur.expect_word("REPLACE")
        temporary = cur.accept_word("TEMPORARY")
        if cur.accept_word("DATABASE", "SCHEMA"):
            return self._create_database(cur, text)
        if cur.accept_word("UNIQUE"):
            return self._create_unique_index(cur, text, db)
        if cur.accept_word("TABLE"):
            return self._create_table(cur, text, db, temporary)
        return ParsedStatement("IGNORED", text, db)

    def _create_database(self, cur: Cursor, text: str) -> ParsedStatement:
        if_not_exists = cur.accept_if_not_exists()
        name = cur.identifier()
        charset = database_options(cur)
        key = name.lower()
        if not (if_not_exists and key in self.tables.database_charsets):
            self.tables.database_charsets[key] = charset
        return ParsedStatement("CREATE_DATABASE", text, name)

    def _create_table(self, cur: Cursor, text: str, db: str | None, temporary: bool) -> ParsedStatement:
        if_not_exists = cur.accept_if_not_exists()
        table_id = self._table_id(cur, db)
        existing = self.tables.get(table_id)
        like: TableId | None = None
        if cur.accept_word("LIKE"):
            like = self._table_id(cur, db)
        elif cur.peek_symbol("(") and cur.peek(1).is_word("LIKE"):
            cur.next()
            cur.next()
            like = self._table_id(cur, db)
            cur.expect_symbol(")")
        if like is not None:
            source = self.tables.get(like)
            if source is None:
                raise cur.error(f"CREATE TABLE ... LIKE names table '{like}', which is not known")
            table = source.evolve(id=table_id, temporary=temporary)
        else:
            default_charset = self.tables.charset_for(table_id.database)
            table = create_table_body(cur, table_id, default_charset, temporary)
        if if_not_exists and existing is not None:
            return ParsedStatement("IGNORED", text, table_id.database)
        self.tables.put(table)
        return ParsedStatement("CREATE_TABLE", text, table_id.database, [TableChange("CREATE", table)])

    def _create_unique_index(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        if not cur.accept_word("INDEX", "KEY"):
            return ParsedStatement("IGNORED", text, db)
        cur.accept_if_not_exists()
        index_name = cur.identifier()
        if cur.accept_word("USING"):
            cur.next()
        cur.expect_word("ON")
        table_id = self._table_id(cur, db)
        table = self.tables.get(table_id)
        columns = index_column_names(cur)
        if table is None:
            return ParsedStatement("IGNORED", text, table_id.database)
        updated = table.evolve(unique_keys=table.unique_keys + ((index_name, columns),))
        self.tables.put(updated)
        return ParsedStatement("ALTER_TABLE", text, table_id.database, [TableChange("ALTER", updated)])

    # -- ALTER -----------------------------------------------------------------------------------
    def _alter(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        cur.expect_word("ALTER")
        cur.accept_word("ONLINE", "OFFLINE")
        cur.accept_word("IGNORE")
        if cur.accept_word("DATABASE", "SCHEMA"):
            name = db
            if cur.peek().kind in (Kind.WORD, Kind.QUOTED_ID) and not _is_db_option_start(cur.peek()):
                name = cur.identifier()
            charset = database_options(cur)
            if name is not None and charset is not None:
                self.tables.database_charsets[name.lower()] = charset
            return ParsedStatement("ALTER_DATABASE", text, name)
        if not cur.accept_word("TABLE"):
            return ParsedStatement("IGNORED", text, db)
        cur.accept_if_exists()
        table_id = self._table_id(cur, db)
        table = self.tables.get(table_id)
        if table is None:
            # ALTER of a table created before history began, or filtered out of it
            raise AlterOfUnknownTableError(f"ALTER TABLE names table '{table_id}', whose structure is not known",
                                    cur.statement, table_id)
        updated = alter_table(cur, table)
        if updated.id != table_id:
            self.tables.remove(table_id)
            self.tables.put(updated)
            return ParsedStatement(
                "ALTER_TABLE", text, table_id.database, [TableChange("ALTER", updated, previous_id=table_id)]
            )
        self.tables.put(updated)
        return ParsedStatement("ALTER_TABLE", text, table_id.database, [TableChange("ALTER", updated)])

    # -- DROP / RENAME ---------------------------------------------------------------------------
    def _drop(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        cur.expect_word("DROP")
        if cur.accept_word("DATABASE", "SCHEMA"):
            cur.accept_if_exists()
            name = cur.identifier()
            dropped = self.tables.drop_database(name)
            return ParsedStatement(
                "DROP_DATABASE", text, name, [TableChange("DROP", t) for t in dropped], dropped_database=name
            )
        cur.accept_word("TEMPORARY")
        if not cur.accept_word("TABLE", "TABLES"):
            return ParsedStatement("IGNORED", text, db)
        cur.accept_if_exists()
        changes: list[TableChange] = []
        ids = [self._table_id(cur, db)]
        while cur.accept_symbol(","):
            ids.append(self._table_id(cur, db))
        for table_id in ids:
            # a table we do not know existed outside our history (the server accepted the DROP,
            # with or without IF EXISTS): there is nothing to update for it
            removed = self.tables.remove(table_id)
            if removed is not None:
                changes.append(TableChange("DROP", removed))
        return ParsedStatement("DROP_TABLE", text, ids[0].database, changes)

    def _rename_tables(self, cur: Cursor, text: str, db: str | None) -> ParsedStatement:
        changes: list[TableChange] = []
        pairs = []
        while True:
            old = self._table_id(cur, db)
            cur.expect_word("TO")
            new = self._table_id(cur, db)
            pairs.append((old, new))
            if not cur.accept_symbol(","):
                break
        # applied in order: gh-ost's "RENAME TABLE t TO _t_del, _t_gho TO t" swaps atomically
        for old, new in pairs:
            table = self.tables.remove(old)
            if table is None:
                continue
            renamed = table.evolve(id=new)
            self.tables.put(renamed)
            changes.append(TableChange("ALTER", renamed, previous_id=old))
        first_db = pairs[0][0].database
        return ParsedStatement("RENAME_TABLE", text, first_db, changes)

    # -- helpers ---------------------------------------------------------------------------------
    def _table_id(self, cur: Cursor, db: str | None) -> TableId:
        first = cur.identifier()
        if cur.peek_symbol(".") and cur.peek(1).kind in (Kind.WORD, Kind.QUOTED_ID):
            cur.next()
            return TableId(first, cur.identifier())
        if db is None:
            raise cur.error(f"table '{first}' is not qualified and no database is selected")
        return TableId(db, first)


def _split_statements(tokens: list[Token], sql: str) -> list[list[Token]]:
    """Split on top-level ';' except inside routine bodies (everything after CREATE ... PROCEDURE)."""
    out: list[list[Token]] = []
    current: list[Token] = []
    for i, tok in enumerate(tokens):
        if tok.is_symbol(";") and not _is_compound(current):
            if current:
                out.append(current)
            current = []
            continue
        current.append(tok)
    if current:
        out.append(current)
    return out


def _is_compound(tokens: list[Token]) -> bool:
    """Routine, trigger and event bodies contain ';' that do not end the statement."""
    if not tokens or not tokens[0].is_word("CREATE"):
        return False
    for tok in tokens[1:8]:
        if tok.is_word("PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"):
            return True
        if tok.is_word("TABLE", "DATABASE", "SCHEMA", "INDEX", "VIEW"):
            return False
    return False


def _is_db_option_start(tok: Token) -> bool:
    return tok.is_word("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ENCRYPTION", "READ", "COMMENT", "UPGRADE")
