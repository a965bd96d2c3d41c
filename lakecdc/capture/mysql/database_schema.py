"""The connector's view of the source schema (Debezium ``MySqlDatabaseSchema``).

Holds the table structures (``Tables``) the DDL parser maintains, decides which tables are
captured, records DDL in the schema history, and keeps one ``RecordFactory`` per captured table
structure so the hot path is a dictionary lookup.
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.mysql.change_records import RecordFactory, schema_change_record
from lakecdc.capture.mysql.ddl.model import TableDef, TableId
from lakecdc.capture.mysql.ddl.parser import AlterOfUnknownTableError, DdlParseError, DdlParser, ParsedStatement
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.schema_history import SchemaHistory
from lakecdc.capture.mysql.table_changes import (
    schema_change_key_schema,
    schema_change_value_schema,
    table_change_json,
)
from lakecdc.capture.mysql.table_schema import build_table_schema
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import MySqlPosition
from lakecdc.events.source import source_schema
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)

_DATABASE_STATEMENTS = frozenset({"CREATE_DATABASE", "DROP_DATABASE", "ALTER_DATABASE"})


class DatabaseSchema:
    def __init__(self, config: Any, modes: TypeModes, namer: TopicNamer, history: SchemaHistory,
                 headers: list[tuple[str, bytes]] | None = None) -> None:
        self.config = config
        # Debezium 3's context headers (one runId per connector run: the connector passes its own)
        self.headers = headers if headers is not None else config.data_headers()
        self.modes = modes
        self.namer = namer
        self.history = history
        self.connector = config.connector_type
        self.tables = Tables()
        self.parser = DdlParser(self.tables)
        self._factories: dict[tuple[str, str], RecordFactory | None] = {}
        self._captured: dict[tuple[str, str], bool] = {}
        self._source_schema = source_schema(self.connector)
        self.change_key_schema = schema_change_key_schema(self.connector)
        self.change_value_schema = schema_change_value_schema(self.connector)

    # -- filters -------------------------------------------------------------------------------
    def is_captured(self, database: str, table: str) -> bool:
        key = (database, table)
        hit = self._captured.get(key)
        if hit is None:
            hit = self.config.table_filter.matches(database, table)
            self._captured[key] = hit
        return hit

    def is_database_captured(self, database: str) -> bool:
        return self.config.table_filter.matches_schema(database)

    # -- factories -----------------------------------------------------------------------------
    def factory(self, database: str, table: str) -> RecordFactory | None:
        """The record factory for a captured table; None when the table is not captured."""
        key = (database, table)
        try:
            return self._factories[key]
        except KeyError:
            pass
        factory = None
        if self.is_captured(database, table):
            structure = self.tables.get(TableId(database, table))
            if structure is not None:
                factory = self._build(structure)
        self._factories[key] = factory
        return factory

    def _build(self, table: TableDef) -> RecordFactory:
        schema = build_table_schema(
            table, self.namer, self.modes, self.config.column_filter, self.config.key_columns, self._source_schema
        )
        return RecordFactory(schema, self.config.tombstones_on_delete, self.headers,
                             getattr(self.config, "header_schemas_enable", True))

    def structure(self, database: str, table: str) -> TableDef | None:
        return self.tables.get(TableId(database, table))

    def captured_tables(self) -> list[TableDef]:
        return [t for t in self.tables if self.is_captured(t.id.database, t.id.table)]

    # -- DDL -----------------------------------------------------------------------------------
    def apply_ddl(self, sql: str, default_database: str | None, position: dict[str, Any],
                  where: str, ts_ms: int | None = None) -> list[ParsedStatement]:
        """Parse ``sql``, update the structures and record it in the history (before any event
        that depends on it is emitted). ``where`` names the binlog position for errors."""
        try:
            statements = self.parser.parse(sql, default_database)
        except DdlParseError as exc:
            if (isinstance(exc, AlterOfUnknownTableError)
                    and not self.is_captured(exc.table_id.database, exc.table_id.table)):
                # Debezium ignores an ALTER of a table it holds no structure of (one not captured whose
                # structure was not recorded: schema.history.internal.store.only.captured.tables.ddl)
                log.info("ignored at %s: ALTER TABLE of %s, which is not captured and whose structure is not known",
                         where, exc.table_id)
                return []
            located = exc.at(where)
            if self._concerns_no_captured_database(sql, default_database):
                # structures of databases that are not captured are kept only on a best-effort basis
                log.warning("%s; skipped: it concerns database %s, which is not captured", located, default_database)
                return []
            if self.config.schema_history_internal_skip_unparseable_ddl:
                log.warning("%s; skipped because schema.history.internal.skip.unparseable.ddl is set", located)
                return []
            raise located from None
        for statement in statements:
            if (statement.kind in ("IGNORED", "USE")
                    and not statement.text.upper().startswith("SET CHARACTER_SET_SERVER")):
                continue
            if statement.kind == "TRUNCATE":
                continue  # no structure change; a data event, not history
            if not self._stored(statement):
                continue
            self.history.record(position, statement.database, statement.text,
                                [table_change_json(c) for c in statement.changes], ts_ms)
            for change in statement.changes:
                self._forget(change.table.id)
                if change.previous_id is not None:
                    self._forget(change.previous_id)
            if statement.dropped_database:
                self._factories.clear()
        return statements

    def _concerns_no_captured_database(self, sql: str, default_database: str | None) -> bool:
        """True when a statement's session database is not captured and no captured database is named in it."""
        if default_database is None or self.is_database_captured(default_database):
            return False
        lowered = sql.lower()
        known = {t.id.database for t in self.tables} | set(self.tables.database_charsets)
        return not any(db.lower() in lowered for db in known if self.is_database_captured(db))

    def _forget(self, table_id: TableId) -> None:
        self._factories.pop((table_id.database, table_id.table), None)
        # names are case-insensitive: drop any cached spelling
        lowered = (table_id.database.lower(), table_id.table.lower())
        for key in [k for k in self._factories if (k[0].lower(), k[1].lower()) == lowered]:
            del self._factories[key]

    def _stored(self, statement: ParsedStatement) -> bool:
        """Whether the schema history records ``statement`` (Debezium's
        ``HistorizedRelationalDatabaseSchema.skipSchemaChangeEvent`` and ``storeOnlyCapturedTables``):
        ``schema.history.internal.store.only.captured.databases.ddl`` leaves out statements run in a
        database the filters do not capture, ``...captured.tables.ddl`` those touching no captured table."""
        config = self.config
        if (config.schema_history_internal_store_only_captured_databases_ddl and statement.database
                and not self.is_database_captured(statement.database)):
            return False
        return not (config.schema_history_internal_store_only_captured_tables_ddl and not self._relevant(statement))

    def _relevant(self, statement: ParsedStatement) -> bool:
        if statement.kind in _DATABASE_STATEMENTS:
            return statement.database is not None and self.is_database_captured(statement.database)
        return any(
            self.is_captured(c.table.id.database, c.table.id.table)
            or (c.previous_id is not None and self.is_captured(c.previous_id.database, c.previous_id.table))
            for c in statement.changes
        )

    def schema_change_records(self, statement: ParsedStatement, source: dict[str, Any],
                              position: MySqlPosition) -> list[ChangeRecord]:
        """The schema change topic record for a statement. As Debezium's ``EventDispatcher.
        dispatchSchemaChangeEvent``: a statement on tables that are not captured is emitted too unless
        ``schema.history.internal.store.only.captured.tables.ddl`` is set, and one run in a database
        that is not captured is left out with ``...store.only.captured.databases.ddl``
        (``skipSchemaChangeEvent``) -- exactly the statements the schema history records."""
        if not self.config.include_schema_changes or statement.database is None:
            return []
        if statement.kind in ("IGNORED", "USE", "TRUNCATE") or not self._stored(statement):
            return []
        changes = statement.changes
        if self.config.schema_history_internal_store_only_captured_tables_ddl:
            changes = [c for c in changes if self.is_captured(c.table.id.database, c.table.id.table)
                       or (c.previous_id is not None and self.is_captured(c.previous_id.database, c.previous_id.table))]
        include_comments = bool(getattr(self.config, "include_schema_comments", False))
        return [
            schema_change_record(
                self.namer.schema_change_topic, self.change_key_schema, self.change_value_schema, source,
                statement.database, statement.text, [table_change_json(c, include_comments) for c in changes],
                position, self.headers,
            )
        ]
