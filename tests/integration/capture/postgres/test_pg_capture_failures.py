"""PostgreSQL capture under failure, on real servers: a database restart, WAL removed under the
slot, a dropped publication, a lost SQL (catalog) connection. Each test compares the captured
stream, deduplicated by position (a reconnect may resend what was not yet acknowledged), with
the changes made on the source, and checks that no log line or error carries the password.

The restart and WAL tests run on a private server (they restart it and destroy slots)."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
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
from test_pg_capture_behaviour import sql

from lakecdc.capture.postgres.errors import PublicationMissingError, WalRemovedError
from lakecdc.devstack.postgres import Postgres

pytestmark = pytest.mark.integration

BASE = {"table.include.list": "public.items", "provide.transaction.metadata": "false",
        "slot.retry.delay.ms": "200"}
_BACKOFF = re.compile(r"reconnecting in ([0-9.]+) s \(attempt (\d+) of \d+\)")


@pytest.fixture(scope="module")
def private_pg() -> Iterator[Postgres]:
    with Postgres(version=18) as running:
        yield running


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)  # every line, so the password check covers them all
    return caplog


def items_database(server: Any, name: str) -> str:
    dsn = fresh_database(server, name)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int)",
        "INSERT INTO items VALUES (1, 'one', 1), (2, 'two', 2)")
    return dsn


def start_capture(server: Any, tmp_path: Path, dbname: str, name: str, idle: float = 3.0,
                  **props: str) -> tuple[CaptureThread, Path]:
    config = write_properties(tmp_path / f"{dbname}.properties", server, dbname,
                              {**BASE, **{k.replace("__", "."): v for k, v in props.items()}})
    out = tmp_path / f"{name}.jsonl"
    return CaptureThread(config, out, stop_when_idle=idle).start(), out


def changes(records: list[dict[str, Any]]) -> list[tuple[str, int, dict[str, Any] | None]]:
    """(op, id, after) per change, in stream order, each position once: a reconnect resends
    what was sent but not yet acknowledged, and consumers drop those by position."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for record in records:
        value = record["value"]
        if value is None or not record["topic"].endswith(".items"):
            continue
        payload = value["payload"]
        identity = (payload["op"], payload["source"]["lsn"], json.dumps(record["key"]["payload"]))
        if identity in seen:
            continue
        seen.add(identity)
        out.append((payload["op"], record["key"]["payload"]["id"], payload["after"]))
    return out


def table_rows(dsn: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute("SELECT * FROM items")
        names = [c.name for c in cursor.description or ()]
        return {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}


def replayed(stream: list[tuple[str, int, dict[str, Any] | None]]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for op, key, after in stream:
        if op == "d":
            state.pop(key, None)
        else:
            assert after is not None
            state[key] = after
    return state


def assert_no_secret(server: Any, logs: pytest.LogCaptureFixture, *texts: str) -> None:
    for text in (logs.text, *texts):
        assert server.password not in text


# -- 1. database restart -----------------------------------------------------------------------
def test_database_restart_reconnects_with_backoff_and_loses_nothing(
        private_pg: Postgres, tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    dsn = items_database(private_pg, "restarted")
    run, out = start_capture(private_pg, tmp_path, "restarted", "run", idle=4.0)
    wait_for(lambda: slot_is_streaming(dsn, "restarted_slot"), what="streaming")
    sql(dsn, "INSERT INTO items VALUES (3, 'three', 3)", "UPDATE items SET qty = 10 WHERE id = 1")
    time.sleep(1.5)  # committed and acknowledged: the slot's confirmed position moves past them
    sql(dsn, "INSERT INTO items VALUES (4, 'four', 4)")  # right before the shutdown: maybe not acknowledged
    private_pg.restart(down_for=2.0)  # fast shutdown; capture retries while the server is down
    sql(dsn, "UPDATE items SET qty = 30 WHERE id = 3", "DELETE FROM items WHERE id = 2",
        "INSERT INTO items VALUES (5, 'five', 5)")
    wait_for(lambda: slot_is_streaming(dsn, "restarted_slot"), what="streaming after the restart")
    # a second restart gets a fresh series of retries (slot.max.retries=6 counts consecutive
    # failures; the two outages together take more than 6 attempts)
    private_pg.restart(down_for=2.0)
    sql(dsn, "INSERT INTO items VALUES (6, 'six', 6)")
    run.wait()

    stream = changes(load_records(out))
    assert [(op, key) for op, key, _ in stream] == [
        ("r", 1), ("r", 2), ("c", 3), ("u", 1), ("c", 4), ("u", 3), ("d", 2), ("c", 5), ("c", 6)]
    assert replayed(stream) == table_rows(dsn)
    delays = [(float(d), int(a)) for d, a in _BACKOFF.findall(logs.text)]
    series = [[]]  # type: list[list[float]]
    for delay, attempt in delays:
        if attempt == 1 and series[-1]:
            series.append([])
        assert attempt == len(series[-1]) + 1, delays
        series[-1].append(delay)
    assert len(series) == 2 and sum(map(len, series)) > 6, delays  # retried while down, per outage ...
    assert all(later > earlier for one in series for earlier, later in zip(one, one[1:]))  # ... backing off
    assert "lost the PostgreSQL replication connection" in logs.text or "terminating connection" in logs.text
    resumed = re.findall(r"streaming from slot restarted_slot at LSN (\d+)", logs.text)
    assert len(resumed) >= 2 and int(resumed[-1]) > int(resumed[0])  # from the confirmed position
    assert_no_secret(private_pg, logs)


# -- 2. WAL removed under the slot -------------------------------------------------------------
def _remove_slot_wal(dsn: str, slot: str) -> None:
    """Let PostgreSQL discard WAL the stopped slot still needs (max_slot_wal_keep_size)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE TABLE filler (v int)")
        for _ in range(40):
            status = conn.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s",
                                  (slot,)).fetchone()
            if status and status[0] == "lost":
                return
            conn.execute("INSERT INTO filler SELECT generate_series(1, 1000)")
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
    raise AssertionError(f"slot {slot} still holds its WAL")


def test_wal_removed_stops_initial_and_resnapshots_when_needed(
        private_pg: Postgres, tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    dsn = items_database(private_pg, "walgone")
    run, out = start_capture(private_pg, tmp_path, "walgone", "first")
    wait_for(lambda: slot_is_streaming(dsn, "walgone_slot"), what="streaming")
    sql(dsn, "INSERT INTO items VALUES (3, 'three', 3)")
    run.wait()
    sql(dsn, "INSERT INTO items VALUES (4, 'four', 4)", "DELETE FROM items WHERE id = 1")  # while stopped
    try:
        _remove_slot_wal(dsn, "walgone_slot")
        run, _ = start_capture(private_pg, tmp_path, "walgone", "initial", snapshot__mode="initial")
        with pytest.raises(WalRemovedError) as stopped:
            run.wait()
        message = str(stopped.value)
        assert "replication slot 'walgone_slot'" in message and "wal_status=lost" in message
        assert "snapshot.mode=when_needed" in message and "max_slot_wal_keep_size" in message

        run, out = start_capture(private_pg, tmp_path, "walgone", "when_needed", snapshot__mode="when_needed")
        wait_for(lambda: slot_is_streaming(dsn, "walgone_slot"), what="streaming after the re-snapshot")
        sql(dsn, "INSERT INTO items VALUES (5, 'five', 5)")
        run.wait()
    finally:
        sql(dsn, "ALTER SYSTEM RESET max_slot_wal_keep_size", "SELECT pg_reload_conf()")
    stream = changes(load_records(out))
    assert [(op, key) for op, key, _ in stream] == [("r", 2), ("r", 3), ("r", 4), ("c", 5)]
    assert replayed(stream) == table_rows(dsn)  # the lost changes are covered by the new snapshot
    assert "lost its WAL" in logs.text and "the stored position can no longer be streamed" in logs.text

    sql(dsn, "UPDATE items SET qty = 40 WHERE id = 4")  # the new slot keeps what happens while stopped
    run, out = start_capture(private_pg, tmp_path, "walgone", "after", snapshot__mode="when_needed")
    run.wait()
    assert [(op, key) for op, key, _ in changes(load_records(out))] == [("u", 4)]
    assert_no_secret(private_pg, logs, message)


# -- 3. dropped publication --------------------------------------------------------------------
@pytest.mark.parametrize("server_fixture", ["pg", "pg15"])
def test_publication_dropped_while_streaming_stops_clearly_until_resnapshot(
        server_fixture: str, request: pytest.FixtureRequest, tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    """PostgreSQL 18 only WARNs and skips the changes made while the publication is missing
    (15 fails with an ERROR): either way capture stops without acknowledging past them."""
    server = request.getfixturevalue(server_fixture)
    dsn = items_database(server, "pubgone")
    run, _ = start_capture(server, tmp_path, "pubgone", "first")
    wait_for(lambda: slot_is_streaming(dsn, "pubgone_slot"), what="streaming")
    sql(dsn, "INSERT INTO items VALUES (3, 'three', 3)")
    time.sleep(1.5)  # acknowledged
    sql(dsn, "DROP PUBLICATION pubgone_pub", "INSERT INTO items VALUES (4, 'four', 4)")
    with pytest.raises(PublicationMissingError) as stopped:
        run.wait()
    errors = [str(stopped.value)]
    assert "pubgone_pub" in errors[0] and "CREATE PUBLICATION" in errors[0]

    run, _ = start_capture(server, tmp_path, "pubgone", "disabled", publication__autocreate__mode="disabled")
    with pytest.raises(PublicationMissingError) as refused:
        run.wait()
    errors.append(str(refused.value))
    assert "publication 'pubgone_pub' does not exist" in errors[1] and "publication.autocreate.mode" in errors[1]

    # filtered recreates it at start, but the change made while it was missing still cannot be
    # streamed: capture refuses again instead of skipping it
    run, _ = start_capture(server, tmp_path, "pubgone", "recreated")
    with pytest.raises(PublicationMissingError) as again:
        run.wait()
    errors.append(str(again.value))
    with psycopg.connect(dsn, autocommit=True) as conn:
        published = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'pubgone_pub'").fetchall()
    assert published == [("items",)]

    run, out = start_capture(server, tmp_path, "pubgone", "resnapshot", snapshot__mode="always")
    wait_for(lambda: slot_is_streaming(dsn, "pubgone_slot"), what="streaming after the re-snapshot")
    sql(dsn, "INSERT INTO items VALUES (5, 'five', 5)")
    run.wait()
    stream = changes(load_records(out))
    assert [(op, key) for op, key, _ in stream] == [("r", 1), ("r", 2), ("r", 3), ("r", 4), ("c", 5)]
    assert replayed(stream) == table_rows(dsn)
    assert_no_secret(server, logs, *errors)


# -- 4. lost SQL connection --------------------------------------------------------------------
def test_lost_catalog_connection_reconnects_and_keeps_keys(
        pg: Any, tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    dsn = items_database(pg, "sqlgone")
    run, out = start_capture(pg, tmp_path, "sqlgone", "run", snapshot__mode="never")
    wait_for(lambda: slot_is_streaming(dsn, "sqlgone_slot"), what="streaming")
    sql(dsn, "INSERT INTO items VALUES (3, 'three', 3)")
    time.sleep(1.5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'sqlgone' "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()").fetchall()
    assert killed == [(True,)]  # the capture's one SQL connection
    # a DDL makes pgoutput send a Relation message: its catalog lookup meets the dead connection
    sql(dsn, "ALTER TABLE items ADD COLUMN note text", "INSERT INTO items VALUES (4, 'four', 4, 'n')")
    time.sleep(1.0)
    wait_for(lambda: slot_is_streaming(dsn, "sqlgone_slot"), what="reconnection")
    sql(dsn, "INSERT INTO items VALUES (5, 'five', 5, 'm')")
    run.wait()
    records = load_records(out)
    # before the fix the lookup failed silently: events with no key and all-optional fields
    assert all(r["key"] is not None for r in records if r["topic"].endswith(".items")), records
    stream = changes(records)
    assert [(op, key) for op, key, _ in stream] == [("c", 3), ("c", 4), ("c", 5)]
    source = table_rows(dsn)
    assert {k: {c: source[k][c] for c in row} for k, row in replayed(stream).items()} == {
        k: v for k, v in replayed(stream).items()}  # row 3 was captured before the column existed
    assert set(replayed(stream)) == set(source) - {1, 2}
    last = [r for r in records if r["topic"].endswith(".items")][-1]
    fields = {f["field"]: f for f in last["value"]["schema"]["fields"][1]["fields"]}
    assert fields["id"]["optional"] is False and fields["name"]["optional"] is False  # from the catalog
    assert "lost the SQL connection to lakecdc@" in logs.text and "reconnecting in" in logs.text
    assert_no_secret(pg, logs)


def test_lost_connection_of_the_heartbeat_query_reconnects(
        pg: Any, tmp_path: Path, logs: pytest.LogCaptureFixture) -> None:
    """Without a DDL only the heartbeat action query uses the SQL connection: its failure must
    lead to a reconnect, not to a capture whose every later catalog lookup fails."""
    dsn = items_database(pg, "hbgone")
    sql(dsn, "CREATE TABLE beat (id int PRIMARY KEY, ts timestamptz)", "INSERT INTO beat VALUES (1, now())")
    run, out = start_capture(pg, tmp_path, "hbgone", "run", snapshot__mode="never", heartbeat__interval__ms="300",
                             heartbeat__action__query="UPDATE beat SET ts = now() WHERE id = 1")
    wait_for(lambda: slot_is_streaming(dsn, "hbgone_slot"), what="streaming")
    sql(dsn, "INSERT INTO items VALUES (3, 'three', 3)")
    # item 3 captured first: its catalog lookup is done, so only the heartbeat query can notice the
    # killed connection (on a loaded machine the lookup otherwise raced it and was first)
    wait_for(lambda: out.exists() and ("c", 3) in [(op, key) for op, key, _ in changes(load_records(out))],
             timeout=60, what="item 3 captured")
    sql(dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'hbgone' "
             "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
    wait_for(lambda: "lost the SQL connection" in logs.text, timeout=20, what="the failed heartbeat noticed")
    wait_for(lambda: slot_is_streaming(dsn, "hbgone_slot"), what="reconnection")
    sql(dsn, "INSERT INTO items VALUES (4, 'four', 4)")
    run.wait()
    assert [(op, key) for op, key, _ in changes(load_records(out))] == [("c", 3), ("c", 4)]
    assert "heartbeat.action.query failed" in logs.text and "reconnecting in" in logs.text
    assert_no_secret(pg, logs)
