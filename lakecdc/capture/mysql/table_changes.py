"""Schema change events: the ``tableChanges`` structure and the record on the ``<prefix>`` topic.

Value (Debezium 3.6.3, ``io.debezium.connector.mysql.SchemaChangeValue``; key
``io.debezium.connector.mysql.SchemaChangeKey`` = ``{"databaseName": "inventory"}``)::

    {"source": {...MySQL source block...}, "ts_ms": 1700000000000,
     "databaseName": "inventory", "schemaName": null,
     "ddl": "ALTER TABLE customers ADD COLUMN middle_name VARCHAR(2000)",
     "tableChanges": [{"type": "ALTER", "id": "\\"inventory\\".\\"customers\\"",
        "table": {"defaultCharsetName": "latin1", "primaryKeyColumnNames": ["id"],
                  "columns": [{"name": "id", "jdbcType": 4, "nativeType": null, "typeName": "INT",
                               "typeExpression": "INT", "charsetName": null, "length": 11,
                               "scale": null, "position": 1, "optional": false,
                               "autoIncremented": true, "generated": true, "comment": null,
                               "defaultValueExpression": null, "enumValues": null}, ...],
                  "comment": null}}]}

The same ``tableChanges`` JSON is what the schema history stores next to each DDL statement.
"""

from __future__ import annotations

from typing import Any

from lakecdc.capture.mysql.ddl.datatypes import jdbc_type_of_expression
from lakecdc.capture.mysql.ddl.model import CHARACTER_TYPES, ColumnDef, DefaultKind, TableDef, TableId
from lakecdc.capture.mysql.ddl.parser import TableChange
from lakecdc.events.schema_change import (
    CHANGE_SCHEMA,
    COLUMN_SCHEMA,
    TABLE_SCHEMA,
    schema_change_key_schema,
    schema_change_value_schema,
)

__all__ = ["CHANGE_SCHEMA", "COLUMN_SCHEMA", "TABLE_SCHEMA", "change_id", "column_json", "default_value_expression",
           "schema_change_key_schema", "schema_change_value_schema", "table_change_json", "table_json"]

def change_id(table_id: TableId, previous: TableId | None = None) -> str:
    """``"db"."table"``; a rename is ``<old>,<new>``, as Debezium's
    MySQL connector documentation describes ``tableChanges.id`` ("Schema change topic")."""
    return f"{previous.quoted},{table_id.quoted}" if previous is not None else table_id.quoted


def table_change_json(change: TableChange, include_comments: bool = False) -> dict[str, Any]:
    """One ``tableChanges`` entry; comments only with ``include.schema.comments`` (Debezium's default: off)."""
    return {
        "type": change.type,
        "id": change_id(change.table.id, change.previous_id),
        "table": table_json(change.table, include_comments),
    }


def table_json(table: TableDef, include_comments: bool = False) -> dict[str, Any]:
    return {
        "defaultCharsetName": table.default_charset,
        "primaryKeyColumnNames": list(table.key_columns),
        "columns": [column_json(c, i + 1, include_comments) for i, c in enumerate(table.columns)],
        "comment": table.comment if include_comments else None,
    }


def column_json(col: ColumnDef, position: int, include_comments: bool = False) -> dict[str, Any]:
    charset = col.charset if col.type_name in CHARACTER_TYPES and col.type_name != "JSON" else None
    return {
        "name": col.name,
        "jdbcType": jdbc_type_of_expression(col.type_expression, col.type_name),
        "nativeType": None,
        "typeName": col.type_expression,
        "typeExpression": col.type_expression,
        "charsetName": charset,
        "length": col.length,
        "scale": col.scale,
        "position": position,
        "optional": col.optional,
        "autoIncremented": col.auto_increment,
        # Debezium's MySQL parser sets "generated" for AUTO_INCREMENT (and ON UPDATE
        # CURRENT_TIMESTAMP) columns, not for GENERATED ALWAYS AS columns
        "generated": col.auto_increment,
        "comment": col.comment if include_comments else None,
        "defaultValueExpression": default_value_expression(col),
        "enumValues": [f"'{v}'" for v in col.enum_values] if col.enum_values else None,
    }


def default_value_expression(col: ColumnDef) -> str | None:
    d = col.default
    if d.kind is DefaultKind.LITERAL:
        return d.text
    if d.kind is DefaultKind.CURRENT_TIMESTAMP and col.type_name in ("TIMESTAMP", "DATETIME", "DATE"):
        return "1970-01-01 00:00:00"
    return None
