"""The Oracle connector's view of the source schema with DDL (Debezium ``OracleDatabaseSchema``):
the table model that decodes the redo, changed by each DDL row LogMiner delivers, recorded in the
schema history before any event that depends on it, and announced on the schema change topic.

DDL rows (OPERATION_CODE 5) are applied when they are mined: Oracle takes an exclusive lock for
DDL, so no open transaction has changes of the table when its DDL happens, and every change
committed after it (decoded at its COMMIT) sees the new structure.
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.oracle.ddl.model import OracleTable, TableChange
from lakecdc.capture.oracle.ddl.parser import OracleDdlParser
from lakecdc.capture.oracle.errors import OracleDdlParseError
from lakecdc.capture.oracle.schema_history import OracleSchemaHistory
from lakecdc.capture.oracle.table_changes import create_table_ddl, table_change_json
from lakecdc.capture.oracle.table_schema import TableSchemas
from lakecdc.capture.oracle.types import TypeModes
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


class OracleDatabaseSchema(TableSchemas):
    def __init__(self, conn: Any, config: Any, namer: TopicNamer, modes: TypeModes,
                 history: OracleSchemaHistory | None) -> None:
        super().__init__(conn, config, namer, modes)
        self.history = history
        self.parser = OracleDdlParser(self.tables)
        #: the SCN a table read from the dictionary is recorded at (the row being decoded)
        self.scn = 0

    def recover(self, restart_scn: int) -> int:
        if self.history is None:
            return 0
        applied = self.history.recover(restart_scn, self.tables)
        if applied:
            log.info("schema history: %d statements replayed up to SCN %d (%d tables known)", applied,
                     restart_scn, len(self.tables))
        return applied

    def discovered(self, table: OracleTable) -> None:
        if self.history is not None:
            self.history.record(self.scn, self.config.source_db, table.owner, create_table_ddl(table),
                                [table_change_json(TableChange("CREATE", table), self.config.source_db)])

    def snapshot_table(self, owner: str, table: str, scn: int, first: bool) -> TableChange:
        """A captured table's structure as the snapshot reads it, recorded in the history."""
        structure = self.read_dictionary(owner, table)
        self.tables.put(structure)
        change = TableChange("CREATE", structure)
        if self.history is not None:
            self.history.record(scn, self.config.source_db, owner, create_table_ddl(structure),
                                [table_change_json(change, self.config.source_db)], snapshot=True, first=first)
        return change

    def apply_ddl(self, sql: str, owner: str, table: str, scn: int) -> list[TableChange]:
        """Apply a DDL row of ``owner.table``; the changes to announce (captured tables only)."""
        captured = self.is_captured(owner, table)
        if not captured and self.config.schema_history_internal_store_only_captured_tables_ddl:
            return []
        text = sql.strip()
        record_ddl = text
        if captured and self.tables.get(owner, table) is None and _is_alter(text):
            # the model never had this table (no snapshot of it, no history): the dictionary already
            # describes it as this DDL left it, so that is the structure, recorded as a CREATE
            structure = self.read_dictionary(owner, table)
            self.tables.put(structure)
            changes = [TableChange("ALTER", structure)]
            record_ddl = create_table_ddl(structure)
        else:
            try:
                changes = self.parser.parse(text, owner)
            except OracleDdlParseError as exc:
                located = exc.at(scn)
                if captured and _leading_words(text, 2) == ["CREATE", "TABLE"] and " AS " in f" {text.upper()} ":
                    # CREATE TABLE ... AS SELECT names no columns: the dictionary has them
                    structure = self.read_dictionary(owner, table)
                    self.tables.put(structure)
                    changes, record_ddl = [TableChange("CREATE", structure)], create_table_ddl(structure)
                    return self._recorded(changes, record_ddl, owner, table, scn)
                if not captured:
                    # structures of tables that are not captured are kept on a best-effort basis
                    log.info("%s; skipped: %s.%s is not captured", located, owner, table)
                    return []
                if self.config.schema_history_internal_skip_unparseable_ddl:
                    log.warning("%s; skipped because schema.history.internal.skip.unparseable.ddl is set", located)
                    return []
                raise located from None
        return self._recorded(changes, record_ddl, owner, table, scn)

    def _recorded(self, changes: list[TableChange], record_ddl: str, owner: str, table: str,
                  scn: int) -> list[TableChange]:
        if not changes:
            return []
        if self.history is not None:
            self.history.record(scn, self.config.source_db, owner, record_ddl,
                                [table_change_json(c, self.config.source_db) for c in changes])
        log.info("DDL on %s.%s at SCN %d: %s", owner, table, scn, ", ".join(c.type for c in changes))
        return [c for c in changes if self.is_captured(c.table.owner, c.table.name)
                or (c.previous is not None and self.is_captured(*c.previous))]


def _leading_words(text: str, n: int) -> list[str]:
    return text[:40].upper().split()[:n]


def _is_alter(text: str) -> bool:
    return _leading_words(text, 2) == ["ALTER", "TABLE"]
