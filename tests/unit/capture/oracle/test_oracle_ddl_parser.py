"""lakecdc's Oracle DDL parser on its own: statements that change no structure leave the model as
it was, errors name the statement (Debezium's parser is the reference in test_oracle_ddl_vs_debezium.py)."""

from __future__ import annotations

import pytest

from lakecdc.capture.oracle.ddl.model import OracleTables
from lakecdc.capture.oracle.ddl.parser import OracleDdlParser
from lakecdc.capture.oracle.errors import OracleDdlParseError

CREATE = 'CREATE TABLE "DEBEZIUM"."T" ("ID" NUMBER(9) PRIMARY KEY, "D" DATE, "V" VARCHAR2(10)) TABLESPACE USERS'


@pytest.fixture
def parser() -> OracleDdlParser:
    p = OracleDdlParser(OracleTables())
    p.parse(CREATE, "DEBEZIUM")
    return p


@pytest.mark.parametrize("sql", [
    "ALTER TABLE T ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS",
    "ALTER TABLE T DROP SUPPLEMENTAL LOG DATA (ALL) COLUMNS",
    "ALTER TABLE T ADD PARTITION P2 VALUES LESS THAN (DATE '2021-01-01')",
    "ALTER TABLE T DROP PARTITION P2",
    "ALTER TABLE T MODIFY PARTITION P2 READ ONLY",
    "ALTER TABLE T ENABLE ROW MOVEMENT",
    "ALTER TABLE T MOVE TABLESPACE USERS",
    "ALTER TABLE T ADD CONSTRAINT FK_T FOREIGN KEY (V) REFERENCES OTHER (V) ON DELETE CASCADE",
    "ALTER TABLE T DROP CONSTRAINT FK_T",
    "CREATE UNIQUE INDEX T_V ON T (V)",
    "DROP INDEX T_V",
    "COMMENT ON COLUMN T.V IS 'a, b'",
    "GRANT SELECT ON T TO SOMEONE",
    "CREATE OR REPLACE VIEW TV AS SELECT * FROM T",
    "FLASHBACK TABLE OTHER TO BEFORE DROP",
    "TRUNCATE TABLE T",
    "ALTER TABLE T ADD (C AS (ID + 1) VIRTUAL)",
])
def test_statements_that_change_no_structure(parser: OracleDdlParser, sql: str) -> None:
    before = parser.tables.get("DEBEZIUM", "T")
    assert parser.parse(sql, "DEBEZIUM") == []
    assert parser.tables.get("DEBEZIUM", "T") is before


@pytest.mark.parametrize(("sql", "reason"), [
    ("ALTER TABLE T ADD (X NUMBER", "expected ')'"),
    ("ALTER TABLE T DROP COLUMN NOPE", "does not have"),
    ("ALTER TABLE T ADD (V NUMBER)", "already exists"),
    ("ALTER TABLE UNKNOWN ADD (X NUMBER)", "not known"),
    ("CREATE TABLE C AS SELECT * FROM T", "without a column list"),
    ("MERGE INTO T USING X ON (1=1)", "not understood"),
    ("ALTER TABLE T ADD (X NOT NULL)", "has no data type"),
])
def test_unparseable_statements_name_the_statement(parser: OracleDdlParser, sql: str, reason: str) -> None:
    with pytest.raises(OracleDdlParseError) as err:
        parser.parse(sql + ";", "DEBEZIUM")
    assert reason in str(err.value) and sql in str(err.value)
    assert err.value.at(42).scn == 42 and "at SCN 42" in str(err.value.at(42))


def test_quoted_and_unquoted_names_and_rename(parser: OracleDdlParser) -> None:
    parser.parse('alter table t add ("lower" number(3), mixed_Case varchar2(2))', "DEBEZIUM")
    parser.parse("RENAME T TO T2", "DEBEZIUM")
    t = parser.tables.get("DEBEZIUM", "T2")
    assert t is not None and parser.tables.get("DEBEZIUM", "T") is None
    assert [c.name for c in t.columns] == ["ID", "D", "V", "lower", "MIXED_CASE"]
    assert [c.position for c in t.columns] == [1, 2, 3, 4, 5]
