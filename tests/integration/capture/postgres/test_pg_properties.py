"""Debezium PostgreSQL properties with their effect, on real servers: publish.via.partition.root
(PostgreSQL 18), slot.failover (18: a failover slot; 15: a plain slot and a warning),
table.ignore.builtin, lsn.flush.timeout.ms / .action (a walsender that stops reading)."""

from __future__ import annotations

import json
import logging
import os
import signal
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

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.errors import LsnFlushTimeoutError
from lakecdc.capture.postgres.streaming import PostgresStreamingSource
from lakecdc.errors import ConfigError

pytestmark = pytest.mark.integration

DB = "props"


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def capture(pg: Any, tmp_path: Path, dsn: str, base: dict[str, str], workload: tuple[str, ...] = (),
            name: str = "run") -> list[dict[str, Any]]:
    config = write_properties(tmp_path / f"{name}.properties", pg, DB, {"provide.transaction.metadata": "false",
                                                                          **base})
    out = tmp_path / f"{name}.jsonl"
    run = CaptureThread(config, out, stop_when_idle=2.0).start()
    if workload:
        wait_for(lambda: slot_is_streaming(dsn, f"{DB}_slot"), what="streaming")
        sql(dsn, *workload)
    run.wait()
    return load_records(out) if out.exists() else []


def by_topic(records: list[dict[str, Any]]) -> dict[str, list[tuple[str, Any]]]:
    found: dict[str, list[tuple[str, Any]]] = {}
    for r in records:
        if r["value"] is None or r["topic"].startswith("__debezium-heartbeat"):
            continue
        payload = r["value"]["payload"]
        row = payload["after"] or payload["before"]
        found.setdefault(r["topic"], []).append((payload["op"], row["id"]))
    return found


PARTITIONED = (
    "CREATE TABLE orders (id int, region text, qty int, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
    "CREATE TABLE orders_eu PARTITION OF orders FOR VALUES IN ('eu')",
    "CREATE TABLE orders_us PARTITION OF orders FOR VALUES IN ('us')",
    "INSERT INTO orders VALUES (1, 'eu', 1), (2, 'us', 2)",
)
WORKLOAD = ("INSERT INTO orders VALUES (3, 'eu', 3), (4, 'us', 4)", "UPDATE orders SET qty = 10 WHERE id = 1",
            "DELETE FROM orders WHERE id = 2")


@pytest.mark.parametrize("mode", ["filtered", "all_tables"])
def test_publish_via_partition_root_captures_partitions_through_the_root(pg: Any, tmp_path: Path,
                                                                         mode: str) -> None:
    dsn = fresh_database(pg, DB)
    sql(dsn, *PARTITIONED)
    records = capture(pg, tmp_path, dsn, {"publish.via.partition.root": "true", "publication.autocreate.mode": mode},
                      WORKLOAD)
    # no include list: as in Debezium, the partitions are captured tables too, so their rows are
    # snapshotted a second time, while every streamed change arrives as the root's
    # (tests/conformance/test_pg_conformance.py::test_partitioned_table_equals_live_debezium)
    assert by_topic(records) == {
        "dbz.public.orders": [("r", 1), ("r", 2), ("c", 3), ("c", 4), ("u", 1), ("d", 2)],
        "dbz.public.orders_eu": [("r", 1)], "dbz.public.orders_us": [("r", 2)],
    }
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT pubviaroot FROM pg_publication WHERE pubname = %s",
                            (f"{DB}_pub",)).fetchone() == (True,)


def test_without_publish_via_partition_root_changes_arrive_as_the_partitions(pg: Any, tmp_path: Path) -> None:
    """The default (false): PostgreSQL publishes each partition's own changes, as Debezium gets them."""
    dsn = fresh_database(pg, DB)
    sql(dsn, *PARTITIONED)
    records = capture(pg, tmp_path, dsn, {"table.include.list": "public\\.orders.*"}, WORKLOAD)
    topics = by_topic(records)
    assert ("c", 3) in topics["dbz.public.orders_eu"] and ("u", 1) in topics["dbz.public.orders_eu"]
    assert ("d", 2) in topics["dbz.public.orders_us"] and ("c", 4) in topics["dbz.public.orders_us"]
    assert not any(op != "r" for op, _ in topics.get("dbz.public.orders", []))
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT pubviaroot FROM pg_publication WHERE pubname = %s",
                            (f"{DB}_pub",)).fetchone() == (False,)


def test_an_existing_publication_keeps_its_setting_with_a_warning(pg: Any, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    dsn = fresh_database(pg, DB)
    sql(dsn, *PARTITIONED, f"CREATE PUBLICATION {DB}_pub FOR TABLE orders")
    with caplog.at_level(logging.WARNING):
        records = capture(pg, tmp_path, dsn, {"publish.via.partition.root": "true",
                                             "publication.autocreate.mode": "disabled"}, WORKLOAD[:1])
    assert any("publish_via_partition_root = False" in r.getMessage() for r in caplog.records)
    assert ("c", 3) in by_topic(records)["dbz.public.orders_eu"]


def _slot_failover(dsn: str, slot: str) -> Any:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT failover FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()


@pytest.mark.parametrize("snapshot_mode", ["initial", "no_data"])
def test_slot_failover_creates_a_failover_slot_on_postgresql_18(pg: Any, tmp_path: Path, snapshot_mode: str) -> None:
    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    records = capture(pg, tmp_path, dsn, {"slot.failover": "true", "table.include.list": "public.items",
                                         "snapshot.mode": snapshot_mode}, ("INSERT INTO items VALUES (2)",))
    assert by_topic(records)["dbz.public.items"][-1] == ("c", 2)
    assert _slot_failover(dsn, f"{DB}_slot") == (True,)


def test_without_slot_failover_the_slot_does_not_fail_over(pg: Any, tmp_path: Path) -> None:
    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)")
    capture(pg, tmp_path, dsn, {"table.include.list": "public.items"})
    assert _slot_failover(dsn, f"{DB}_slot") == (False,)


def test_slot_failover_on_postgresql_15_creates_a_plain_slot_and_says_so(pg15: Any, tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    dsn = fresh_database(pg15, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    with caplog.at_level(logging.WARNING):
        records = capture(pg15, tmp_path, dsn, {"slot.failover": "true", "table.include.list": "public.items"},
                          ("INSERT INTO items VALUES (2)",))
    assert by_topic(records)["dbz.public.items"] == [("r", 1), ("c", 2)]
    assert any("no failover slots" in r.getMessage() for r in caplog.records)


def test_table_ignore_builtin_false_snapshots_a_selected_system_table(pg: Any, tmp_path: Path) -> None:
    """information_schema.sql_parts is a real table: Debezium's filters skip it unless
    table.ignore.builtin=false; PostgreSQL cannot publish it, so it is snapshotted only."""
    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    base = {"table.include.list": "information_schema.sql_parts,public.items", "snapshot.mode": "initial_only"}
    default = capture(pg, tmp_path, dsn, base, name="default")
    assert {r["topic"] for r in default if r["value"]} == {"dbz.public.items"}
    fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    builtin = capture(pg, tmp_path, dsn, {**base, "table.ignore.builtin": "false"}, name="builtin")
    parts = [r["value"]["payload"]["after"] for r in builtin if r["topic"] == "dbz.information_schema.sql_parts"]
    with psycopg.connect(dsn) as conn:
        expected = conn.execute("SELECT count(*) FROM information_schema.sql_parts").fetchone()[0]
        published = conn.execute("SELECT schemaname FROM pg_publication_tables WHERE pubname = %s",
                                 (f"{DB}_pub",)).fetchall()
    assert expected > 0 and len(parts) == expected
    assert published == [("public",)]


def test_snapshot_query_mode_custom_is_refused_naming_the_alternative() -> None:
    with pytest.raises(ConfigError, match="snapshot.query.mode=custom.*select_all"):
        PostgresConnectorConfig.from_properties({"topic.prefix": "p", "snapshot.query.mode": "custom",
                                                 "snapshot.query.mode.custom.name": "mine"})
    assert PostgresConnectorConfig.from_properties({"topic.prefix": "p", "snapshot.query.mode": "SELECT_ALL"}
                                                   ).snapshot_query_mode == "select_all"


# -- lsn.flush.timeout: the walsender stops reading (SIGSTOP) -----------------------------------

def _walsender_pid(dsn: str, slot: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    assert row and row[0]
    return int(row[0])


def _stopped_walsender(pg: Any, tmp_path: Path, **props: str) -> tuple[PostgresStreamingSource, int, str]:
    """A started streaming source whose walsender is stopped and whose socket is full."""
    from lakecdc.capture.postgres.connector import PostgresConnector

    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)")
    path = write_properties(tmp_path / "flush.properties", pg, DB, {"table.include.list": "public.items",
                                                                    "snapshot.mode": "no_data"}, **props)
    config = PostgresConnectorConfig.from_file(path)
    source = PostgresConnector(config, show_progress=False).streaming_source()
    source.start(None)
    pid = _walsender_pid(dsn, f"{DB}_slot")
    os.kill(pid, signal.SIGSTOP)
    repl = source._repl
    assert repl is not None
    # fill the kernel's socket buffers: status messages until three in a row cannot be written
    # (one slow write is not enough: the kernel may still grow its buffers)
    stalled = 0
    for _ in range(2_000_000):
        stalled = stalled + 1 if not repl.send_status(0, 0, timeout=0.3 if stalled else 0.0) else 0
        if stalled == 3:
            return source, pid, dsn
    os.kill(pid, signal.SIGCONT)
    pytest.fail("the replication socket never filled while the walsender was stopped")


def _finish(source: PostgresStreamingSource, pid: int) -> None:
    os.kill(pid, signal.SIGCONT)
    source.close()


def test_lsn_flush_timeout_fail_stops_the_capture(pg: Any, tmp_path: Path) -> None:
    source, pid, _ = _stopped_walsender(pg, tmp_path, lsn__flush__timeout__ms="300")
    try:
        # the kernel may still take a write now and then (growing its buffers): confirm until one stalls
        with pytest.raises(LsnFlushTimeoutError, match="lsn.flush.timeout.ms=300"):
            for _ in range(200):
                source.acknowledge({"lsn": 1, "lsn_commit": 1})
    finally:
        _finish(source, pid)


@pytest.mark.parametrize("action", ["warn", "ignore"])
def test_lsn_flush_timeout_warn_or_ignore_goes_on(pg: Any, tmp_path: Path, action: str,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    source, pid, dsn = _stopped_walsender(pg, tmp_path, lsn__flush__timeout__ms="200",
                                          lsn__flush__timeout__action=action)
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING):
            for _ in range(30):
                source.acknowledge({"lsn": 1, "lsn_commit": 1})  # never raises
                if any("lsn.flush.timeout.action=warn" in r.getMessage() for r in caplog.records):
                    break
        warned = [r for r in caplog.records if "lsn.flush.timeout.action=warn" in r.getMessage()]
        assert len(warned) == (1 if action == "warn" else 0)
        assert time.monotonic() - started >= 0.2  # some confirmation waited out its timeout
        os.kill(pid, signal.SIGCONT)
        sql(dsn, "INSERT INTO items VALUES (7)")
        out: list[Any] = []
        deadline = time.monotonic() + 60
        while not any(getattr(r, "topic", "") == "dbz.public.items" for r in out) and time.monotonic() < deadline:
            source.poll(out, 100, 0.5)
        assert any(getattr(r, "topic", "") == "dbz.public.items" for r in out)  # it went on streaming
    finally:
        _finish(source, pid)


# -- lsn.flush.mode / flush.lsn.source ----------------------------------------------------------

def _confirmed_flush(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        text = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                            (f"{DB}_slot",)).fetchone()[0]
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


@pytest.mark.parametrize(("props", "confirms"), [
    ({}, True), ({"lsn.flush.mode": "connector_and_driver"}, True), ({"lsn.flush.mode": "manual"}, False),
    ({"flush.lsn.source": "false"}, False), ({"flush.lsn.source": "false", "lsn.flush.mode": "connector"}, True),
])
def test_lsn_flush_mode_decides_whether_the_slot_advances(pg: Any, tmp_path: Path, props: dict[str, str],
                                                          confirms: bool) -> None:
    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)")
    records = capture(pg, tmp_path, dsn, {"table.include.list": "public.items", "snapshot.mode": "no_data", **props},
                      ("INSERT INTO items VALUES (1)", "INSERT INTO items VALUES (2)"))
    assert by_topic(records)["dbz.public.items"] == [("c", 1), ("c", 2)]
    stored = int(next(iter(json.loads((tmp_path / "run.offsets.json").read_text()).values()))["lsn"])
    if confirms:
        assert _confirmed_flush(dsn) >= stored
    else:  # the slot stays where it was created, before both inserts
        assert _confirmed_flush(dsn) < stored


def test_initial_statements_run_on_each_sql_connection(pg: Any, tmp_path: Path) -> None:
    """Debezium runs database.initial.statements on its JDBC connections (not the replication one)."""
    dsn = fresh_database(pg, DB)
    sql(dsn, "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)",
        "CREATE TABLE probe (note text, app text DEFAULT current_setting('application_name'))")
    records = capture(pg, tmp_path, dsn, {"table.include.list": "public.items",
                                         "database.initial.statements": "INSERT INTO probe (note) VALUES ('a;;b');"
                                                                        "INSERT INTO probe (note) VALUES ('c')"})
    assert by_topic(records)["dbz.public.items"] == [("r", 1)]
    with psycopg.connect(dsn) as conn:
        notes = conn.execute("SELECT note, count(*) FROM probe GROUP BY note ORDER BY note").fetchall()
    assert [n for n, _ in notes] == ["a;b", "c"] and notes[0][1] == notes[1][1] >= 1
