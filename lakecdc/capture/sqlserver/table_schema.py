"""Event structure per capture instance: topic, key/value/envelope schemas and row builders.

A capture instance fixes the columns its change table holds (``captured_column_list``), so the structure
is built per instance, not per source table: after an online schema change (Debezium SQL Server
documentation, "Database schema evolution") the old and the new instance of ``dbo.customers`` have
different value schemas. Rows are handed over as tuples in the instance's captured column order (the
snapshot selects exactly those columns; change rows are the same after their ``__$`` metadata columns).
Example for ``testDB.dbo.customers`` under prefix ``server1``::

    topic      server1.testDB.dbo.customers
    key schema {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],
                "optional":false,"name":"server1.testDB.dbo.customers.Key"}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# the generated row builder and the record factory are the MySQL connector's, shared as they are
from lakecdc.capture.mysql.change_records import RecordFactory
from lakecdc.capture.row_builder import compile_row_builder
from lakecdc.capture.sqlserver.connection import CaptureInstance, ColumnDef, TableDef
from lakecdc.capture.sqlserver.errors import SqlServerTypeError
from lakecdc.capture.sqlserver.types import TypeModes, column_schema, value_converter
from lakecdc.config.filters import ColumnFilter, KeyColumns
from lakecdc.events.envelope import ChangeRecord, envelope_schema
from lakecdc.events.schema import ConnectSchema, struct
from lakecdc.events.source import source_schema
from lakecdc.events.topics import TableId, TopicNamer

_PASSTHROUGH = frozenset({"tinyint", "smallint", "int", "bigint", "char", "varchar", "text", "nchar",
                          "nvarchar", "ntext", "xml", "sysname"})


@dataclass(frozen=True)
class _Columns:
    """What ``RecordFactory`` looks at on ``schema.table``."""

    columns: tuple[ColumnDef, ...]


@dataclass(frozen=True)
class InstanceSchema:
    instance: CaptureInstance
    table_id: TableId
    columns: tuple[ColumnDef, ...]  # captured columns, in change-table order
    topic: str
    data_collection: str
    key_schema: ConnectSchema | None
    value_schema: ConnectSchema
    envelope_schema: ConnectSchema
    row: Callable[[Any], dict[str, Any]]
    _key: Callable[[Any], dict[str, Any]] | None
    table: _Columns

    def key(self, values: Any) -> dict[str, Any] | None:
        return None if self._key is None else self._key(values)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _convert(col: ColumnDef, modes: TypeModes) -> Callable[[Any], Any] | None:
    return None if col.type_name in _PASSTHROUGH else value_converter(col, modes)


def build_instance_schema(
    database: str,
    instance: CaptureInstance,
    table: TableDef,
    namer: TopicNamer,
    modes: TypeModes,
    column_filter: ColumnFilter | None = None,
    key_override: KeyColumns | None = None,
) -> InstanceSchema:
    by_name = {c.name: c for c in table.columns}
    missing = [n for n in instance.captured_columns if n not in by_name]
    # a captured column dropped from the source table keeps its change-table column: SQL Server
    # refuses that DDL on CDC tables, so this only happens with a structure read mid-change
    if missing:
        raise SqlServerTypeError(
            f"capture instance '{instance.name}' captures columns {missing} that table "
            f"'{table.schema}.{table.table}' no longer has; create a new capture instance (Debezium SQL Server "
            "documentation, 'Database schema evolution')"
        )
    columns = tuple(by_name[n] for n in instance.captured_columns) if instance.captured_columns else table.columns
    table_id = TableId(database, table.schema, table.table)
    fields: list[tuple[str, ConnectSchema]] = []
    value_fields: list[tuple[str, int, Callable[[Any], Any] | None]] = []
    for i, col in enumerate(columns):
        if column_filter is not None and not column_filter.is_trivial and \
                not column_filter.matches(table.schema, table.table, col.name):
            continue
        try:
            fields.append((col.name, column_schema(col, modes)))
        except SqlServerTypeError as exc:
            raise SqlServerTypeError(f"table '{table.schema}.{table.table}': {exc}") from None
        value_fields.append((col.name, i, _convert(col, modes)))
    key_names = list(table.primary_key) or list(instance.index_columns)
    if key_override:
        override = key_override.for_table(table.schema, table.table)
        if override is not None:
            key_names = list(override)
    positions = {c.name: i for i, c in enumerate(columns)}
    key_fields: list[tuple[str, ConnectSchema]] = []
    key_builders: list[tuple[str, int, Callable[[Any], Any] | None]] = []
    for name in key_names:
        if name not in positions:
            raise SqlServerTypeError(
                f"key column '{name}' of table '{table.schema}.{table.table}' is not captured by capture "
                f"instance '{instance.name}' (check message.key.columns)"
            )
        col = columns[positions[name]]
        key_fields.append((col.name, column_schema(col, modes)))
        key_builders.append((col.name, positions[name], _convert(col, modes)))
    value_schema = struct(fields, optional=True, name=namer.value_schema_name(table_id))
    key_schema = struct(key_fields, name=namer.key_schema_name(table_id)) if key_fields else None
    return InstanceSchema(
        instance=instance,
        table_id=table_id,
        columns=columns,
        topic=namer.data_topic(table_id),
        data_collection=namer.data_collection(table_id),
        key_schema=key_schema,
        value_schema=value_schema,
        envelope_schema=envelope_schema(value_schema, source_schema("sqlserver"), namer.envelope_schema_name(table_id)),
        row=compile_row_builder(value_fields),
        _key=compile_row_builder(key_builders) if key_builders else None,
        table=_Columns(columns),
    )


def record_factory(schema: InstanceSchema, tombstones_on_delete: bool) -> RecordFactory:
    return RecordFactory(schema, tombstones_on_delete)  # type: ignore[arg-type]


def with_headers(records: list[ChangeRecord], headers: list[tuple[str, bytes]]) -> list[ChangeRecord]:
    """Data records with the context headers after their own (key-change) headers; a tombstone
    carries the headers of the delete it follows, as Debezium 3 writes them."""
    out: list[ChangeRecord] = []
    for r in records:
        if r.value is None and out and out[-1].key == r.key:
            own = out[-1].headers
        elif headers:
            own = [*r.headers, *headers] if r.headers else headers  # the shared list: never mutated
        else:
            own = r.headers
        # positional construction: several times cheaper than dataclasses.replace on the hot path
        out.append(r if own is r.headers else
                   ChangeRecord(r.topic, r.key_schema, r.key, r.value_schema, r.value, own, r.position))
    return out
