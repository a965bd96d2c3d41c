"""Which tables are captured, through which capture instances, with which event structure; and
the CDC setup checks that name what is missing (Debezium SQL Server documentation, "Setting up SQL
Server": enabling CDC on the database and on each table).

Checks at every start, each failure naming the fix::

    CDC off for the database       -> USE [testDB]; EXEC sys.sp_cdc_enable_db;
    a table.include.list table
    without CDC                    -> EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', ...
    tracked tables, no instance
    visible to the login           -> SELECT on the captured columns / the gating role

A source table may have two capture instances during an online schema change (Debezium SQL
Server documentation, "Database schema evolution"):
each instance is read for the LSNs before the next one's start LSN, so events switch to the new
structure exactly where the new change table begins.
"""

from __future__ import annotations

import logging
from typing import Any

from lakecdc.capture.mysql.change_records import RecordFactory
from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.connection import CaptureInstance, TableDef
from lakecdc.capture.sqlserver.errors import CdcNotEnabledError
from lakecdc.capture.sqlserver.table_schema import InstanceSchema, build_instance_schema, record_factory
from lakecdc.capture.sqlserver.types import TypeModes
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)

TableKey = tuple[str, str]  # (schema, table)


def enable_table_sql(schema: str, table: str) -> str:
    return (f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', @source_name = N'{table}', "
            "@role_name = NULL, @supports_net_changes = 0;")


class DatabaseSchema:
    def __init__(self, config: Any, modes: TypeModes, namer: TopicNamer) -> None:
        self.config = config
        self.database: str = config.database
        self.modes = modes
        self.namer = namer
        self.instances: dict[TableKey, list[CaptureInstance]] = {}  # per table, by start LSN
        self._tables: dict[TableKey, TableDef] = {}
        self._schemas: dict[str, InstanceSchema] = {}
        self._factories: dict[str, RecordFactory] = {}

    # ---- discovery ----------------------------------------------------------------------------
    def load(self, conn: Any) -> None:
        """Check the CDC setup and read every captured table's instances and structure."""
        db = self.database
        if not sq.cdc_enabled_on_database(conn, db):
            raise CdcNotEnabledError(
                f"CDC is not enabled on database '{db}'. As a member of sysadmin, with SQL Server Agent "
                f"running, run: USE [{db}]; EXEC sys.sp_cdc_enable_db; then enable each table to capture "
                f"with {enable_table_sql('dbo', '<table>')}"
            )
        tables = [(s, t, tracked) for s, t, tracked in sq.user_tables(conn)
                  if self._wanted(s, t)]
        visible = [i for i in sq.capture_instances(conn) if self._wanted(i.source_schema, i.source_table)]
        by_table: dict[TableKey, list[CaptureInstance]] = {}
        for inst in visible:
            by_table.setdefault(inst.table_key, []).append(inst)
        untracked = [(s, t) for s, t, tracked in tables if not tracked]
        hidden = [(s, t) for s, t, tracked in tables if tracked and (s, t) not in by_table]
        if untracked:
            fixes = " ".join(enable_table_sql(s, t) for s, t in untracked)
            names = ", ".join(f"{s}.{t}" for s, t in untracked)
            if self.config.table_include_list:
                raise CdcNotEnabledError(
                    f"CDC is not enabled on table(s) {names} of database '{db}', which table.include.list "
                    f"selects. Run (as db_owner, SQL Server Agent running): USE [{db}]; {fixes}"
                )
            log.warning("tables %s have no CDC and are not captured; to capture them run: %s", names, fixes)
        if hidden:
            names = ", ".join(f"{s}.{t}" for s, t in hidden)
            raise CdcNotEnabledError(
                f"table(s) {names} of database '{db}' are CDC-enabled but sys.sp_cdc_help_change_data_capture "
                f"shows no capture instance for them to user '{self.config.database_user}': grant SELECT on "
                "their captured columns (or membership in the capture instance's @role_name role)"
            )
        if not by_table:
            raise CdcNotEnabledError(
                f"no CDC-enabled table of database '{db}' matches the table filters; enable one with "
                f"USE [{db}]; {enable_table_sql('dbo', '<table>')}"
            )
        self.instances = {k: sorted(v, key=lambda i: (i.start_lsn or 0, i.name)) for k, v in sorted(by_table.items())}
        for key, instances in self.instances.items():
            if len(instances) > 1:
                log.info("Multiple capture instances present for the same table %s.%s: %s", *key,
                         ", ".join(f"{i.name} [startLsn={sq.lsn_text(i.start_lsn)}]" for i in instances))
            self._tables[key] = sq.table_def(conn, *key)
        self._schemas = {}
        self._factories = {}

    def refresh(self, conn: Any) -> list[CaptureInstance]:
        """Re-read the capture instances; returns the ones that appeared since the last read."""
        known = {i.name for insts in self.instances.values() for i in insts}
        added = []
        for inst in sq.capture_instances(conn):
            if inst.name in known or inst.table_key not in self.instances:
                continue
            self.instances[inst.table_key] = sorted([*self.instances[inst.table_key], inst],
                                                    key=lambda i: (i.start_lsn or 0, i.name))
            # a new instance follows a structure change: read the table's columns again
            self._tables[inst.table_key] = sq.table_def(conn, *inst.table_key)
            log.info("Multiple capture instances present for the same table %s.%s: %s", *inst.table_key,
                     ", ".join(f"{i.name} [startLsn={sq.lsn_text(i.start_lsn)}]"
                               for i in self.instances[inst.table_key]))
            added.append(inst)
        return added

    def _wanted(self, schema: str, table: str) -> bool:
        if schema in self.config.excluded_schemas:
            return False
        if self.config.table_ignore_builtin and table in ("systranschemas", "sysdiagrams"):
            return False
        return bool(self.config.table_filter.matches(schema, table))

    # ---- lookups ------------------------------------------------------------------------------
    def tables(self) -> list[TableKey]:
        return list(self.instances)

    def instance_at(self, key: TableKey, lsn: int) -> CaptureInstance:
        """The instance whose change table holds ``key``'s changes at ``lsn``."""
        instances = self.instances[key]
        chosen = instances[0]
        for inst in instances:
            if (inst.start_lsn or 0) <= lsn:
                chosen = inst
        return chosen

    def stop_lsn(self, inst: CaptureInstance) -> int | None:
        """The next instance's start LSN: where ``inst`` stops being read (None: still current)."""
        instances = self.instances[inst.table_key]
        i = instances.index(inst)
        return instances[i + 1].start_lsn if i + 1 < len(instances) else None

    def primary_key(self, inst: CaptureInstance) -> tuple[str, ...]:
        return self._tables[inst.table_key].primary_key

    def schema(self, inst: CaptureInstance) -> InstanceSchema:
        if inst.name not in self._schemas:
            self._schemas[inst.name] = build_instance_schema(
                self.database, inst, self._tables[inst.table_key], self.namer, self.modes,
                self.config.column_filter, self.config.key_columns)
        return self._schemas[inst.name]

    def factory(self, inst: CaptureInstance) -> RecordFactory:
        if inst.name not in self._factories:
            self._factories[inst.name] = record_factory(self.schema(inst), self.config.tombstones_on_delete)
        return self._factories[inst.name]
