"""Streaming from recorded change-table answers: key changes, transaction metadata (seed 1.4.9),
a new capture instance (seed 1.4.14), restart inside a commit, reconnects and heartbeats."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from sqlserver_recordings import CUSTOMERS, RecordedServer, base_properties, columns_result, lsn_b
from sqlserver_replay import ResultSet
from test_sqlserver_seed_golden import after, run

from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.connector import SqlServerConnector
from lakecdc.events.envelope import HEADER_NEW_KEY, HEADER_OLD_KEY

COLS = [c[0] for c in CUSTOMERS]
START = "00000025:00000d98:00a2"
CONTEXT = ["__debezium.context.connectorLogicalName", "__debezium.context.taskId",
           "__debezium.context.connectorName", "__debezium.context.runId"]
STORED = {"commit_lsn": START, "event_serial_no": 0, "snapshot": True, "snapshot_completed": True}


def streaming_only(server: RecordedServer, tmp_path: Path, offset: dict[str, Any] = STORED) -> None:
    """Store an offset as a finished snapshot would, so that runs go straight to streaming."""
    key = json.dumps(["server1", {"server": "server1", "database": "testDB"}], separators=(",", ":"))
    (tmp_path / "offsets.json").write_text(json.dumps({key: offset}))


def data(records: list[Any], topic: str = "server1.testDB.dbo.customers") -> list[Any]:
    return [r for r in records if r.topic == topic]


def test_primary_key_update_as_delete_and_insert_rows(tmp_path: Path) -> None:
    commit, seq = "00000027:00000900:0004", "00000027:00000900:0002"
    server = RecordedServer().customers().passes(START, commit).lsn_time(commit, 1559729468470)
    server.changes("dbo_customers", after(START), commit, COLS, [
        (commit, seq, 1, 1005, "John", "Doe", "j@example.org"),
        (commit, seq, 2, 2005, "John", "Doe", "j@example.org")])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path)
    events = data(sink.records)
    assert [(r.op, r.key) for r in events] == [("d", {"id": 1005}), (None, {"id": 1005}), ("c", {"id": 2005})]
    serials = [r.value["source"]["event_serial_no"] for r in events if r.value is not None]
    assert serials == [1, 2]  # seed 1.4.5: same commit and change LSN, serial numbers 1 and 2


def test_update_changing_the_key_becomes_delete_tombstone_create_with_key_headers(tmp_path: Path) -> None:
    commit, seq = "00000027:00000900:0004", "00000027:00000900:0002"
    server = RecordedServer().customers().passes(START, commit).lsn_time(commit, 1559729468470)
    server.changes("dbo_customers", after(START), commit, COLS, [
        (commit, seq, 3, 1005, "John", "Doe", "j@example.org"),
        (commit, seq, 4, 3005, "John", "Doe", "j@example.org")])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path)
    delete, tombstone, create = data(sink.records)
    assert (delete.op, tombstone.value, create.op) == ("d", None, "c")
    assert dict(delete.headers)[HEADER_NEW_KEY] == b'{"id":3005}'
    assert dict(create.headers)[HEADER_OLD_KEY] == b'{"id":1005}'
    # key-change headers first, then Debezium 3's context headers; the tombstone keeps the delete's
    assert [n for n, _ in delete.headers] == [HEADER_NEW_KEY, *CONTEXT]
    assert [n for n, _ in tombstone.headers] == [HEADER_NEW_KEY, *CONTEXT]
    assert [n for n, _ in create.headers] == [HEADER_OLD_KEY, *CONTEXT]
    (tmp_path / "off").mkdir()
    streaming_only(server, tmp_path / "off")
    off, _, _ = run(server, tmp_path / "off", extended__headers__enabled="false")
    delete, tombstone, create = data(off.records)
    assert [n for n, _ in delete.headers] == [n for n, _ in tombstone.headers] == [HEADER_NEW_KEY]


def test_transaction_metadata_matches_the_seed_example(tmp_path: Path) -> None:
    tx = "00000025:00000d08:0025"
    columns = [("pk", "int", None, 10, 0, None, "NO"), ("aa", "int", None, 10, 0, None, "YES")]
    server = RecordedServer().cdc_database().user_tables(("dbo", "tablea", True), ("dbo", "tableb", True))
    server.instances([
        RecordedServer.instance_row("dbo", "tablea", "dbo_tablea", "00000024:00000001:0001", ["pk", "aa"], ["pk"]),
        RecordedServer.instance_row("dbo", "tableb", "dbo_tableb", "00000024:00000001:0001", ["pk", "aa"], ["pk"])])
    server.columns("dbo", "tablea", columns, ["pk"]).columns("dbo", "tableb", columns, ["pk"])
    start = "00000025:00000c00:0001"
    server.passes(start, tx).lsn_time(tx, 1580390884335)
    server.changes("dbo_tablea", after(start), tx, ["pk", "aa"], [(tx, "00000025:00000d08:0002", 2, 1, 1)])
    server.changes("dbo_tableb", after(start), tx, ["pk", "aa"], [(tx, "00000025:00000d08:0003", 2, 2, 1)])
    streaming_only(server, tmp_path, {"commit_lsn": start, "event_serial_no": 0})
    sink, store, _ = run(server, tmp_path, table__include__list="dbo.tablea,dbo.tableb",
                         provide__transaction__metadata="true")
    begin, ev_a, ev_b, end = sink.records
    assert begin.topic == end.topic == "server1.transaction"
    assert {k: begin.value[k] for k in ("status", "id", "event_count", "data_collections")} == \
        {"status": "BEGIN", "id": tx, "event_count": None, "data_collections": None}
    assert {k: end.value[k] for k in ("status", "id", "event_count", "data_collections")} == {
        "status": "END", "id": tx, "event_count": 2,
        "data_collections": [{"data_collection": "testDB.dbo.tablea", "event_count": 1},
                             {"data_collection": "testDB.dbo.tableb", "event_count": 1}]}
    assert ev_a.value["transaction"] == {"id": tx, "total_order": 1, "data_collection_order": 1}
    assert ev_b.value["transaction"] == {"id": tx, "total_order": 2, "data_collection_order": 1}
    assert ev_a.value["after"] == {"pk": 1, "aa": 1} and ev_a.value["source"]["ts_ms"] == 1580390884335


def test_new_capture_instance_switches_structure_at_its_start_lsn(tmp_path: Path, caplog: Any) -> None:
    """Seed 1.4.14's online schema change: dbo_customers_v2 adds phone_number and starts at the
    old instance's stop LSN; the old instance's rows from there on are not read."""
    caplog.set_level("INFO")
    switch = "00000025:00000ef8:0048"
    to = "00000025:00000f00:0010"
    old_row = RecordedServer.instance_row("dbo", "customers", "dbo_customers", "00000024:00000100:0001", COLS)
    new_row = RecordedServer.instance_row("dbo", "customers", "dbo_customers_v2", switch, [*COLS, "phone_number"])
    server = RecordedServer().cdc_database().user_tables(("dbo", "customers", True))
    server.instances([old_row], [old_row, new_row])
    phone = ("phone_number", "varchar", 32, None, None, None, "YES")
    server.columns("dbo", "customers", CUSTOMERS, ["id"])
    server.rec.add(*_columns_answer(CUSTOMERS + [phone]))
    server.passes(START, to)
    server.changes("dbo_customers", after(START), to, COLS, [
        ("00000025:00000e00:0005", "00000025:00000e00:0002", 2, 1006, "Ann", "Lee", "ann@example.org"),
        ("00000025:00000f00:0008", "00000025:00000f00:0003", 2, 1007, "Bob", "Ray", "bob@example.org")])
    server.changes("dbo_customers_v2", switch, to, [*COLS, "phone_number"], [
        ("00000025:00000f00:0008", "00000025:00000f00:0003", 2, 1007, "Bob", "Ray", "bob@example.org",
         "+1-555-123456")])
    server.lsn_time("00000025:00000e00:0005", 1559729468000).lsn_time("00000025:00000f00:0008", 1559729469000)
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path)
    first, alter, second = [r for r in sink.records if r.topic in ("server1", "server1.testDB.dbo.customers")]
    assert alter.topic == "server1" and alter.value["tableChanges"][0]["type"] == "ALTER"
    assert alter.value["source"]["commit_lsn"] == switch and alter.value["source"]["snapshot"] == "false"
    assert [c["name"] for c in alter.value["tableChanges"][0]["table"]["columns"]][-1] == "phone_number"
    assert first.value["after"] == {"id": 1006, "first_name": "Ann", "last_name": "Lee", "email": "ann@example.org"}
    assert second.value["after"]["phone_number"] == "+1-555-123456"
    phone_field = second.value_schema.field("after").schema.field("phone_number")
    assert phone_field.schema.to_json(phone_field.name) == {"type": "string", "optional": True, "field": "phone_number"}
    assert "Multiple capture instances present for the same table" in caplog.text
    assert "Migrating schema to ChangeTable [captureInstance=dbo_customers_v2" in caplog.text


def _columns_answer(columns: list[tuple[Any, ...]]) -> tuple[str, Any, ResultSet]:
    from lakecdc.capture.sqlserver import connection as sq

    return sq.Q_COLUMNS, ("dbo", "customers"), columns_result(columns)


def test_restart_inside_a_commit_emits_the_rest_once(tmp_path: Path) -> None:
    commit = "00000027:00000900:0009"
    s1, s2 = "00000027:00000900:0002", "00000027:00000900:0005"
    server = RecordedServer().customers().passes(START, commit).lsn_time(commit, 1559729468470)
    rows = [(commit, s1, 2, 1, "A", "A", "a@x"), (commit, s2, 2, 2, "B", "B", "b@x")]
    server.changes("dbo_customers", after(START), commit, COLS, rows)
    server.changes("dbo_customers", commit, commit, COLS, rows)  # re-read from the commit after the crash
    config = SqlServerConnectorConfig.from_properties(base_properties())
    connector = SqlServerConnector(config, connection_factory=server.connect)
    source = connector.streaming_source()
    source.start(STORED)
    out: list[Any] = []
    while not out:
        source.poll(out, 1, 0.01)  # the first event only, then "crash"
    offset = source.committable_offset()
    source.close()
    assert offset == {"commit_lsn": commit, "change_lsn": s1, "event_serial_no": 1}
    restarted = connector.streaming_source()
    restarted.start(offset)
    rest: list[Any] = []
    restarted.poll(rest, 100, 0.01)
    restarted.close()
    assert [r.value["after"]["id"] for r in out + rest] == [1, 2]


def test_lost_connection_reconnects_and_resumes(tmp_path: Path) -> None:
    commit = "00000027:00000900:0009"
    server = RecordedServer().customers().lsn_time(commit, 1559729468470)
    from lakecdc.capture.sqlserver import connection as sq

    server.rec.add(sq.Q_NTH_TX_LSN_FROM_LAST, (500, lsn_b(START)),
                   ResultSet([("", 2)], [], error="DB-Lib error message 20047: connection dead"))
    server.passes(START, commit)
    server.changes("dbo_customers", after(START), commit, COLS,
                   [(commit, "00000027:00000900:0002", 2, 1, "A", "A", "a@x")])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path)
    assert [r.value["after"]["id"] for r in data(sink.records)] == [1]


def test_heartbeats_while_idle(tmp_path: Path) -> None:
    server = RecordedServer().customers().passes(START)
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, replay_stop=False, heartbeat__interval__ms="20")
    beats = [r for r in sink.records if r.topic == "__debezium-heartbeat.server1"]
    assert beats and beats[0].key == {"serverName": "server1"}


def test_max_iteration_transactions_bounds_each_pass(tmp_path: Path) -> None:
    """Two transactions, one per pass with max.iteration.transactions=1; 0 reads to the last one."""
    t1, t2 = "00000027:00000900:0004", "00000027:00000a00:0004"
    server = RecordedServer().customers().passes(START, t1, t2, max_transactions=1)
    server.lsn_time(t1, 1559729468000).lsn_time(t2, 1559729469000)
    server.changes("dbo_customers", after(START), t1, COLS, [(t1, "00000027:00000900:0002", 2, 1, "A", "A", "a@x")])
    server.changes("dbo_customers", after(t1), t2, COLS, [(t2, "00000027:00000a00:0002", 2, 2, "B", "B", "b@x")])
    streaming_only(server, tmp_path)
    sink, store, _ = run(server, tmp_path, max__iteration__transactions="1")
    assert [r.value["after"]["id"] for r in data(sink.records)] == [1, 2]

    from lakecdc.capture.sqlserver import connection as sq

    whole = RecordedServer().customers().lsn_time(t2, 1559729469000)
    whole.rec.add(sq.Q_MAX_TX_LSN, None, ResultSet([("", 2)], [(lsn_b(t2),)]))
    whole.changes("dbo_customers", after(START), t2, COLS, [
        (t1, "00000027:00000900:0002", 2, 1, "A", "A", "a@x"), (t2, "00000027:00000a00:0002", 2, 2, "B", "B", "b@x")])
    whole.lsn_time(t1, 1559729468000)
    other = tmp_path / "whole"
    other.mkdir()
    streaming_only(whole, other)
    sink, _, _ = run(whole, other, max__iteration__transactions="0")
    assert [r.value["after"]["id"] for r in data(sink.records)] == [1, 2]


def test_new_capture_instance_with_the_same_columns_emits_no_alter(tmp_path: Path) -> None:
    switch, to = "00000025:00000ef8:0048", "00000025:00000f00:0010"
    old_row = RecordedServer.instance_row("dbo", "customers", "dbo_customers", "00000024:00000100:0001", COLS)
    new_row = RecordedServer.instance_row("dbo", "customers", "dbo_customers_v2", switch, COLS)
    server = (RecordedServer().cdc_database().user_tables(("dbo", "customers", True))
              .instances([old_row], [old_row, new_row]))
    server.columns("dbo", "customers", CUSTOMERS, ["id"]).passes(START, to)
    server.changes("dbo_customers", after(START), to, COLS, [])
    server.changes("dbo_customers_v2", switch, to, COLS, [
        ("00000025:00000f00:0008", "00000025:00000f00:0003", 2, 1007, "Bob", "Ray", "bob@example.org")])
    server.lsn_time("00000025:00000f00:0008", 1559729469000)
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path)
    assert [(r.topic, r.op) for r in sink.records] == [("server1.testDB.dbo.customers", "c")]



def test_context_headers_on_data_records_and_tombstones_only(tmp_path: Path) -> None:
    from test_sqlserver_seed_golden import seed_server

    sink, _, _ = run(seed_server(), tmp_path, provide__transaction__metadata="true")
    for record in sink.records:
        names = [name for name, _ in record.headers]
        if record.topic == "server1.testDB.dbo.customers":
            assert names == CONTEXT, record
            assert dict(record.headers)["__debezium.context.connectorName"] == \
                b'{"schema":{"type":"string","optional":false},"payload":"sqlserver"}'
        else:  # transaction, schema change records
            assert names == []
    run_ids = {dict(r.headers)["__debezium.context.runId"] for r in sink.records if r.headers}
    assert len(run_ids) == 1  # one run id for the whole run
    off, _, _ = run(seed_server(), tmp_path / "off", extended__headers__enabled="false")
    assert all(r.headers == [] for r in off.records)


def _bad_value_server() -> RecordedServer:
    """dbo.events(pk int, at date): pymssql would give a date; a corrupt answer gives text."""
    commit = "00000027:00000900:0009"
    columns = [("pk", "int", None, 10, 0, None, "NO"), ("at", "date", None, None, None, None, "YES")]
    server = RecordedServer().cdc_database().user_tables(("dbo", "events", True))
    server.instances([RecordedServer.instance_row("dbo", "events", "dbo_events",
                                                  "00000024:00000001:0001", ["pk", "at"], ["pk"])])
    server.columns("dbo", "events", columns, ["pk"]).passes(START, commit).lsn_time(commit, 1559729468470)
    server.changes("dbo_events", after(START), commit, ["pk", "at"], [
        (commit, "00000027:00000900:0002", 2, 1, "2019-13-45"),
        (commit, "00000027:00000900:0003", 2, 2, dt.date(2019, 6, 5))])
    return server


def test_unconvertible_value_fails_naming_the_position(tmp_path: Path) -> None:
    import pytest

    from lakecdc.capture.sqlserver.errors import SqlServerTypeError

    server = _bad_value_server()
    streaming_only(server, tmp_path)
    with pytest.raises(SqlServerTypeError, match=r"dbo\.events at commit LSN 00000027:00000900:0009 change LSN "
                                                 r"00000027:00000900:0002.*event\.processing\.failure\.handling\.mode"):
        run(server, tmp_path, table__include__list="dbo.events")


def test_unconvertible_value_is_skipped_with_warn(tmp_path: Path, caplog: Any) -> None:
    server = _bad_value_server()
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, event__processing__failure__handling__mode="warn",
                     table__include__list="dbo.events")
    assert [r.value["after"] for r in data(sink.records, "server1.testDB.dbo.events")] == [{"pk": 2, "at": 18052}]
    assert "skipping the change of table dbo.events" in caplog.text
