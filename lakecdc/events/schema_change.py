"""The Connect schemas of schema change events (the ``<topic.prefix>`` topic), the same for every
connector but for the connector name in the key/value schema names
(``io.debezium.connector.<connector>.SchemaChangeKey`` / ``SchemaChangeValue``). The ``tableChanges``
entries' shape (``io.debezium.connector.schema.Change/Table/Column``) is also what the schema
history stores next to each DDL statement.
"""

from __future__ import annotations

from lakecdc.events.schema import (
    INT32,
    INT64,
    OPTIONAL_BOOLEAN,
    OPTIONAL_INT32,
    OPTIONAL_STRING,
    STRING,
    ConnectSchema,
    array,
    struct,
)
from lakecdc.events.source import source_schema

COLUMN_SCHEMA = struct(
    [
        ("name", STRING),
        ("jdbcType", INT32),
        ("nativeType", OPTIONAL_INT32),
        ("typeName", STRING),
        ("typeExpression", OPTIONAL_STRING),
        ("charsetName", OPTIONAL_STRING),
        ("length", OPTIONAL_INT32),
        ("scale", OPTIONAL_INT32),
        ("position", INT32),
        ("optional", OPTIONAL_BOOLEAN),
        ("autoIncremented", OPTIONAL_BOOLEAN),
        ("generated", OPTIONAL_BOOLEAN),
        ("comment", OPTIONAL_STRING),
        ("defaultValueExpression", OPTIONAL_STRING),
        ("enumValues", array(STRING, optional=True)),
    ],
    name="io.debezium.connector.schema.Column",
    version=1,
)
TABLE_SCHEMA = struct(
    [
        ("defaultCharsetName", OPTIONAL_STRING),
        ("primaryKeyColumnNames", array(STRING, optional=True)),
        ("columns", array(COLUMN_SCHEMA)),
        ("comment", OPTIONAL_STRING),
    ],
    optional=True,
    name="io.debezium.connector.schema.Table",
    version=1,
)
CHANGE_SCHEMA = struct(
    [("type", STRING), ("id", STRING), ("table", TABLE_SCHEMA)],
    name="io.debezium.connector.schema.Change",
    version=1,
)


def schema_change_key_schema(connector: str) -> ConnectSchema:
    return struct([("databaseName", STRING)], name=f"io.debezium.connector.{connector}.SchemaChangeKey", version=1)


def schema_change_value_schema(connector: str) -> ConnectSchema:
    return struct(
        [
            ("source", source_schema(connector)),
            ("ts_ms", INT64),
            ("databaseName", OPTIONAL_STRING),
            ("schemaName", OPTIONAL_STRING),
            ("ddl", OPTIONAL_STRING),
            ("tableChanges", array(CHANGE_SCHEMA)),
        ],
        name=f"io.debezium.connector.{connector}.SchemaChangeValue",
        version=1,
    )
