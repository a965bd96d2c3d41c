"""ALTER TABLE specifications applied to a known table structure.

    ALTER TABLE customers ADD COLUMN middle VARCHAR(20) AFTER first_name, DROP COLUMN fax,
                          CHANGE name full_name VARCHAR(100), RENAME TO clients
      -> the customers TableDef with the columns edited in order and the id clients

Specifications are applied left to right, as the server does. Those that do not change the
columns, keys, character set, comment or name (ENGINE=..., indexes that are not unique,
partitioning, ALGORITHM=..., ...) are skipped up to the next top-level comma.
"""

from __future__ import annotations

from lakecdc.capture.mysql.ddl import column_list as cl
from lakecdc.capture.mysql.ddl.columns import column_definition, default_value
from lakecdc.capture.mysql.ddl.create_table import CONSTRAINT_STARTS, table_constraint
from lakecdc.capture.mysql.ddl.cursor import Cursor
from lakecdc.capture.mysql.ddl.model import NO_DEFAULT, ColumnDef, TableDef, TableId
from lakecdc.capture.mysql.ddl.options import TableOptions

_TABLE_OPTION_STARTS = ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT")


def alter_table(cur: Cursor, table: TableDef) -> TableDef:
    """Read the specifications after ``ALTER TABLE name``; returns the altered structure
    (its id differs from ``table.id`` after ``RENAME [TO]``)."""
    return _Alteration(cur, table).run()


class _Alteration:
    """The table's state while its specifications are applied one by one."""

    def __init__(self, cur: Cursor, table: TableDef) -> None:
        self.cur = cur
        self.table = table
        self.columns = list(table.columns)
        self.pk = table.primary_key
        self.uniques: cl.UniqueKeys = list(table.unique_keys)
        self.table_id = table.id
        self.charset = table.default_charset
        self.comment = table.comment

    def run(self) -> TableDef:
        cur = self.cur
        while not cur.at_end():
            if cur.accept_word("ADD"):
                self._add()
            elif cur.accept_word("DROP"):
                self._drop()
            elif cur.peek().is_word("MODIFY", "CHANGE"):
                self._modify_or_change(cur.next().upper == "CHANGE")
            elif cur.accept_word("RENAME"):
                self._rename()
            elif cur.accept_word("ALTER"):
                self._alter_column()
            elif cur.accept_word("CONVERT"):
                cur.expect_word("TO")
                cur.accept_word("CHARACTER") and cur.expect_word("SET")
                cur.accept_word("CHARSET")
                charset = cur.identifier()
                self.charset = charset
                self.columns = [cl.convert_charset(c, charset) for c in self.columns]
                cur.skip_to_top_level_comma()
            elif cur.peek().is_word(*_TABLE_OPTION_STARTS):
                option = TableOptions()
                option.read_one(cur)
                self.charset = option.resolved_charset or self.charset
                self.comment = option.comment if option.comment is not None else self.comment
            else:
                cur.skip_to_top_level_comma()
            # whatever the specification left unread, up to the comma that ends it
            if not cur.accept_symbol(","):
                cur.skip_to_top_level_comma()
                if not cur.accept_symbol(","):
                    if not cur.at_end():
                        cur.next()
        columns = cl.apply_pk_not_null(self.columns, self.pk)
        return self.table.with_columns(
            columns,
            id=self.table_id,
            primary_key=self.pk,
            unique_keys=tuple(self.uniques),
            default_charset=self.charset,
            comment=self.comment,
        )

    def _column(self) -> tuple[ColumnDef, bool]:
        """A column definition, its character set resolved against the table's."""
        col, col_pk, _ = column_definition(self.cur)
        return cl.resolve_charset(col, self.charset), col_pk

    def _placement(self) -> cl.Placement:
        cur = self.cur
        if cur.accept_word("FIRST"):
            return ("FIRST", None)
        if cur.accept_word("AFTER"):
            return ("AFTER", cur.identifier())
        return None

    # -- ADD -------------------------------------------------------------------------------------
    def _add(self) -> None:
        cur = self.cur
        if cur.peek().upper in CONSTRAINT_STARTS:
            kind, name, cols = table_constraint(cur)
            if kind == "PRIMARY":
                self.pk = cl.canonical_names(self.columns, cols)
                self.columns = cl.apply_pk_not_null(self.columns, self.pk)
            elif kind == "UNIQUE":
                self.uniques.append((name, cols))
            return
        cur.accept_word("COLUMN")
        if_not_exists = cur.accept_if_not_exists()
        if cur.peek_symbol("("):
            # ADD (a INT, b INT): appended in order, no placement, no inline UNIQUE

            def listed_column() -> None:
                col, col_pk = self._column()
                self.columns = cl.add_column(self.columns, col, None, if_not_exists)
                if col_pk:
                    self.pk = (col.name,)

            cur.parenthesized_list(listed_column)
            return
        col, col_pk, col_unique = column_definition(cur)
        col = cl.resolve_charset(col, self.charset)
        self.columns = cl.add_column(self.columns, col, self._placement(), if_not_exists)
        if col_pk:
            self.pk = (col.name,)
        if col_unique:
            self.uniques.append((col.name, (col.name,)))

    # -- DROP ------------------------------------------------------------------------------------
    def _drop(self) -> None:
        cur = self.cur
        if cur.accept_word("PRIMARY"):
            cur.expect_word("KEY")
            self.pk = ()
        elif cur.accept_word("INDEX", "KEY"):
            cur.accept_if_exists()
            name = cur.identifier().lower()
            self.uniques = [u for u in self.uniques if u[0].lower() != name]
        elif cur.accept_word("FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "PERIOD", "SYSTEM"):
            cur.skip_to_top_level_comma()
        else:
            cur.accept_word("COLUMN")
            if_exists = cur.accept_if_exists()
            name = cur.identifier()
            # a column dropped earlier in the same statement existed, so no error for it
            known = self.table.column_position(name) >= 0 or cl.find(self.columns, name) >= 0
            if not known and not if_exists:
                raise cur.error(f"DROP COLUMN names column '{name}', which table '{self.table_id}' does not have")
            lowered = name.lower()
            self.columns = cl.without(self.columns, name)
            self.pk = tuple(c for c in self.pk if c.lower() != lowered)
            uniques = [(n, tuple(c for c in cols if c.lower() != lowered)) for n, cols in self.uniques]
            self.uniques = [u for u in uniques if u[1]]
            cur.accept_word("RESTRICT", "CASCADE")

    # -- MODIFY / CHANGE -------------------------------------------------------------------------
    def _modify_or_change(self, change: bool) -> None:
        """``MODIFY [COLUMN] [IF EXISTS] c definition`` or ``CHANGE ... old c definition``."""
        cur = self.cur
        cur.accept_word("COLUMN")
        if_exists = cur.accept_if_exists()
        old = cur.identifier() if change else None
        col, col_pk = self._column()
        self._replace(col.name if old is None else old, col, if_exists, col_pk)
        if old is not None:
            self.uniques = cl.renamed_in_uniques(self.uniques, old, col.name)

    def _replace(self, old_name: str, col: ColumnDef, if_exists: bool, col_pk: bool) -> None:
        placement = self._placement()
        idx = cl.find(self.columns, old_name)
        if idx < 0:
            if not if_exists:
                raise self.cur.error(f"column '{old_name}' is not in table '{self.table_id}'")
        else:
            self.columns = cl.replace_column(self.columns, idx, col, placement)
            self.pk = cl.renamed_in(self.pk, old_name, col.name)
        if col_pk:
            self.pk = (col.name,)

    # -- RENAME ----------------------------------------------------------------------------------
    def _rename(self) -> None:
        cur = self.cur
        if cur.accept_word("COLUMN"):
            old = cur.identifier()
            cur.expect_word("TO")
            new = cur.identifier()
            idx = cl.find(self.columns, old)
            if idx < 0:
                raise cur.error(f"RENAME COLUMN names column '{old}', which table '{self.table_id}' does not have")
            self.columns[idx] = cl.renamed(self.columns[idx], new)
            self.pk = cl.renamed_in(self.pk, old, new)
            self.uniques = cl.renamed_in_uniques(self.uniques, old, new)
        elif cur.accept_word("INDEX", "KEY"):
            old = cur.identifier().lower()
            cur.expect_word("TO")
            new = cur.identifier()
            self.uniques = [(new if n.lower() == old else n, cols) for n, cols in self.uniques]
        else:
            cur.accept_word("TO", "AS")
            first = cur.identifier()
            if cur.accept_symbol("."):
                self.table_id = TableId(first, cur.identifier())
            else:
                self.table_id = TableId(self.table_id.database, first)

    # -- ALTER [COLUMN] c SET DEFAULT ... / DROP DEFAULT -----------------------------------------
    def _alter_column(self) -> None:
        cur = self.cur
        cur.accept_word("COLUMN")
        idx = cl.find(self.columns, cur.identifier())
        if cur.accept_word("SET"):
            if not cur.accept_word("DEFAULT"):
                cur.skip_to_top_level_comma()  # SET VISIBLE / INVISIBLE
                return
            default = default_value(cur)
            if idx >= 0:
                self.columns[idx] = cl.with_default(self.columns[idx], default)
        elif cur.accept_word("DROP"):
            cur.expect_word("DEFAULT")
            if idx >= 0:
                self.columns[idx] = cl.with_default(self.columns[idx], NO_DEFAULT)
        else:
            cur.skip_to_top_level_comma()
