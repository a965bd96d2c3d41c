"""Oracle schema change events (the ``<topic.prefix>`` topic) and the ``tableChanges`` the schema
history stores next to each DDL statement.

Key ``io.debezium.connector.oracle.SchemaChangeKey`` = ``{"databaseName": "ORCLPDB1"}``; value
(``io.debezium.connector.oracle.SchemaChangeValue``)::

    {"source": {...Oracle source block: scn of the DDL, snapshot...}, "ts_ms": 1700000000000,
     "databaseName": "ORCLPDB1", "schemaName": "DEBEZIUM",
     "ddl": "ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20))",
     "tableChanges": [{"type": "ALTER", "id": "\\"ORCLPDB1\\".\\"DEBEZIUM\\".\\"CUSTOMERS\\"",
        "table": {"defaultCharsetName": null, "primaryKeyColumnNames": ["ID"],
                  "columns": [{"name": "ID", "jdbcType": 2, "nativeType": null, "typeName": "NUMBER",
                               "typeExpression": "NUMBER", "charsetName": null, "length": 9, "scale": 0,
                               "position": 1, "optional": false, "autoIncremented": false,
                               "generated": false, "comment": null, "defaultValueExpression": null,
                               "enumValues": null}, ...], "comment": null}}]}

Column descriptions follow Debezium's Oracle DDL parser (``ddl.datatypes.debezium_type``). A
snapshot writes one CREATE TABLE statement per captured table, generated from the dictionary
(``create_table_ddl``; Debezium writes DBMS_METADATA's text there, which lakecdc does not query).
"""

from __future__ import annotations

import time
from typing import Any

from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.ddl.datatypes import ddl_type, debezium_type
from lakecdc.capture.oracle.ddl.model import OracleTable, TableChange
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.positions import OraclePosition
from lakecdc.events.schema_change import schema_change_key_schema, schema_change_value_schema

KEY_SCHEMA = schema_change_key_schema("oracle")
VALUE_SCHEMA = schema_change_value_schema("oracle")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_change_json(change: TableChange, db: str) -> dict[str, Any]:
    t = change.table
    return {
        "type": change.type,
        "id": f"{quote(db)}.{quote(t.owner)}.{quote(t.name)}",
        "table": {
            "defaultCharsetName": None,
            "primaryKeyColumnNames": list(t.primary_key),
            "columns": [column_json(c) for c in t.columns],
            "comment": None,
        },
    }


def column_json(col: ColumnInfo) -> dict[str, Any]:
    type_name, jdbc, length, scale = debezium_type(col)
    return {
        "name": col.name,
        "jdbcType": jdbc,
        "nativeType": None,
        "typeName": type_name,
        "typeExpression": type_name,
        "charsetName": None,
        "length": length if length is not None and length >= 0 else None,  # -1: no length
        "scale": scale,
        "position": col.position,
        "optional": col.nullable,
        "autoIncremented": False,
        "generated": False,
        "comment": None,
        "defaultValueExpression": col.default.strip() if col.default else None,
        "enumValues": None,
    }


def create_table_ddl(table: OracleTable) -> str:
    """A CREATE TABLE statement that the DDL parser reads back into ``table``."""
    parts = []
    for col in table.columns:
        text = f"{quote(col.name)} {ddl_type(col)}"
        if col.default and col.default.strip():
            text += f" DEFAULT {col.default.strip()}"
        if not col.nullable:
            text += " NOT NULL"
        parts.append(text)
    if table.primary_key:
        name = f"CONSTRAINT {quote(table.primary_key_name)} " if table.primary_key_name else ""
        parts.append(f"{name}PRIMARY KEY ({', '.join(quote(n) for n in table.primary_key)})")
    elif table.unique_key:
        parts.append(f"UNIQUE ({', '.join(quote(n) for n in table.unique_key)})")
    return f"CREATE TABLE {quote(table.owner)}.{quote(table.name)} ({', '.join(parts)})"


def schema_change_record(topic: str, source: dict[str, Any], db: str, owner: str, ddl: str,
                         changes: list[TableChange], position: OraclePosition | None) -> ChangeRecord:
    value = {
        "source": source,
        "ts_ms": time.time_ns() // 1_000_000,
        "databaseName": db,
        "schemaName": owner,
        "ddl": ddl,
        "tableChanges": [table_change_json(c, db) for c in changes],
    }
    return ChangeRecord(topic, KEY_SCHEMA, {"databaseName": db}, VALUE_SCHEMA, value, [], position)
