"""MySQL/MariaDB capture against a real MariaDB 10.11: snapshot, streaming, DDL, restart."""

from __future__ import annotations

import json
import time

import pytest
from mysql_capture_support import (
    CaptureThread,
    capture,
    data_events,
    fresh_database,
    ops,
    records,
    sql,
    write_properties,
)

from lakecdc.capture.mysql.errors import DdlParseError

pytestmark = pytest.mark.integration

CUSTOMERS = (
    "CREATE TABLE customers (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name VARCHAR(255) NOT NULL, "
    "last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE KEY) AUTO_INCREMENT=1001 "
    "DEFAULT CHARSET=latin1"
)


def test_snapshot_then_streaming_with_every_event_kind(mariadb, tmp_path):
    db = "it_events"
    fresh_database(mariadb, db)
    # another database on the server: its structure is in the snapshot's schema changes too (as in
    # Debezium), which the assertions below must tell apart from this database's
    fresh_database(mariadb, "it_events_neighbour")
    sql(mariadb, "it_events_neighbour", "CREATE TABLE other (id INT PRIMARY KEY)")
    sql(mariadb, db, CUSTOMERS,
        "INSERT INTO customers VALUES (1001,'Sally','Thomas','sally@x'),(1002,'George','Bailey','gb@x')")
    props = write_properties(tmp_path / "c.properties", mariadb, db, provide__transaction__metadata="true",
                             include__query="true", skipped__operations="none")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=3, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db,
        "INSERT INTO customers VALUES (1004,'Anne','Kretchmar','annek@noanswer.org')",
        "UPDATE customers SET first_name='Anne Marie' WHERE id=1004",
        "BEGIN", "UPDATE customers SET id=2004 WHERE id=1004", "INSERT INTO customers VALUES (1005,'E','F','ef@x')",
        "COMMIT",
        "ALTER TABLE customers ADD COLUMN middle_name VARCHAR(2000)",
        "INSERT INTO customers VALUES (1006,'G','H','gh@x','M')",
        "DELETE FROM customers WHERE id=1006",
        "TRUNCATE TABLE customers")
    stats = runner.wait()
    recs = records(out)
    assert stats.snapshot_rows == 2
    table_ops = ops(recs, "customers")
    assert table_ops == ["r", "r", "c", "u", "d", "c", "c", "c", "d", "t"]

    events = data_events(recs, "customers")
    snap = events[:2]
    assert [e["source"]["snapshot"] for e in snap] == ["first", "last"]
    assert all(e["source"]["file"] == snap[0]["source"]["file"] and e["source"]["row"] == 0 for e in snap)

    insert, update, pk_delete, pk_create, other_insert, after_alter, delete, truncate = events[2:]
    assert insert["after"] == {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar",
                               "email": "annek@noanswer.org"}
    assert insert["source"]["query"] == "INSERT INTO customers VALUES (1004,'Anne','Kretchmar','annek@noanswer.org')"
    assert insert["source"]["gtid"] and insert["source"]["server_id"] == mariadb.server_id
    assert update["before"]["first_name"] == "Anne" and update["after"]["first_name"] == "Anne Marie"
    # the primary key change: delete (old key) + tombstone + create (new key) with key headers
    assert pk_delete["before"]["id"] == 1004 and pk_create["after"]["id"] == 2004
    raw = [r for r in recs if r["topic"] == "dbz.it_events.customers"]
    delete_index = next(i for i, r in enumerate(raw) if r["value"] and r["value"]["payload"] is pk_delete or
                        (r["value"] and r["value"]["payload"]["op"] == "d"
                         and r["value"]["payload"]["before"]["id"] == 1004))
    # key headers as the header converter writes them (schema and payload), then Debezium 3's context headers
    def headers(record):
        return [(h["key"], h["value"]["payload"]) for h in record["headers"]]
    context = [("__debezium.context.connectorLogicalName", "dbz"), ("__debezium.context.taskId", "0"),
               ("__debezium.context.connectorName", "mysql")]
    assert headers(raw[delete_index])[:4] == [("__debezium.newkey", {"id": 2004}), *context]
    assert raw[delete_index + 1]["value"] is None and raw[delete_index + 1]["key"]["payload"] == {"id": 1004}
    assert raw[delete_index + 1]["headers"] == raw[delete_index]["headers"]  # Debezium's tombstone keeps them
    assert headers(raw[delete_index + 2])[:4] == [("__debezium.oldkey", {"id": 1004}), *context]
    # rows after the ALTER carry the new column, rows before it do not
    assert "middle_name" not in other_insert["after"]
    assert after_alter["after"]["middle_name"] == "M"
    assert delete["after"] is None and delete["before"]["id"] == 1006
    tombstone_after_delete = [r for r in raw if r["value"] is None and r["key"]["payload"] == {"id": 1006}]
    assert len(tombstone_after_delete) == 1
    assert truncate["before"] is None and truncate["after"] is None
    truncate_record = next(r for r in raw if r["value"] and r["value"]["payload"]["op"] == "t")
    assert truncate_record["key"] is None
    # positions strictly increase along the stream
    streamed = [e["source"] for e in events[2:]]
    keys = [(s["file"], s["pos"], s["row"]) for s in streamed]
    assert keys == sorted(keys)

    # schema change topic: the snapshot's statements (as Debezium's BinlogSnapshotChangeEventSource) and
    # the streamed ALTER, keyed by database
    changes = [r for r in recs if r["topic"] == "dbz" and r["value"]["payload"]["databaseName"] in ("", db)]
    neighbour = [r for r in recs if r["topic"] == "dbz" and r not in changes]
    assert "it_events_neighbour" in {r["value"]["payload"]["databaseName"] for r in neighbour}
    assert [" ".join(c["value"]["payload"]["ddl"].split()[:2]) for c in changes] == [
        "SET character_set_server=utf8mb4,", "DROP TABLE", "DROP DATABASE", "CREATE DATABASE", "USE `it_events`",
        "CREATE TABLE", "ALTER TABLE"]
    assert [c["value"]["payload"]["tableChanges"][0]["type"] for c in changes
            if c["value"]["payload"]["tableChanges"]] == ["DROP", "CREATE", "ALTER"]
    alter = changes[-1]
    assert alter["key"]["payload"] == {"databaseName": db}
    assert alter["value"]["payload"]["ddl"] == "ALTER TABLE customers ADD COLUMN middle_name VARCHAR(2000)"
    columns = alter["value"]["payload"]["tableChanges"][0]["table"]["columns"]
    assert [c["name"] for c in columns][-1] == "middle_name" and columns[-1]["charsetName"] == "latin1"
    assert alter["value"]["payload"]["tableChanges"][0]["table"]["primaryKeyColumnNames"] == ["id"]

    # transaction metadata: the two-statement transaction is one BEGIN/END with 3 events
    txs = [r["value"]["payload"] for r in recs if r["topic"] == "dbz.transaction"]
    ends = [t for t in txs if t["status"] == "END"]
    multi = next(t for t in ends if t["event_count"] == 3)
    assert multi["data_collections"] == [{"data_collection": f"{db}.customers", "event_count": 3}]
    assert pk_delete["transaction"]["id"] == multi["id"] == pk_create["transaction"]["id"]
    assert [pk_delete["transaction"]["total_order"], pk_create["transaction"]["total_order"],
            other_insert["transaction"]["total_order"]] == [1, 2, 3]
    begins = [t for t in txs if t["status"] == "BEGIN"]
    assert len(begins) == len(ends)


def test_restart_resumes_from_offset_with_history_replayed(mariadb, tmp_path):
    db = "it_restart"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1,'a')")
    props = write_properties(tmp_path / "c.properties", mariadb, db)
    out = tmp_path / "out.jsonl"
    capture(props, out, stop_when_idle=1.5)
    first = records(out)
    assert ops(first, "t") == ["r"]
    # while capture is stopped: a row, a column, another row, a rename swap
    sql(mariadb, db, "INSERT INTO t VALUES (2,'b')", "ALTER TABLE t ADD COLUMN w INT DEFAULT 7",
        "INSERT INTO t (id, v) VALUES (3,'c')", "UPDATE t SET w = 8 WHERE id = 1")
    capture(props, out, stop_when_idle=1.5)
    recs = records(out)
    events = data_events(recs, "t")
    assert [e["op"] for e in events] == ["r", "c", "c", "u"]
    assert events[1]["after"] == {"id": 2, "v": "b"}  # before the ALTER: old structure
    assert events[2]["after"] == {"id": 3, "v": "c", "w": 7}
    assert events[3]["before"] == {"id": 1, "v": "a", "w": 7} and events[3]["after"]["w"] == 8
    value_schema = next(r for r in recs if r["value"] and r["value"]["payload"].get("op") == "c"
                        and r["value"]["payload"]["after"]["id"] == 3)["value"]["schema"]
    after_fields = value_schema["fields"][1]["fields"]
    assert after_fields[-1] == {"type": "int32", "optional": True, "default": 7, "field": "w"}
    # a third start with nothing new emits nothing
    before = len(records(out))
    capture(props, out, stop_when_idle=1.0)
    assert len(records(out)) == before


def test_mid_transaction_restart_skips_exactly_what_was_delivered(mariadb, tmp_path):
    from lakecdc.capture.mysql.offset import in_transaction_offset

    db = "it_midtx"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, snapshot__mode="no_data")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=2, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "BEGIN", "INSERT INTO t VALUES (1),(2),(3)", "INSERT INTO t VALUES (4),(5)", "COMMIT")
    runner.wait()
    events = data_events(records(out), "t")
    assert [e["after"]["id"] for e in events] == [1, 2, 3, 4, 5]
    # pretend the process died after delivering rows 1..4: offset inside the transaction
    fourth = events[3]["source"]
    first_event_pos = events[0]["source"]["pos"]
    offsets_file = props.with_suffix(".offsets.json")
    stored = json.loads(offsets_file.read_text())
    key = next(iter(stored))
    gtid_before = None  # the transaction is the only one since the snapshot: GTID state before it
    tx_gtid = events[0]["source"]["gtid"]
    domain, server, seq = tx_gtid.split("-")
    gtid_before = f"{domain}-{server}-{int(seq) - 1}"
    stored[key] = in_transaction_offset(fourth["file"], first_event_pos - 0, fourth["pos"], fourth["row"] + 1, 1,
                                        mariadb.server_id, gtid_before, None)
    # restart position: the transaction's GTID event, which precedes the first rows event
    stored[key]["pos"] = stored[key]["pos"]
    offsets_file.write_text(json.dumps(stored))
    out2 = tmp_path / "out2.jsonl"
    capture(props, out2, stop_when_idle=1.5)
    again = data_events(records(out2), "t")
    assert [e["after"]["id"] for e in again] == [5]


def test_snapshot_modes_initial_only_and_no_data(mariadb, tmp_path):
    db = "it_modes"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1),(2)")
    props = write_properties(tmp_path / "a.properties", mariadb, db, snapshot__mode="initial_only")
    out = tmp_path / "a.jsonl"
    stats = capture(props, out, stop_when_idle=1)
    assert stats.snapshot_rows == 2 and stats.streamed_records == 0
    assert ops(records(out), "t") == ["r", "r"]

    props = write_properties(tmp_path / "b.properties", mariadb, db, snapshot__mode="schema_only")
    out = tmp_path / "b.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=2, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "INSERT INTO t VALUES (3)")
    runner.wait()
    recs = records(out)
    assert ops(recs, "t") == ["c"]
    # (the other databases on the server are in the snapshot's schema changes too, as in Debezium)
    assert [(r["value"]["payload"]["tableChanges"][0]["type"], r["value"]["payload"]["tableChanges"][0]["id"])
            for r in recs if r["topic"] == "dbz" and r["value"]["payload"]["tableChanges"]
            and r["value"]["payload"]["source"]["db"] == db] == [("DROP", f'"{db}"."t"'), ("CREATE", f'"{db}"."t"')]


def test_table_filters_and_column_filters(mariadb, tmp_path):
    db = "it_filters"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE keep (id INT PRIMARY KEY, secret VARCHAR(5), v INT)",
        "CREATE TABLE skip_me (id INT PRIMARY KEY)", "INSERT INTO keep VALUES (1,'s',1)",
        "INSERT INTO skip_me VALUES (1)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, table__include__list=f"{db}.keep",
                             column__exclude__list=f"{db}.keep.secret")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=2, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "INSERT INTO keep VALUES (2,'t',2)", "INSERT INTO skip_me VALUES (2)")
    runner.wait()
    recs = records(out)
    assert {r["topic"] for r in recs} == {"dbz", f"dbz.{db}.keep"}
    assert [e["after"] for e in data_events(recs)] == [{"id": 1, "v": 1}, {"id": 2, "v": 2}]


def test_gh_ost_cut_over_changes_the_captured_table(mariadb, tmp_path):
    db = "it_ghost"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, table__include__list=f"{db}.t")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=2.5, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "CREATE TABLE `_t_gho` LIKE `t`", "ALTER TABLE `_t_gho` ADD COLUMN w VARCHAR(5) DEFAULT 'x'",
        "INSERT INTO `_t_gho` (id, v) SELECT id, v FROM t",
        f"RENAME TABLE `{db}`.`t` TO `{db}`.`_t_del`, `{db}`.`_t_gho` TO `{db}`.`t`",
        "DROP TABLE `_t_del`", "INSERT INTO t VALUES (2, 2, 'y')")
    runner.wait()
    events = data_events(records(out), "t")
    assert [e["op"] for e in events] == ["r", "c"]
    assert events[-1]["after"] == {"id": 2, "v": 2, "w": "y"}


def test_unparseable_ddl_stops_with_statement_and_position_unless_skipped(mariadb, tmp_path):
    db = "it_badddl"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, snapshot__mode="no_data")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=3, mariadb=mariadb).start()
    runner.wait_streaming()
    # Oracle mode lets MariaDB accept a type this dialect parser does not know
    sql(mariadb, db, "SET SESSION sql_mode = 'ORACLE'", "ALTER TABLE t ADD c VARCHAR2(10)")
    with pytest.raises(DdlParseError) as info:
        runner.wait()
    assert "VARCHAR2" in str(info.value) and "binlog position binlog." in str(info.value)
    # with schema.history.internal.skip.unparseable.ddl the statement is logged and skipped
    out2 = tmp_path / "out2.jsonl"
    props2 = write_properties(tmp_path / "d.properties", mariadb, db, snapshot__mode="no_data",
                              schema__history__internal__skip__unparseable__ddl="true")
    runner = CaptureThread(props2, out2, stop_when_idle=2, mariadb=mariadb).start()
    runner.wait_streaming()
    sql(mariadb, db, "SET SESSION sql_mode = 'ORACLE'", "ALTER TABLE t ADD d VARCHAR2(10)",
        "SET SESSION sql_mode = DEFAULT", "CREATE TABLE t2 (id INT PRIMARY KEY)", "INSERT INTO t2 VALUES (1)")
    runner.wait()
    assert ops(records(out2), "t2") == ["c"]


def test_binlog_connection_killed_mid_stream_repeats_nothing_and_loses_nothing(mariadb, tmp_path):
    """The binlog client reconnects by itself and re-reads from where it first started; every
    re-delivered event must be recognised by its position."""
    from mysql_capture_support import dump_threads

    db = "it_reconnect"
    fresh_database(mariadb, db)
    sql(mariadb, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    props = write_properties(tmp_path / "c.properties", mariadb, db, snapshot__mode="no_data")
    out = tmp_path / "out.jsonl"
    runner = CaptureThread(props, out, stop_when_idle=3, mariadb=mariadb).start()
    runner.wait_streaming()
    for batch in range(4):
        sql(mariadb, db, *[f"INSERT INTO t (id, v) VALUES ({batch * 10 + i}, {i})" for i in range(10)],
            "ALTER TABLE t ADD COLUMN c%d INT" % batch if batch < 2 else "UPDATE t SET v = v + 1")
        time.sleep(0.5)
        for thread_id in dump_threads(mariadb):
            mariadb.admin_sql(f"KILL {thread_id};\n")
        time.sleep(0.5)
    runner.wait()
    events = data_events(records(out), "t")
    positions = [(e["source"]["file"], e["source"]["pos"], e["source"]["row"]) for e in events]
    assert len(positions) == len(set(positions)), "an event was emitted twice after a reconnect"
    assert sorted(e["after"]["id"] for e in events if e["op"] == "c") == list(range(40))
    # the UPDATE of batch 2 touches 30 rows, that of batch 3 all 40
    assert sum(1 for e in events if e["op"] == "u") == 70
    assert events[-1]["after"].keys() == {"id", "v", "c0", "c1"}
