"""PostgreSQL capture behaviour on a real server (PostgreSQL 18 fixture): snapshot modes, restart,
replica identity, TOAST, keys, tombstones, messages, schema changes, heartbeats, publication and
slot management, failures."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_capture_support import (
    CaptureThread,
    fresh_database,
    load_records,
    slot_is_streaming,
    wait_for,
    write_properties,
)

from lakecdc.capture.postgres.errors import PrivilegeError, PublicationMissingError, SlotMissingError
from lakecdc.capture.runner import run_capture
from lakecdc.errors import LakecdcError

pytestmark = pytest.mark.integration

DB = "behave"


@pytest.fixture
def db(pg: Any) -> str:
    dsn = fresh_database(pg, DB)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text, qty int, big text)")
        conn.execute("INSERT INTO items VALUES (1, 'one', 1, NULL), (2, 'two', 2, NULL)")
    return dsn


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def capture(pg: Any, tmp_path: Path, dsn: str, workload: tuple[str, ...] = (), name: str = "run",
            idle: float = 2.0, **props: str) -> list[dict[str, Any]]:
    """One capture run: start, wait until it streams (unless it stops first), run the workload,
    stop when idle; returns that run's records."""
    base = {"table.include.list": "public.items", "provide.transaction.metadata": "false"}
    base.update({k.replace("__", "."): v for k, v in props.items()})
    config = write_properties(tmp_path / "connector.properties", pg, DB, base)
    out = tmp_path / f"{name}.jsonl"
    run = CaptureThread(config, out, stop_when_idle=idle).start()
    if workload:
        slot = base.get("slot.name", f"{DB}_slot")
        wait_for(lambda: run.done or slot_is_streaming(dsn, slot), what="streaming")
        if run.done:  # stopped before it streamed: its error, if any, says why
            run.wait()
        sql(dsn, *workload)
    run.wait()
    return load_records(out) if out.exists() else []


def ops(records: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    out = []
    for r in records:
        if r["topic"].startswith("__debezium-heartbeat"):
            continue
        key = r["key"]["payload"] if r["key"] else None
        out.append((r["value"]["payload"]["op"] if r["value"] else "tombstone", key))
    return out


def payloads(records: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    return [r["value"]["payload"] for r in records if r["value"] and r["value"]["payload"].get("op") == op]


# -- snapshot modes and restart ----------------------------------------------------------------
def test_initial_snapshots_once_then_resumes_without_duplicates(pg: Any, db: str, tmp_path: Path) -> None:
    first = capture(pg, tmp_path, db, ("INSERT INTO items VALUES (3, 'three', 3, NULL)",), "first")
    assert ops(first) == [("r", {"id": 1}), ("r", {"id": 2}), ("c", {"id": 3})]
    assert [p["source"]["snapshot"] for p in payloads(first, "r")] == ["first", "last"]
    sql(db, "UPDATE items SET qty = 30 WHERE id = 3")  # while stopped: kept by the slot
    second = capture(pg, tmp_path, db, ("DELETE FROM items WHERE id = 1",), "second")
    assert ops(second) == [("u", {"id": 3}), ("d", {"id": 1}), ("tombstone", {"id": 1})]
    first_lsn = payloads(first, "c")[0]["source"]["lsn"]
    assert payloads(second, "u")[0]["source"]["lsn"] > first_lsn


def test_always_snapshots_at_every_start(pg: Any, db: str, tmp_path: Path) -> None:
    capture(pg, tmp_path, db, name="first", snapshot__mode="always")
    sql(db, "INSERT INTO items VALUES (3, 'three', 3, NULL)")
    second = capture(pg, tmp_path, db, name="second", snapshot__mode="always")
    assert ops(second) == [("r", {"id": 1}), ("r", {"id": 2}), ("r", {"id": 3})]


def test_never_streams_only(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("INSERT INTO items VALUES (3, 'three', 3, NULL)",), snapshot__mode="never")
    assert ops(records) == [("c", {"id": 3})]


def test_no_data_streams_without_snapshot_rows(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("UPDATE items SET qty = 5 WHERE id = 2",), snapshot__mode="no_data")
    assert ops(records) == [("u", {"id": 2})]


def test_initial_only_snapshots_and_stops_then_does_nothing(pg: Any, db: str, tmp_path: Path) -> None:
    first = capture(pg, tmp_path, db, name="first", snapshot__mode="initial_only")
    assert ops(first) == [("r", {"id": 1}), ("r", {"id": 2})]
    sql(db, "INSERT INTO items VALUES (3, 'three', 3, NULL)")
    assert capture(pg, tmp_path, db, name="second", snapshot__mode="initial_only") == []


def test_exported_is_an_alias_of_initial(pg: Any, db: str, tmp_path: Path) -> None:
    assert ops(capture(pg, tmp_path, db, snapshot__mode="exported")) == [("r", {"id": 1}), ("r", {"id": 2})]


def test_when_needed_resnapshots_after_the_slot_is_lost(pg: Any, db: str, tmp_path: Path) -> None:
    capture(pg, tmp_path, db, name="first", snapshot__mode="when_needed")
    sql(db, f"SELECT pg_drop_replication_slot('{DB}_slot')", "INSERT INTO items VALUES (3, 'three', 3, NULL)")
    second = capture(pg, tmp_path, db, name="second", snapshot__mode="when_needed")
    assert ops(second) == [("r", {"id": 1}), ("r", {"id": 2}), ("r", {"id": 3})]


def test_initial_with_offset_but_no_slot_fails_clearly(pg: Any, db: str, tmp_path: Path) -> None:
    capture(pg, tmp_path, db, name="first")
    sql(db, f"SELECT pg_drop_replication_slot('{DB}_slot')")
    with pytest.raises(SlotMissingError, match=f"replication slot '{DB}_slot' does not exist"):
        capture(pg, tmp_path, db, name="second")


def test_snapshot_select_override(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, snapshot__select__statement__overrides="public.items",
                      **{"snapshot.select.statement.overrides.public.items": "SELECT * FROM public.items WHERE id > 1"})
    assert ops(records) == [("r", {"id": 2})]


# -- event shapes ------------------------------------------------------------------------------
def test_replica_identity_full_default_and_index_shape_before(pg: Any, db: str, tmp_path: Path) -> None:
    sql(db, "ALTER TABLE items REPLICA IDENTITY FULL", "ALTER TABLE items ALTER COLUMN name SET NOT NULL",
        "CREATE UNIQUE INDEX items_name ON items (name)")
    records = capture(pg, tmp_path, db, ("UPDATE items SET qty = 10 WHERE id = 1",
                                         "ALTER TABLE items REPLICA IDENTITY DEFAULT",
                                         "UPDATE items SET qty = 20 WHERE id = 2",
                                         "ALTER TABLE items REPLICA IDENTITY USING INDEX items_name",
                                         "UPDATE items SET name = 'TWO' WHERE id = 2"), snapshot__mode="never")
    full, default, index = payloads(records, "u")
    assert full["before"] == {"id": 1, "name": "one", "qty": 1, "big": None}
    assert full["after"]["qty"] == 10
    assert default["before"] is None and default["after"]["qty"] == 20
    # USING INDEX: the old identity columns only, the rest null (as Debezium)
    assert index["before"] == {"id": None, "name": "two", "qty": None, "big": None}
    assert index["after"]["name"] == "TWO"
    # REPLICA IDENTITY NOTHING: PostgreSQL itself refuses UPDATE/DELETE on a table published for them
    sql(db, "ALTER TABLE items REPLICA IDENTITY NOTHING")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
        sql(db, "UPDATE items SET qty = 30 WHERE id = 1")


def test_unchanged_toast_value_is_the_placeholder(pg: Any, db: str, tmp_path: Path) -> None:
    big = "".join(chr(65 + (i * 7919) % 26) for i in range(20000))  # incompressible enough to be TOASTed
    sql(db, "ALTER TABLE items ALTER COLUMN big SET STORAGE EXTERNAL", f"UPDATE items SET big = '{big}' WHERE id = 1")
    records = capture(pg, tmp_path, db, ("UPDATE items SET qty = 7 WHERE id = 1",), snapshot__mode="never")
    (update,) = payloads(records, "u")
    assert update["after"]["big"] == "__debezium_unavailable_value"
    assert update["after"]["qty"] == 7


def test_message_key_columns_and_tables_without_key(pg: Any, db: str, tmp_path: Path) -> None:
    sql(db, "CREATE TABLE nokey (a int, b text)")
    records = capture(pg, tmp_path, db,
                      ("INSERT INTO items VALUES (3, 'three', 3, NULL)", "INSERT INTO nokey VALUES (1, 'x')"),
                      snapshot__mode="never", table__include__list="public.items,public.nokey",
                      message__key__columns="public.items:name")
    by_topic = {r["topic"]: r for r in records}
    assert by_topic["dbz.public.items"]["key"]["payload"] == {"name": "three"}
    assert by_topic["dbz.public.items"]["key"]["schema"]["name"] == "dbz.public.items.Key"
    assert by_topic["dbz.public.nokey"]["key"] is None


def test_tombstones_off_and_primary_key_change(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("UPDATE items SET id = 10 WHERE id = 1", "DELETE FROM items WHERE id = 2"),
                      snapshot__mode="never", tombstones__on__delete="false")
    assert ops(records) == [("d", {"id": 1}), ("c", {"id": 10}), ("d", {"id": 2})]
    headers = {h["key"]: h["value"]["payload"] for h in records[0]["headers"]}
    assert headers["__debezium.newkey"] == {"id": 10}
    assert {h["key"]: h["value"]["payload"] for h in records[1]["headers"]}["__debezium.oldkey"] == {"id": 1}


def test_truncate_is_emitted_unless_skipped(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("TRUNCATE items",), snapshot__mode="never", skipped__operations="none")
    assert ops(records) == [("t", None)]
    assert records[0]["value"]["payload"]["source"]["table"] == "items"
    sql(db, "INSERT INTO items VALUES (1, 'one', 1, NULL)")
    skipped = capture(pg, tmp_path, db, ("TRUNCATE items", "INSERT INTO items VALUES (5, 'five', 5, NULL)"),
                      name="default", snapshot__mode="never")
    assert ops(skipped) == [("c", {"id": 1}), ("c", {"id": 5})]


def test_logical_messages_with_prefix_filter(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("SELECT pg_logical_emit_message(true, 'audit', 'hello')",
                                         "SELECT pg_logical_emit_message(false, 'noise', 'x')"),
                      snapshot__mode="never", message__prefix__include__list="audit")
    assert [r["topic"] for r in records] == ["dbz.message"]
    payload = records[0]["value"]["payload"]
    assert payload["op"] == "m" and payload["message"] == {"prefix": "audit", "content": "aGVsbG8="}
    assert records[0]["key"]["payload"] == {"prefix": "audit"}
    assert records[0]["value"]["schema"]["name"] == "io.debezium.connector.postgresql.MessageValue"


def test_schema_changes_give_later_events_the_new_schema(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, (
        "ALTER TABLE items ADD COLUMN price numeric(10,2) DEFAULT 1.50",
        "INSERT INTO items VALUES (3, 'three', 3, NULL, 9.99)",
        "ALTER TABLE items DROP COLUMN big",
        "ALTER TABLE items ALTER COLUMN qty TYPE bigint",
        "INSERT INTO items VALUES (4, 'four', 4, 1.00)",
    ), snapshot__mode="never")
    first, second = payloads(records, "c")
    fields = [r["value"]["schema"]["fields"][1]["fields"] for r in records if r["value"]]
    assert [f["field"] for f in fields[0]] == ["id", "name", "qty", "big", "price"]
    assert [f["field"] for f in fields[1]] == ["id", "name", "qty", "price"]
    assert [f["type"] for f in fields[1] if f["field"] == "qty"] == ["int64"]
    assert first["after"]["price"] == "A+c=" and second["after"]["qty"] == 4


# -- heartbeats, publication, slot -------------------------------------------------------------
def test_heartbeats_advance_the_slot_while_captured_tables_are_idle(pg: Any, db: str, tmp_path: Path) -> None:
    sql(db, "CREATE TABLE other (id serial PRIMARY KEY, v int)", "CREATE TABLE hb (id int PRIMARY KEY, ts timestamptz)",
        "INSERT INTO hb VALUES (1, now())")
    stop = threading.Event()

    def busy_other_table() -> None:
        with psycopg.connect(db, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute("INSERT INTO other (v) SELECT g FROM generate_series(1, 100) g")
                time.sleep(0.05)

    writer = threading.Thread(target=busy_other_table, daemon=True)
    writer.start()
    try:
        records = capture(pg, tmp_path, db, ("SELECT 1",), snapshot__mode="never", idle=4.0,
                          heartbeat__interval__ms="300",
                          heartbeat__action__query="UPDATE hb SET ts = now() WHERE id = 1")
    finally:
        stop.set()
        writer.join()
    beats = [r for r in records if r["topic"] == "__debezium-heartbeat.dbz"]
    assert len(beats) >= 3
    assert beats[0]["key"]["payload"] == {"serverName": "dbz"}
    assert beats[0]["value"]["schema"]["name"] == "io.debezium.connector.common.Heartbeat"
    with psycopg.connect(db, autocommit=True) as conn:
        flushed, current = conn.execute(
            "SELECT confirmed_flush_lsn, pg_current_wal_lsn() FROM pg_replication_slots WHERE slot_name = %s",
            (f"{DB}_slot",)).fetchone()
        lag = conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", (current, flushed)).fetchone()[0]
        start = json.loads((tmp_path / "connector.offsets.json").read_text())
    assert lag < 2_000_000, f"slot held {lag} bytes of WAL although lakecdc was up to date"
    assert start


def test_a_new_slot_streams_the_captured_table_while_other_tables_are_busy(pg: Any, db: str, tmp_path: Path) -> None:
    """Streaming only (no snapshot), a new slot, and changes elsewhere during the start: the
    publication must exist before the slot's consistent point, as Debezium creates it, or pgoutput
    decodes the changes between the two without it (PostgreSQL 18 "skipped loading publication",
    which capture reports as a dropped publication and stops on). Three starts on fresh slots, with a
    writer committing as fast as it can, make that window hit nearly every time."""
    sql(db, "CREATE TABLE other (id serial PRIMARY KEY, v int)")
    stop = threading.Event()

    def busy_other_table() -> None:
        with psycopg.connect(db, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute("INSERT INTO other (v) VALUES (1)")

    writer = threading.Thread(target=busy_other_table, daemon=True)
    writer.start()
    try:
        for start in range(3):
            work = tmp_path / f"start{start}"
            work.mkdir()
            insert = f"INSERT INTO items VALUES ({10 + start}, 'new', 1, NULL)"
            records = capture(pg, work, db, (insert,), snapshot__mode="never", slot__name=f"busy_slot{start}",
                              publication__name=f"busy_pub{start}", slot__drop__on__stop="true")
            assert ops(records) == [("c", {"id": 10 + start})]
    finally:
        stop.set()
        writer.join()


def test_publication_disabled_needs_an_existing_publication(pg: Any, db: str, tmp_path: Path) -> None:
    with pytest.raises(PublicationMissingError, match=f"publication '{DB}_pub' does not exist"):
        capture(pg, tmp_path, db, publication__autocreate__mode="disabled")


def test_publication_all_tables_and_slot_drop_on_stop(pg: Any, db: str, tmp_path: Path) -> None:
    capture(pg, tmp_path, db, ("INSERT INTO items VALUES (3, 'three', 3, NULL)",),
            publication__autocreate__mode="all_tables", slot__drop__on__stop="true")
    with psycopg.connect(db, autocommit=True) as conn:
        all_tables = conn.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s",
                                  (f"{DB}_pub",)).fetchone()
        slot = conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (f"{DB}_slot",)).fetchone()
    assert all_tables == (True,)
    assert slot is None


# -- failures ----------------------------------------------------------------------------------
def test_missing_privileges_are_listed_with_their_grants(pg: Any, db: str, tmp_path: Path) -> None:
    sql(db, "DROP ROLE IF EXISTS weak", "CREATE ROLE weak LOGIN PASSWORD 'weak-pass-123'")
    config = write_properties(tmp_path / "weak.properties", pg, DB, {"table.include.list": "public.items"},
                              database__user="weak", database__password="weak-pass-123")
    with pytest.raises(PrivilegeError) as caught:
        run_capture(config, f"jsonl:{tmp_path / 'weak.jsonl'}", stop_when_idle=1.0, show_progress=False)
    message = str(caught.value)
    assert 'ALTER ROLE "weak" WITH REPLICATION;' in message
    assert 'GRANT SELECT ON "public"."items" TO "weak";' in message
    assert "weak-pass-123" not in message


def test_password_never_in_errors_or_logs(pg: Any, db: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "Wr0ng-Secret-Value-42"
    config = write_properties(tmp_path / "bad.properties", pg, DB, {}, database__password=secret)
    with pytest.raises(LakecdcError) as caught:
        run_capture(config, f"jsonl:{tmp_path / 'bad.jsonl'}", stop_when_idle=1.0, show_progress=False)
    assert "password authentication failed" in str(caught.value)
    assert secret not in str(caught.value)
    assert secret not in caplog.text
    good = capture(pg, tmp_path, db, ("INSERT INTO items VALUES (3, 'three', 3, NULL)",), name="good")
    assert pg.password not in caplog.text and pg.password not in json.dumps(good)


def test_lost_connection_reconnects_and_loses_nothing(pg: Any, db: str, tmp_path: Path) -> None:
    config = write_properties(tmp_path / "connector.properties", pg, DB,
                              {"table.include.list": "public.items", "snapshot.mode": "never",
                               "slot.retry.delay.ms": "200"})
    out = tmp_path / "run.jsonl"
    run = CaptureThread(config, out, stop_when_idle=4.0).start()
    wait_for(lambda: slot_is_streaming(db, f"{DB}_slot"), what="streaming")
    sql(db, "INSERT INTO items VALUES (3, 'three', 3, NULL)")
    time.sleep(1.5)
    sql(db, f"SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{DB}_slot'")
    sql(db, "INSERT INTO items VALUES (4, 'four', 4, NULL)")
    wait_for(lambda: slot_is_streaming(db, f"{DB}_slot"), what="reconnection")
    sql(db, "INSERT INTO items VALUES (5, 'five', 5, NULL)")
    run.wait()
    keys = [k for op, k in ops(load_records(out)) if op == "c"]
    assert sorted({k["id"] for k in keys}) == [3, 4, 5]


def test_cli_capture_command(pg: Any, db: str, tmp_path: Path) -> None:
    """``lakecdc capture --config FILE --sink jsonl:PATH --stop-when-idle N`` end to end."""
    import subprocess
    import sys

    config = write_properties(tmp_path / "cli.properties", pg, DB, {"table.include.list": "public.items"})
    out = tmp_path / "cli.jsonl"
    completed = subprocess.run(
        [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(config), "--sink", f"jsonl:{out}",
         "--stop-when-idle", "1"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "capture stopped: 2 snapshot rows" in completed.stderr
    assert ops(load_records(out)) == [("r", {"id": 1}), ("r", {"id": 2})]
    assert pg.password not in completed.stderr + completed.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(config), "--sink", "nowhere:x"],
        capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "unknown sink 'nowhere:x'" in bad.stderr


def test_column_exclude_list_keeps_key_columns(pg: Any, db: str, tmp_path: Path) -> None:
    records = capture(pg, tmp_path, db, ("INSERT INTO items VALUES (3, 'three', 3, 'secret')",),
                      snapshot__mode="never", column__exclude__list="public.items.big,public.items.id")
    (create,) = payloads(records, "c")
    assert create["after"] == {"name": "three", "qty": 3}
    assert records[0]["key"]["payload"] == {"id": 3}  # key columns stay in the key
    assert [f["field"] for f in records[0]["value"]["schema"]["fields"][1]["fields"]] == ["name", "qty"]
