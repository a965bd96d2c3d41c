"""Per-table event structure: topic, key/value/envelope schemas and row converters.

Built once per table structure (at snapshot, at the first change of a table, and again after a
DDL names it). Oracle names are upper case, and so are the field names: for
``DEBEZIUM.CUSTOMERS(ID NUMBER(9) PRIMARY KEY, EMAIL VARCHAR2(255))`` under prefix ``server1``::

    topic      server1.DEBEZIUM.CUSTOMERS
    key schema {"type":"struct","fields":[{"type":"int32","optional":false,"field":"ID"}],
                "optional":false,"name":"server1.DEBEZIUM.CUSTOMERS.Key"}
    value      {"ID": 1004, "EMAIL": "annek@noanswer.org"}   (inside before/after)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.ddl.model import OracleTable, OracleTables
from lakecdc.capture.oracle.errors import UnknownTableError
from lakecdc.capture.oracle.types import LOB_TYPES, UNAVAILABLE, TypeModes, column_schema, value_converter
from lakecdc.config.filters import ColumnFilter, KeyColumns
from lakecdc.events.envelope import envelope_schema
from lakecdc.events.schema import ConnectSchema, struct
from lakecdc.events.source import source_schema
from lakecdc.events.topics import TableId, TopicNamer


@dataclass(frozen=True)
class TableSchema:
    owner: str
    table: str
    columns: tuple[ColumnInfo, ...]
    topic: str
    data_collection: str  # "<DB>.<SCHEMA>.<TABLE>" in transaction END events
    key_schema: ConnectSchema | None
    value_schema: ConnectSchema
    envelope_schema: ConnectSchema
    #: (column name, converter, is LOB) of the value, in table order, filtered columns left out
    value_columns: tuple[tuple[str, Callable[[Any], Any], bool], ...]
    key_names: tuple[str, ...]

    def row(self, values: Mapping[str, Any], absent: Any = None) -> dict[str, Any]:
        """The payload row from ``column -> raw value``; a column the redo does not mention is
        ``absent`` (None), or UNAVAILABLE for LOBs (Debezium's placeholder)."""
        out: dict[str, Any] = {}
        for name, convert, is_lob in self.value_columns:
            if name in values:
                out[name] = convert(values[name])
            else:
                out[name] = convert(UNAVAILABLE) if is_lob else absent
        return out

    def row_from_tuple(self, names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
        return self.row(dict(zip(names, values)))

    def key(self, row: Mapping[str, Any]) -> dict[str, Any] | None:
        """The key payload taken from a converted row (None for a table without key columns)."""
        if not self.key_names:
            return None
        return {name: row[name] for name in self.key_names}


def build_table_schema(
    owner: str,
    table: str,
    columns: list[ColumnInfo],
    key_columns: list[str],
    namer: TopicNamer,
    modes: TypeModes,
    db: str,
    column_filter: ColumnFilter | None = None,
    key_override: KeyColumns | None = None,
) -> TableSchema:
    """The structure of every event of ``owner.table``; raises naming the table for unmappable types."""
    topic_id = TableId(db, owner, table)
    fields: list[tuple[str, ConnectSchema]] = []
    value_columns: list[tuple[str, Callable[[Any], Any], bool]] = []
    by_name = {c.name: c for c in columns}
    try:
        for col in columns:
            if column_filter is not None and not column_filter.is_trivial and \
                    not column_filter.matches(owner, table, col.name):
                continue
            fields.append((col.name, column_schema(col, modes)))
            value_columns.append((col.name, value_converter(col, modes), col.data_type.upper() in LOB_TYPES))
    except Exception as exc:
        raise UnknownTableError(f"table '{owner}.{table}': {exc}") from exc
    key_names = list(key_columns)
    if key_override:
        override = key_override.for_table(owner, table)
        if override is not None:
            key_names = override
    key_fields = []
    for name in key_names:
        key_col = by_name.get(name)
        if key_col is None:
            raise UnknownTableError(f"key column '{name}' of table '{owner}.{table}' is not a column of the "
                                    "table (check message.key.columns)")
        if name not in {n for n, _, _ in value_columns}:
            raise UnknownTableError(f"key column '{name}' of table '{owner}.{table}' is excluded by the "
                                    "column filters")
        key_fields.append((name, column_schema(key_col, modes)))
    value_schema = struct(fields, optional=True, name=namer.value_schema_name(topic_id))
    return TableSchema(
        owner=owner,
        table=table,
        columns=tuple(columns),
        topic=namer.data_topic(topic_id),
        data_collection=namer.data_collection(topic_id),
        key_schema=struct(key_fields, name=namer.key_schema_name(topic_id)) if key_fields else None,
        value_schema=value_schema,
        envelope_schema=envelope_schema(value_schema, source_schema("oracle"), namer.envelope_schema_name(topic_id)),
        value_columns=tuple(value_columns),
        key_names=tuple(key_names),
    )


class TableSchemas:
    """The captured tables' event structures, built from the table model (``tables``: the snapshot's
    and the schema history's structures, changed by each DDL); a table the model does not know is
    read from the data dictionary on first use and kept in the model."""

    def __init__(self, conn: Any, config: Any, namer: TopicNamer, modes: TypeModes) -> None:
        self.conn = conn
        self.config = config
        self.namer = namer
        self.modes = modes
        self.tables = OracleTables()
        self._cache: dict[tuple[str, str], tuple[OracleTable, TableSchema]] = {}

    def is_captured(self, owner: str, table: str) -> bool:
        return self.config.table_filter.matches(owner, table)

    def get(self, owner: str, table: str) -> TableSchema:
        structure = self.tables.get(owner, table)
        if structure is None:
            structure = self.read_dictionary(owner, table)
            self.tables.put(structure)
            self.discovered(structure)
        cached = self._cache.get((owner, table))
        if cached is not None and cached[0] is structure:
            return cached[1]
        schema = build_table_schema(owner, table, list(structure.columns), list(structure.key_columns), self.namer,
                                    self.modes, self.config.source_db, self.config.column_filter,
                                    self.config.key_columns)
        self._cache[(owner, table)] = (structure, schema)
        return schema

    def read_dictionary(self, owner: str, table: str) -> OracleTable:
        """The table as ALL_TAB_COLUMNS / ALL_CONSTRAINTS describe it now."""
        columns = self.conn.columns(owner, table)
        if not columns:
            raise UnknownTableError(f"table '{owner}.{table}' is not in ALL_TAB_COLUMNS (dropped, or no "
                                    "SELECT privilege on it)")
        keys = tuple(self.conn.key_columns(owner, table))
        return OracleTable(owner, table, tuple(columns), primary_key=keys)

    def discovered(self, table: OracleTable) -> None:
        """A table read from the dictionary outside a snapshot (the schema history records it)."""
