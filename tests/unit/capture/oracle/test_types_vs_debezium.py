"""lakecdc's Oracle type mapping against Debezium 3.6.3's OracleValueConverters (JPype): the same
column and the same SQL_REDO literal must give the same Connect field schema and JSON value, in
every decimal / time precision / binary / interval handling mode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from oracle_debezium_types import DebeziumOracleTypes, unavailable_reason

from lakecdc.capture.oracle.connection import ColumnInfo
from lakecdc.capture.oracle.logminer.dml_parser import parse_dml
from lakecdc.capture.oracle.types import TypeModes, column_schema, value_converter
from lakecdc.events.schema import struct
from lakecdc.events.serde import RecordEncoder

_REASON = unavailable_reason()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

# (ALL_TAB_COLUMNS: data type, precision, scale), (Debezium column: type name, jdbc, length, scale), literal.
# Debezium's columns are described as its Oracle connector holds them: temporal precision in the length
# (JdbcValueConverters reads the time precision from it), NUMBER/FLOAT without a scale.
CASES: list[tuple[tuple[str, int | None, int | None], tuple[str, str, int | None, int | None], str]] = [
    (("NUMBER", 2, 0), ("NUMBER", "NUMBER", 2, 0), "'-12'"),
    (("NUMBER", 4, 0), ("NUMBER", "NUMBER", 4, 0), "'1234'"),
    (("NUMBER", 9, 0), ("NUMBER", "NUMBER", 9, 0), "'1004'"),
    (("NUMBER", 18, 0), ("NUMBER", "NUMBER", 18, 0), "'123456789012345678'"),
    (("NUMBER", 20, 0), ("NUMBER", "NUMBER", 20, 0), "'12345678901234567890'"),
    (("NUMBER", 10, 2), ("NUMBER", "NUMBER", 10, 2), "'12.5'"),
    (("NUMBER", 38, 10), ("NUMBER", "NUMBER", 38, 10), "'-0.0000000001'"),
    (("NUMBER", 5, -2), ("NUMBER", "NUMBER", 5, -2), "'1200'"),
    (("NUMBER", None, None), ("NUMBER", "NUMBER", None, None), "'3.25'"),
    (("FLOAT", 126, None), ("FLOAT", "FLOAT", 126, None), "'3.25'"),
    (("BINARY_FLOAT", None, None), ("BINARY_FLOAT", "BINARY_FLOAT", None, None), "'1.5'"),
    (("BINARY_DOUBLE", None, None), ("BINARY_DOUBLE", "BINARY_DOUBLE", None, None), "'2.25'"),
    (("VARCHAR2", None, None), ("VARCHAR2", "VARCHAR2", 255, None), "'O''Brien'"),
    (("CHAR", None, None), ("CHAR", "CHAR", 3, None), "'ab '"),
    (("NVARCHAR2", None, None), ("NVARCHAR2", "NVARCHAR2", 10, None), "UNISTR('caf\\00e9')"),
    (("DATE", None, None), ("DATE", "DATE", None, None),
     "TO_DATE('2018-03-03 13:52:34', 'YYYY-MM-DD HH24:MI:SS')"),
    (("TIMESTAMP(3)", None, 3), ("TIMESTAMP(3)", "TIMESTAMP", 3, 3), "TO_TIMESTAMP('2018-03-03 13:52:34.123')"),
    (("TIMESTAMP(6)", None, 6), ("TIMESTAMP(6)", "TIMESTAMP", 6, 6), "TO_TIMESTAMP('2018-03-03 13:52:34.123456')"),
    (("TIMESTAMP(9)", None, 9), ("TIMESTAMP(9)", "TIMESTAMP", 9, 9),
     "TO_TIMESTAMP('2018-03-03 13:52:34.123456789')"),
    (("TIMESTAMP(6) WITH TIME ZONE", None, 6), ("TIMESTAMP(6) WITH TIME ZONE", "TSTZ", 6, 6),
     "TO_TIMESTAMP_TZ('2018-03-03 13:52:34.123456 +02:00')"),
    (("TIMESTAMP(6) WITH LOCAL TIME ZONE", None, 6), ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TSLTZ", 6, 6),
     "TO_TIMESTAMP_TZ('2018-03-03 13:52:34.123456 +02:00')"),
    (("INTERVAL YEAR(2) TO MONTH", 2, 0), ("INTERVAL YEAR(2) TO MONTH", "INTERVALYM", 2, 0), "TO_YMINTERVAL('+01-02')"),
    (("INTERVAL DAY(2) TO SECOND(6)", 2, 6), ("INTERVAL DAY(2) TO SECOND(6)", "INTERVALDS", 2, 6),
     "TO_DSINTERVAL('-01 02:03:04.500000')"),
    (("RAW", None, None), ("RAW", "RAW", 8, None), "HEXTORAW('0a0b')"),
]
MODES = [
    {},
    {"decimal.handling.mode": "double"},
    {"decimal.handling.mode": "string"},
    {"time.precision.mode": "connect"},
    {"time.precision.mode": "adaptive_time_microseconds"},
    {"binary.handling.mode": "base64"},
    {"binary.handling.mode": "hex"},
    {"interval.handling.mode": "string"},
]


@pytest.fixture(scope="module")
def debezium() -> DebeziumOracleTypes:
    return DebeziumOracleTypes()


def ours(ours_col: tuple[str, int | None, int | None], literal: str, modes: dict[str, str]) -> dict[str, Any]:
    data_type, precision, scale = ours_col
    col = ColumnInfo("C", data_type, 22, precision, scale, True, None, 1)
    m = TypeModes(
        decimal_handling=modes.get("decimal.handling.mode", "precise"),
        time_precision=modes.get("time.precision.mode", "adaptive"),
        binary_handling=modes.get("binary.handling.mode", "bytes"),
        interval_handling=modes.get("interval.handling.mode", "numeric"))
    schema = column_schema(col, m)
    raw = parse_dml(f'insert into "A"."T"("C") values ({literal});').new["C"]
    row_schema = struct([("C", schema)])
    out = json.loads(RecordEncoder(row_schema, True).encode({"C": value_converter(col, m)(raw)}))
    return {"schema": out["schema"]["fields"][0], "payload": out["payload"]["C"]}


@pytest.mark.parametrize("modes", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "defaults")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1][0]}({c[1][2]},{c[1][3]})")
def test_same_schema_and_value_as_debezium(debezium: DebeziumOracleTypes, case: Any, modes: dict[str, str]) -> None:
    ours_col, (type_name, jdbc, length, scale), literal = case
    raw = parse_dml(f'insert into "A"."T"("C") values ({literal});').new["C"]
    theirs = debezium.convert(type_name, jdbc, length, scale, None if raw is None else str(raw), **modes)
    assert ours(ours_col, literal, modes) == theirs


def test_source_block_schema_is_debeziums(debezium: DebeziumOracleTypes) -> None:
    """io.debezium.connector.oracle.Source, field for field, as OracleSourceInfoStructMaker builds it."""
    from lakecdc.events.source import source_schema

    J = debezium.J
    conf = J("io.debezium.config.Configuration").create().with_("topic.prefix", "server1") \
        .with_("database.hostname", "db").with_("database.dbname", "ORCLCDB").build()
    maker = J("io.debezium.connector.oracle.OracleSourceInfoStructMaker")()
    maker.init("oracle", "3.6.3.Final", J("io.debezium.connector.oracle.OracleConnectorConfig")(conf))
    theirs = json.loads(str(debezium._json.asJsonSchema(maker.schema()).toString()))
    schema = source_schema("oracle")
    sample = {f.name: None for f in schema.fields} | {
        "version": "v", "connector": "oracle", "name": "n", "ts_ms": 1, "db": "d", "schema": "s", "table": "t"}
    assert json.loads(RecordEncoder(schema, True).encode(sample))["schema"] == theirs
