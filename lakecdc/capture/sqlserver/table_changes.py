"""Schema change events on the ``<prefix>`` topic (Debezium SQL Server documentation, "Schema change
topic"): CREATE for each captured table in the snapshot, ALTER when streaming reaches a new capture
instance's start LSN ("Database schema evolution").

Value (``io.debezium.connector.sqlserver.SchemaChangeValue``; key
``io.debezium.connector.sqlserver.SchemaChangeKey`` = ``{"databaseName": "testDB"}``)::

    {"source": {..."snapshot": "true", "commit_lsn": "00000025:00000d98:00a2", "change_lsn": null...},
     "ts_ms": 1588252618953, "databaseName": "testDB", "schemaName": "dbo", "ddl": null,
     "tableChanges": [{"type": "CREATE", "id": "\\"testDB\\".\\"dbo\\".\\"customers\\"",
        "table": {"defaultCharsetName": null, "primaryKeyColumnNames": ["id"],
                  "columns": [{"name": "id", "jdbcType": 4, "nativeType": null, "typeName": "int identity",
                               "typeExpression": "int identity", "charsetName": null, "length": 10,
                               "scale": 0, "position": 1, "optional": false, "autoIncremented": false,
                               "generated": false, ...}, ...]}}]}

``ddl`` is always null: SQL Server CDC does not expose DDL text. ``jdbcType``, ``length`` and
``scale`` are what Microsoft's JDBC driver reports for the column (``java.sql.Types`` codes;
``microsoft.sql.Types.DATETIMEOFFSET`` -155), as Debezium reads them.
"""

from __future__ import annotations

import time
from typing import Any

from lakecdc.capture.sqlserver.connection import ColumnDef
from lakecdc.capture.sqlserver.table_schema import InstanceSchema
from lakecdc.events.envelope import ChangeRecord

# the Connect schemas of schema change events are the same for every connector
from lakecdc.events.schema_change import schema_change_key_schema, schema_change_value_schema

KEY_SCHEMA = schema_change_key_schema("sqlserver")
VALUE_SCHEMA = schema_change_value_schema("sqlserver")

JDBC_TYPES = {
    "bit": -7, "tinyint": -6, "smallint": 5, "int": 4, "bigint": -5, "real": 7, "float": 8,
    "decimal": 3, "numeric": 2, "money": 3, "smallmoney": 3, "char": 1, "varchar": 12, "text": -1,
    "nchar": -15, "nvarchar": -9, "ntext": -16, "xml": 2009, "uniqueidentifier": 1, "date": 91, "time": 92,
    "datetime": 93, "smalldatetime": 93, "datetime2": 93, "datetimeoffset": -155, "binary": -2,
    "varbinary": -3, "image": -4, "timestamp": -2, "sysname": -9,
}
# COLUMN_SIZE of the types whose size is fixed (numbers: precision; temporal: characters)
_FIXED_LENGTH = {"bit": 1, "tinyint": 3, "smallint": 5, "int": 10, "bigint": 19, "real": 24, "float": 53,
                 "money": 19, "smallmoney": 10, "uniqueidentifier": 36, "date": 10, "datetime": 23,
                 "smalldatetime": 16, "timestamp": 8}
_TEMPORAL_WIDTH = {"time": 8, "datetime2": 19, "datetimeoffset": 26}
_FIXED_SCALE = {"tinyint": 0, "smallint": 0, "int": 0, "bigint": 0, "money": 4, "smallmoney": 4,
                "datetime": 3, "smalldatetime": 0}


def _length(col: ColumnDef) -> int | None:
    t = col.type_name
    if t in _TEMPORAL_WIDTH:
        p = 7 if col.datetime_precision is None else col.datetime_precision
        return _TEMPORAL_WIDTH[t] + (p + 1 if p else 0)
    if t in ("decimal", "numeric"):
        return col.precision
    if t in _FIXED_LENGTH:
        return _FIXED_LENGTH[t]
    if col.length is not None and col.length < 0:  # (max)
        return 2147483647 if t in ("varchar", "varbinary") else 1073741823
    return col.length


def _scale(col: ColumnDef) -> int | None:
    t = col.type_name
    if t in ("decimal", "numeric"):
        return col.scale
    if t in _TEMPORAL_WIDTH:
        return 7 if col.datetime_precision is None else col.datetime_precision
    return _FIXED_SCALE.get(t)


def column_json(col: ColumnDef, position: int) -> dict[str, Any]:
    type_name = f"{col.type_name} identity" if col.identity else col.type_name
    return {
        "name": col.name,
        "jdbcType": JDBC_TYPES.get(col.type_name, 1111),
        "nativeType": None,
        "typeName": type_name,
        "typeExpression": type_name,
        "charsetName": None,
        "length": _length(col),
        "scale": _scale(col),
        "position": position,
        "optional": col.nullable,
        # as the schema change example of Debezium's SQL Server documentation prints it, identity columns too
        "autoIncremented": False,
        "generated": False,
        "comment": None,
        "defaultValueExpression": col.default,
        "enumValues": None,
    }


def table_change(kind: str, schema: InstanceSchema, primary_key: tuple[str, ...]) -> dict[str, Any]:
    t = schema.table_id
    return {
        "type": kind,
        "id": f'"{t.db}"."{t.schema}"."{t.table}"',
        "table": {
            "defaultCharsetName": None,
            "primaryKeyColumnNames": list(primary_key),
            "columns": [column_json(c, c.position) for c in schema.columns],
            "comment": None,
        },
    }


def schema_change_record(topic: str, source: dict[str, Any], schema: InstanceSchema, kind: str,
                         primary_key: tuple[str, ...], position: Any) -> ChangeRecord:
    value = {
        "source": source,
        "ts_ms": time.time_ns() // 1_000_000,
        "databaseName": schema.table_id.db,
        "schemaName": schema.table_id.schema,
        "ddl": None,
        "tableChanges": [table_change(kind, schema, primary_key)],
    }
    return ChangeRecord(topic, KEY_SCHEMA, {"databaseName": schema.table_id.db}, VALUE_SCHEMA, value, [], position)
