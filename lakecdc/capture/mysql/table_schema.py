"""Per-table event structure: topic, key/value/envelope schemas and row converters.

Built once per table structure (after the snapshot reads it, or after each DDL that changes it),
so producing an event is: convert each column with its precomputed converter, pick the key
columns, wrap in the envelope. Example for ``inventory.customers(id INT PK, email VARCHAR)``
under prefix ``dbz``::

    topic      dbz.inventory.customers
    key schema {"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],
                "optional":false,"name":"dbz.inventory.customers.Key"}
    key        {"id": 1001}
    value      {"id": 1001, "email": "annek@noanswer.org"}   (inside before/after)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.mysql.ddl.model import TableDef
from lakecdc.capture.mysql.errors import UnknownTableError
from lakecdc.capture.mysql.types import TypeModes, column_schema, is_passthrough, value_converter
from lakecdc.capture.row_builder import compile_row_builder
from lakecdc.config.filters import ColumnFilter, KeyColumns
from lakecdc.events.envelope import envelope_schema
from lakecdc.events.schema import ConnectSchema, struct
from lakecdc.events.topics import TableId as TopicTableId
from lakecdc.events.topics import TopicNamer


@dataclass(frozen=True)
class TableSchema:
    table: TableDef
    topic: str
    data_collection: str  # "<db>.<table>" in transaction END events
    key_schema: ConnectSchema | None
    value_schema: ConnectSchema
    envelope_schema: ConnectSchema
    # (column name, converter) for the value, in table order, filtered columns left out
    value_columns: tuple[tuple[str, Callable[[Any], Any]], ...]
    key_columns: tuple[tuple[str, Callable[[Any], Any]], ...]
    # 0-based positions in the full table row, for readers that give tuples (snapshot)
    value_positions: tuple[int, ...]
    key_positions: tuple[int, ...]
    # generated builders: full row (sequence, table column order) -> payload row / key
    row: Callable[[Any], dict[str, Any]]
    _key: Callable[[Any], dict[str, Any]] | None

    @property
    def column_names(self) -> list[str]:
        """Every column of the table, in table order (the order of a full row's values)."""
        return [c.name for c in self.table.columns]

    def key(self, values: Any) -> dict[str, Any] | None:
        """The key payload of a full row (None for a table without key columns)."""
        return None if self._key is None else self._key(values)


def build_table_schema(
    table: TableDef,
    namer: TopicNamer,
    modes: TypeModes,
    column_filter: ColumnFilter | None = None,
    key_override: KeyColumns | None = None,
    source_schema: ConnectSchema | None = None,
) -> TableSchema:
    """The structure of every event of ``table``; raises naming the table for unmappable types."""
    db, name = table.id.database, table.id.table
    topic_id = TopicTableId(db, None, name)
    fields: list[tuple[str, ConnectSchema]] = []
    value_columns: list[tuple[str, Callable[[Any], Any]]] = []
    value_positions: list[int] = []
    trivial = column_filter is None or column_filter.is_trivial
    try:
        for i, col in enumerate(table.columns):
            if not trivial and not column_filter.matches(db, name, col.name):  # type: ignore[union-attr]
                continue
            fields.append((col.name, column_schema(col, modes)))
            value_columns.append((col.name, value_converter(col, modes)))
            value_positions.append(i)
        key_names = list(table.key_columns)
        if key_override:
            override = key_override.for_table(db, name)
            if override is not None:
                key_names = override
        key_fields: list[tuple[str, ConnectSchema]] = []
        key_columns: list[tuple[str, Callable[[Any], Any]]] = []
        key_positions: list[int] = []
        for key_name in key_names:
            pos = table.column_position(key_name)
            if pos < 0:
                raise UnknownTableError(
                    f"key column '{key_name}' of table '{table.id}' is not a column of the table "
                    "(check message.key.columns)"
                )
            col = table.columns[pos]
            key_fields.append((col.name, column_schema(col, modes)))
            key_columns.append((col.name, value_converter(col, modes)))
            key_positions.append(pos)
    except UnknownTableError:
        raise
    except Exception as exc:
        raise UnknownTableError(f"table '{table.id}': {exc}") from exc
    value_schema = struct(fields, optional=True, name=namer.value_schema_name(topic_id))
    row_builder = compile_row_builder([
        (name, pos, None if is_passthrough(table.columns[pos], modes) else convert)
        for (name, convert), pos in zip(value_columns, value_positions)
    ])
    key_builder = compile_row_builder([
        (name, pos, None if is_passthrough(table.columns[pos], modes) else convert)
        for (name, convert), pos in zip(key_columns, key_positions)
    ]) if key_fields else None
    key_schema = struct(key_fields, name=namer.key_schema_name(topic_id)) if key_fields else None
    if source_schema is None:
        from lakecdc.events.source import source_schema as lookup

        source_schema = lookup("mysql" if namer.connector not in ("mysql", "mariadb") else namer.connector)
    return TableSchema(
        table=table,
        topic=namer.data_topic(topic_id),
        data_collection=namer.data_collection(topic_id),
        key_schema=key_schema,
        value_schema=value_schema,
        envelope_schema=envelope_schema(value_schema, source_schema, namer.envelope_schema_name(topic_id)),
        value_columns=tuple(value_columns),
        key_columns=tuple(key_columns),
        value_positions=tuple(value_positions),
        key_positions=tuple(key_positions),
        row=row_builder,
        _key=key_builder,
    )
