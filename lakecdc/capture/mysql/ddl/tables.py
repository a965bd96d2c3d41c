"""The registry of table structures the DDL parser edits (Debezium's ``Tables``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lakecdc.capture.mysql.ddl.model import TableDef, TableId


@dataclass
class Tables:
    """Every known table (captured or not: gh-ost/pt-osc swap helper tables in by RENAME).

    Lookups are case-insensitive on database and table names, as on MySQL with
    ``lower_case_table_names`` = 1 or 2; names keep the case they were created with.
    """

    tables: dict[tuple[str, str], TableDef] = field(default_factory=dict)
    database_charsets: dict[str, str | None] = field(default_factory=dict)
    server_charset: str | None = None

    @staticmethod
    def _key(table_id: TableId) -> tuple[str, str]:
        return (table_id.database.lower(), table_id.table.lower())

    def get(self, table_id: TableId) -> TableDef | None:
        return self.tables.get(self._key(table_id))

    def put(self, table: TableDef) -> None:
        self.tables[self._key(table.id)] = table

    def remove(self, table_id: TableId) -> TableDef | None:
        return self.tables.pop(self._key(table_id), None)

    def __iter__(self) -> Iterator[TableDef]:
        return iter(list(self.tables.values()))

    def __len__(self) -> int:
        return len(self.tables)

    def in_database(self, database: str) -> list[TableDef]:
        db = database.lower()
        return [t for (d, _), t in self.tables.items() if d == db]

    def drop_database(self, database: str) -> list[TableDef]:
        dropped = self.in_database(database)
        for t in dropped:
            self.remove(t.id)
        self.database_charsets.pop(database.lower(), None)
        return dropped

    def charset_for(self, database: str) -> str | None:
        return self.database_charsets.get(database.lower()) or self.server_charset

    def copy(self) -> Tables:
        return Tables(dict(self.tables), dict(self.database_charsets), self.server_charset)
