"""Oracle DDL on the replay connection: the parsed structure decodes later redo, the schema
history rebuilds it after a restart, schema change events, unparseable DDL.

The recorded dictionary (ALL_TAB_COLUMNS) keeps the *old* structure throughout, so a test passes
only when the connector decodes with the structure its DDL parser and schema history hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from oracle_recorded import RecordedOracle, Table, customers, insert_sql, redo
from test_oracle_capture import config, install, run  # noqa: F401 - install is the fixture

from lakecdc.capture.oracle.connector import OracleConnector
from lakecdc.capture.oracle.errors import OracleDdlParseError
from lakecdc.capture.oracle.streaming import OracleStreamingSource

A, B, C, D = (bytes.fromhex(f"0{i}00000001000000") for i in "abcd")
DDL_XID = bytes.fromhex("0e00000001000000")
ROW = {"ID": "1", "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e"}


def ddl(scn: int, sql: str, table: str = "CUSTOMERS") -> list[Any]:
    return [redo(scn, 5, DDL_XID, sql, "DEBEZIUM", table), redo(scn + 1, 7, DDL_XID)]


def insert(scn: int, xid: bytes, values: dict[str, str], table: str = "CUSTOMERS") -> list[Any]:
    return [redo(scn, 1, xid, insert_sql("DEBEZIUM", table, values), "DEBEZIUM", table), redo(scn + 1, 7, xid)]


def stream(db: RecordedOracle, start_scn: int, **extra: str) -> list[Any]:
    connector = OracleConnector(config(**extra), show_progress=False)
    source = OracleStreamingSource(connector.config, connector.modes, connector.namer, sleep=lambda s: None,
                                   history=connector.history)
    source.start({"scn": str(start_scn)})
    out: list[Any] = []
    try:
        for _ in range(3):
            source.poll(out, 1000, 0)
    finally:
        source.close()
        connector.close()
    return out


def after_field(record: Any, name: str) -> Any:
    after = next(f for f in record.value_schema.fields if f.name == "after").schema
    return next(f for f in after.fields if f.name == name).schema


def test_ddl_mid_stream_changes_the_structure_of_later_dml(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=[
        *insert(110, A, ROW),
        *ddl(130, 'ALTER TABLE "DEBEZIUM"."CUSTOMERS" ADD ("PHONE" VARCHAR2(20), "SCORE" NUMBER(5,2) DEFAULT 0);'),
        *insert(140, B, {**ROW, "ID": "2", "PHONE": "555", "SCORE": "1.5"}),
        *ddl(150, "ALTER TABLE customers RENAME COLUMN email TO mail"),
        *ddl(160, 'ALTER TABLE CUSTOMERS DROP (FIRST_NAME)'),
        *ddl(170, 'alter table CUSTOMERS modify (PHONE varchar2(40) not null)'),
        *insert(180, C, {"ID": "3", "LAST_NAME": "L", "MAIL": "m", "PHONE": "777", "SCORE": "2"})]))
    out = stream(db, 100)
    data = [r for r in out if r.topic == "server1.DEBEZIUM.CUSTOMERS"]
    assert [list(r.value["after"]) for r in data] == [
        ["ID", "FIRST_NAME", "LAST_NAME", "EMAIL"],
        ["ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "PHONE", "SCORE"],
        ["ID", "LAST_NAME", "MAIL", "PHONE", "SCORE"]]
    assert data[1].value["after"]["PHONE"] == "555"
    # NUMBER(5,2) decoded as Debezium's precise decimal: Decimal bytes with scale 2 in the schema
    score = after_field(data[1], "SCORE")
    assert score.name == "org.apache.kafka.connect.data.Decimal" and score.parameter("scale") == "2"
    assert after_field(data[2], "PHONE").optional is False  # MODIFY ... NOT NULL
    changes = [r for r in out if r.topic == "server1"]
    assert [int(r.value["source"]["scn"]) for r in changes] == [130, 150, 160, 170]


def test_schema_change_event_fields(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=[
        *insert(110, A, ROW),
        *ddl(130, 'ALTER TABLE "DEBEZIUM"."CUSTOMERS" ADD ("PHONE" VARCHAR2(20 CHAR) DEFAULT \'n/a\' NOT NULL);')]))
    change = next(r for r in stream(db, 100) if r.topic == "server1")
    assert change.key == {"databaseName": "ORCLPDB1"}
    assert change.key_schema.name == "io.debezium.connector.oracle.SchemaChangeKey"
    assert change.value_schema.name == "io.debezium.connector.oracle.SchemaChangeValue"
    v = change.value
    assert (v["databaseName"], v["schemaName"]) == ("ORCLPDB1", "DEBEZIUM")
    assert v["ddl"] == 'ALTER TABLE "DEBEZIUM"."CUSTOMERS" ADD ("PHONE" VARCHAR2(20 CHAR) DEFAULT \'n/a\' NOT NULL)'
    assert v["source"]["connector"] == "oracle" and v["source"]["scn"] == "130"
    assert v["source"]["snapshot"] == "false" and v["source"]["table"] == "CUSTOMERS"
    [tc] = v["tableChanges"]
    assert tc["type"] == "ALTER" and tc["id"] == '"ORCLPDB1"."DEBEZIUM"."CUSTOMERS"'
    assert tc["table"]["primaryKeyColumnNames"] == ["ID"]
    cols = {c["name"]: c for c in tc["table"]["columns"]}
    assert list(cols) == ["ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "PHONE"]
    assert cols["PHONE"] == {
        "name": "PHONE", "jdbcType": 12, "nativeType": None, "typeName": "VARCHAR2", "typeExpression": "VARCHAR2",
        "charsetName": None, "length": 20, "scale": None, "position": 5, "optional": False,
        "autoIncremented": False, "generated": False, "comment": None, "defaultValueExpression": "'n/a'",
        "enumValues": None}
    assert (cols["ID"]["jdbcType"], cols["ID"]["length"], cols["ID"]["scale"]) == (2, 9, 0)
    # the Connect schema accepts the value (serialisation checks every field)
    from lakecdc.events.serde import RecordEncoder
    encoded = json.loads(RecordEncoder(change.value_schema, True).encode(v))
    assert encoded["payload"]["tableChanges"][0]["table"]["columns"][4]["name"] == "PHONE"


def test_include_schema_changes_false_emits_none_but_still_applies(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=[
        *insert(110, A, ROW), *ddl(130, 'ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20))'),
        *insert(140, B, {**ROW, "ID": "2", "PHONE": "5"})]))
    out = stream(db, 100, **{"include.schema.changes": "false"})
    assert [r.topic for r in out] == ["server1.DEBEZIUM.CUSTOMERS"] * 2
    assert out[1].value["after"]["PHONE"] == "5"


def test_restart_after_ddl_decodes_with_the_schema_history(install: Any, tmp_path: Any) -> None:
    history = tmp_path / "history.jsonl"
    props = {"log.mining.sleep.time.default.ms": "0", "schema.history.internal.file.filename": str(history)}
    db = install(RecordedOracle([customers([(1001, "S", "T", "s@x")])], scns=[1000, 1020], redo_rows=[
        *ddl(1010, 'ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20))'),
        *insert(1030, B, {**ROW, "ID": "2", "PHONE": "555"})]))
    sink = run(db, tmp_path, **props)
    assert [r.op for r in sink.records] == ["r"]
    # snapshot: one CREATE TABLE per captured table on the schema change topic, then the ALTER
    assert [r.value["tableChanges"][0]["type"] for r in sink.schema_changes] == ["CREATE", "ALTER"]
    assert sink.schema_changes[0].value["source"]["snapshot"] == "last"
    records = [json.loads(line) for line in history.read_text().splitlines()]
    assert [r["position"] for r in records] == [
        {"scn": "1000", "snapshot": True, "snapshot_first": True}, {"scn": "1010"}]
    assert records[0]["ddl"].startswith('CREATE TABLE "DEBEZIUM"."CUSTOMERS" ("ID" NUMBER(9,0) NOT NULL')
    assert records[1]["schemaName"] == "DEBEZIUM" and records[1]["databaseName"] == "ORCLPDB1"

    # restart: the dictionary still has the old structure; the history knows PHONE
    db.scns = [1040]
    sink2 = run(db, tmp_path, **props)
    assert [(r.op, r.value["after"]) for r in sink2.records] == [
        ("c", {"ID": 2, "FIRST_NAME": "F", "LAST_NAME": "L", "EMAIL": "e", "PHONE": "555"})]
    assert sink2.schema_changes == []  # the ALTER (SCN 1010) is before the restart SCN: not mined again
    assert not any("ALL_TAB_COLUMNS" in sql for c in db.connections[-3:] for sql, _ in c.executed)


def test_ddl_after_the_restart_scn_is_mined_again_and_applied_once(install: Any, tmp_path: Any) -> None:
    """An open transaction keeps the stored SCN before the DDL: the DDL is recorded, then mined
    (and recorded) again after the restart; replay applies it once."""
    history = tmp_path / "history.jsonl"
    props = {"log.mining.sleep.time.default.ms": "0", "schema.history.internal.file.filename": str(history)}
    db = install(RecordedOracle([customers()], scns=[1000, 1020], redo_rows=[
        redo(1005, 1, A, insert_sql("DEBEZIUM", "CUSTOMERS", ROW), "DEBEZIUM", "CUSTOMERS"),
        *ddl(1010, 'ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20))'),
        redo(1025, 7, A),
        *insert(1030, B, {**ROW, "ID": "2", "PHONE": "555"})]))
    run(db, tmp_path, **props)
    db.scns = [1040]
    sink = run(db, tmp_path, **props)
    assert [r.value["after"].get("PHONE") for r in sink.records] == [None, "555"]
    assert len(sink.schema_changes) == 1  # announced again: at least once, as Debezium
    db.scns = [1050]
    run(db, tmp_path, **props)  # replays both ALTER records: one is applied
    positions = [json.loads(line)["position"]["scn"] for line in history.read_text().splitlines()]
    assert positions.count("1010") == 2


def test_unparseable_ddl_names_statement_and_scn_unless_skipped(install: Any) -> None:
    bad = "ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20)"
    rows = [*insert(110, A, ROW), *ddl(130, bad), *insert(140, B, {**ROW, "ID": "2"})]
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=rows))
    with pytest.raises(OracleDdlParseError) as err:
        stream(db, 100)
    assert "at SCN 130" in str(err.value) and bad in str(err.value)
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=rows))
    out = stream(db, 100, **{"schema.history.internal.skip.unparseable.ddl": "true"})
    assert [r.topic for r in out] == ["server1.DEBEZIUM.CUSTOMERS"] * 2
    assert list(out[1].value["after"]) == ["ID", "FIRST_NAME", "LAST_NAME", "EMAIL"]


def test_non_structural_ddl_changes_nothing(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=[
        *insert(110, A, ROW),
        *ddl(120, "ALTER TABLE CUSTOMERS ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS"),
        *ddl(130, "CREATE INDEX CUST_EMAIL ON CUSTOMERS (EMAIL)"),
        *ddl(135, "COMMENT ON TABLE CUSTOMERS IS 'x'"),
        *insert(140, B, {**ROW, "ID": "2"})]))
    out = stream(db, 100)
    assert [r.topic for r in out] == ["server1.DEBEZIUM.CUSTOMERS"] * 2


def test_store_only_captured_tables_ddl(install: Any, tmp_path: Any) -> None:
    other = Table("DEBEZIUM", "OTHER", [("X", "NUMBER", 22, 9, 0, False)], ["X"])
    rows = [*ddl(130, "CREATE TABLE OTHER (X NUMBER(9) PRIMARY KEY)", table="OTHER"),
            *ddl(140, "ALTER TABLE CUSTOMERS ADD (PHONE VARCHAR2(20))")]
    for only, expected in (("false", ["130", "140"]), ("true", ["140"])):
        history = tmp_path / f"history-{only}.jsonl"
        db = install(RecordedOracle([customers(), other], scns=[300], redo_rows=list(rows)))
        out = stream(db, 100, **{"schema.history.internal.file.filename": str(history),
                                 "schema.history.internal.store.only.captured.tables.ddl": only})
        positions = [json.loads(line)["position"]["scn"] for line in history.read_text().splitlines()]
        # the ALTER of a table the model never saw: the dictionary's structure, recorded as CREATE
        assert positions == expected
        assert [r.value["source"]["table"] for r in out] == ["CUSTOMERS"]  # OTHER is not captured


def test_create_table_mid_stream_then_dml(install: Any) -> None:
    db = install(RecordedOracle([customers()], scns=[300], redo_rows=[
        *ddl(130, 'CREATE TABLE "DEBEZIUM"."NEW_T" ("K" NUMBER(4) NOT NULL, "V" NVARCHAR2(10), '
                  'CONSTRAINT NEW_PK PRIMARY KEY ("K")) TABLESPACE USERS', table="NEW_T"),
        *insert(140, B, {"K": "7", "V": "x"}, table="NEW_T")]))
    out = stream(db, 100, **{"table.include.list": "DEBEZIUM\\..*"})
    assert [r.topic for r in out] == ["server1", "server1.DEBEZIUM.NEW_T"]
    assert out[0].value["tableChanges"][0]["type"] == "CREATE"
    assert out[1].key == {"K": 7} and out[1].value["after"] == {"K": 7, "V": "x"}


def test_create_table_as_select_takes_the_dictionary_structure(install: Any, tmp_path: Any) -> None:
    history = tmp_path / "history.jsonl"
    copy = Table("DEBEZIUM", "CUST_COPY", [("ID", "NUMBER", 22, 9, 0, False), ("EMAIL", "VARCHAR2", 255, None, None,
                                                                                 True)], [])
    db = install(RecordedOracle([customers(), copy], scns=[300], redo_rows=[
        *ddl(130, "CREATE TABLE CUST_COPY AS SELECT ID, EMAIL FROM CUSTOMERS", table="CUST_COPY"),
        *insert(140, B, {"ID": "7", "EMAIL": "x"}, table="CUST_COPY")]))
    out = stream(db, 100, **{"table.include.list": "DEBEZIUM\\..*",
                             "schema.history.internal.file.filename": str(history)})
    assert [r.topic for r in out] == ["server1", "server1.DEBEZIUM.CUST_COPY"]
    assert out[0].value["ddl"] == "CREATE TABLE CUST_COPY AS SELECT ID, EMAIL FROM CUSTOMERS"
    assert out[1].value["after"] == {"ID": 7, "EMAIL": "x"}
    [record] = [json.loads(line) for line in history.read_text().splitlines()]
    assert record["ddl"] == ('CREATE TABLE "DEBEZIUM"."CUST_COPY" '
                             '("ID" NUMBER(9,0) NOT NULL, "EMAIL" VARCHAR2(255 CHAR))')
