"""Per-table event shape, built once per table and schema version (never per event).

A ``TableSchema`` knows, for one captured table: its topic, key and value Connect schemas, the
envelope schema, which tuple positions feed which field, and the value converters. Snapshot rows
(COPY text) and streamed tuples (pgoutput text) go through the same ``row()`` / ``key()``.

Key columns are the primary key read from the catalog (Debezium reads them over JDBC, not from
pgoutput), or ``message.key.columns`` when that names the table; no key -> the key is null.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.connection import primary_key_columns
from lakecdc.capture.postgres.decoder import RelationMessage
from lakecdc.capture.postgres.types import (
    PgColumn,
    TypeModes,
    column_schema,
    load_table_columns,
    load_type_catalog,
    value_converter,
)
from lakecdc.errors import ConfigError
from lakecdc.events.envelope import envelope_schema
from lakecdc.events.schema import ConnectSchema, struct
from lakecdc.events.source import source_schema
from lakecdc.events.topics import TableId, TopicNamer

log = logging.getLogger(__name__)

POSTGRES_SOURCE = source_schema("postgresql")

Converter = Callable[[Any], Any]


class TableSchema:
    """Everything needed to turn a text tuple of one table into key and value payloads."""

    __slots__ = (
        "table_id", "topic", "columns", "key_schema", "value_schema", "envelope", "data_collection",
        "_fields", "_key_fields", "has_key", "column_names", "row", "key",
    )

    def __init__(
        self,
        table_id: TableId,
        columns: Sequence[PgColumn],
        key_columns: Sequence[str],
        config: PostgresConnectorConfig,
        modes: TypeModes,
        namer: TopicNamer,
        snapshot: bool = False,
    ) -> None:
        self.table_id = table_id
        self.topic = namer.data_topic(table_id)
        self.columns = list(columns)
        self.data_collection = namer.data_collection(table_id)
        self.column_names = [c.name for c in columns]
        fields: list[tuple[str, int, Converter]] = []
        value_fields: list[tuple[str, ConnectSchema]] = []
        schemas_by_name: dict[str, tuple[int, ConnectSchema, Converter]] = {}
        col_filter = config.column_filter
        schema_name = str(table_id.schema)  # a PostgreSQL table always has one
        for index, col in enumerate(columns):
            schema = column_schema(col, modes)
            if schema is None:
                continue  # a type Debezium drops (include.unknown.datatypes=false)
            # snapshot rows: the values Debezium reads over JDBC (differ for a few types)
            convert = value_converter(col, modes, snapshot=snapshot)
            schemas_by_name[col.name] = (index, schema, convert)
            if col_filter.is_trivial or col_filter.matches(schema_name, table_id.table, col.name):
                fields.append((col.name, index, convert))
                value_fields.append((col.name, schema))
        missing = [k for k in key_columns if k not in schemas_by_name]
        if missing:
            raise ConfigError(
                f"key columns {missing} are not columns of table {table_id} "
                f"(columns: {', '.join(self.column_names)})",
                "message.key.columns",
            )
        self._fields = tuple(fields)
        self._key_fields = tuple((k, schemas_by_name[k][0], schemas_by_name[k][2]) for k in key_columns)
        self.has_key = bool(key_columns)
        #: text tuple (relation order) -> row payload in field order
        self.row: Callable[[Sequence[Any]], dict[str, Any]] = _compile_row(self._fields)
        #: text tuple -> key payload, or None for a table without key
        self.key: Callable[[Sequence[Any]], dict[str, Any] | None] = (
            _compile_row(self._key_fields) if key_columns else _no_key
        )
        self.value_schema = struct(value_fields, optional=True, name=namer.value_schema_name(table_id))
        self.key_schema = (
            struct([(k, schemas_by_name[k][1]) for k in key_columns], name=namer.key_schema_name(table_id))
            if key_columns
            else None
        )
        self.envelope = envelope_schema(self.value_schema, POSTGRES_SOURCE, namer.envelope_schema_name(table_id))

    def same_shape(self, columns: Sequence[PgColumn]) -> bool:
        return [(c.name, c.type_oid, c.typmod) for c in columns] == [
            (c.name, c.type_oid, c.typmod) for c in self.columns
        ]


def _no_key(values: Sequence[Any]) -> None:
    return None


def _compile_row(fields: Sequence[tuple[str, int, Converter]]) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """One function per table: ``lambda v: {"id": c0(v[0]), "name": c1(v[1]), ...}``.

    A dict display with constant keys is about twice as fast as a comprehension over
    (name, index, converter) triples, and this runs for every row of every event.
    """
    names = {f"c{i}": convert for i, (_, _, convert) in enumerate(fields)}
    items = ", ".join(f"{name!r}: c{i}(v[{index}])" for i, (name, index, _) in enumerate(fields))
    code = f"def row(v):\n    return {{{items}}}\n"
    namespace: dict[str, Any] = dict(names)
    exec(compile(code, "<lakecdc row builder>", "exec"), namespace)  # noqa: S102 - names are repr()-quoted
    return namespace["row"]


def key_columns_for(config: PostgresConnectorConfig, table: TableId, primary_key: list[str]) -> list[str]:
    override = config.key_columns.for_table(table.schema or "", table.table)
    return list(override) if override else primary_key


class TableSchemas:
    """The schemas of captured tables: from the catalog for the snapshot, and rebuilt from each
    pgoutput Relation message while streaming (a Relation precedes the first change after DDL)."""

    def __init__(
        self, conn: Any, config: PostgresConnectorConfig, modes: TypeModes, namer: TopicNamer
    ) -> None:
        self.conn = conn
        self.config = config
        self.modes = modes
        self.namer = namer
        self.catalog = load_type_catalog(conn)
        self._by_relation: dict[int, TableSchema | None] = {}

    def captured(self, schema: str, table: str) -> bool:
        return self.config.table_filter.matches(schema, table)

    def for_table(self, table: TableId, snapshot: bool = True) -> TableSchema:
        """Current catalog shape of ``table`` (snapshot path)."""
        columns = load_table_columns(self.conn, self.catalog, table.schema or "public", table.table)
        return self._build(table, columns, snapshot)

    def for_relation(self, message: RelationMessage) -> TableSchema | None:
        """Schema for a Relation message; None when the table is not captured."""
        if not self.captured(message.namespace, message.name):
            self._by_relation[message.relation_id] = None
            return None
        table = TableId(None, message.namespace, message.name)
        if any(self.catalog.get(c.type_oid) is None for c in message.columns):
            self.catalog.refresh(self.conn)
        try:
            catalog_columns = {
                c.name: c
                for c in load_table_columns(self.conn, self.catalog, message.namespace, message.name)
            }
        except psycopg.OperationalError:  # connection lost: the streaming source reconnects
            raise
        except Exception:  # table dropped since: the relation message alone describes it
            log.debug("table %s no longer in the catalog; using the relation message only", table)
            catalog_columns = {}
        columns = []
        for rc in message.columns:
            known = catalog_columns.get(rc.name)
            columns.append(
                PgColumn.from_relation(
                    self.catalog, rc.name, rc.type_oid, rc.typmod,
                    not_null=known.not_null if known else False,
                    default_expr=known.default_expr if known else None,
                )
            )
        built = self._build(table, columns)
        previous = self._by_relation.get(message.relation_id)
        if previous is not None and not previous.same_shape(columns):
            log.info("table %s changed shape; later events use the new schema", table)
        self._by_relation[message.relation_id] = built
        return built

    def by_relation_id(self, relation_id: int) -> TableSchema | None:
        return self._by_relation.get(relation_id)

    def knows(self, relation_id: int) -> bool:
        return relation_id in self._by_relation

    def _build(self, table: TableId, columns: Sequence[PgColumn], snapshot: bool = False) -> TableSchema:
        try:
            primary_key = primary_key_columns(self.conn, table)
        except psycopg.OperationalError:  # connection lost, not "no key": never emit a keyless event
            raise
        except Exception:
            primary_key = []
        keys = key_columns_for(self.config, table, primary_key)
        return TableSchema(table, columns, keys, self.config, self.modes, self.namer, snapshot)
