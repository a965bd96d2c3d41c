"""Streamed row changes encoded by worker processes (``lakecdc.streaming.workers`` > 1) give the
serial records, in the same order, on a real PostgreSQL 18.

Two slots read the same WAL, so the two captures' records must be equal but for the processing
times (``ts_ms``/``ts_us``/``ts_ns`` of the envelope) and the run id header. Chunks are made tiny
here so that a few thousand rows make hundreds of them; the random workload mixes what goes to the
workers (inserts, into a table without a key too; updates without an old tuple, with unchanged
TOASTed values among them; deletes and their tombstones) with what stays in the capture process
(key changes, a table with replica identity full, a truncate, logical messages), one large
transaction, and ``ALTER TABLE`` between inserts (a Relation message mid-stream: the workers must be
forked again with the new schema)."""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_capture_support import fresh_database, write_properties
from pg_slots import drop_database_slots
from refused_rows import error_handler_lines, refuse_rows

from lakecdc.capture.postgres import streaming_parallel
from lakecdc.capture.runner import run_capture
from lakecdc.transforms.errors import StageFailure

pytestmark = pytest.mark.integration

DB = "stream_workers"
TABLES = "public.w_a,public.w_b,public.w_nokey,public.w_toast,public.w_full"
STARTED = "streaming worker processes"


def workload(dsn: str, seed: int) -> None:
    rng = random.Random(seed)
    texts = ["", "plain", "ünïcødé ✓", "quote \" and \\ backslash", "x" * 3000, None]
    # stored out of line (random letters do not compress): an update that leaves it sends no value
    toasted = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5000)) for _ in range(2)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        next_a, next_b, extra = 1, 1, 0
        for n in range(60):
            with conn.transaction():
                for _ in range(rng.randint(1, 120)):
                    table = rng.choice("aab ntfk")
                    if table == "a":
                        amount = f"{rng.randint(-10**9, 10**9)}.{rng.randint(0, 99):02d}"
                        conn.execute(
                            "INSERT INTO w_a VALUES (%s, %s, %s, %s, %s, %s, %s)",
                            (next_a, rng.choice(texts), rng.choice([None, amount]),
                             rng.choice([None, "2024-02-29 23:59:59.999999+05:30", "1970-01-01 00:00:00+00"]),
                             rng.choice([None, b"", bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))]),
                             rng.choice([None, [], ["a", None, "c"]]),
                             rng.choice([None, json.dumps({"k": rng.randint(0, 9), "u": "é"})])))
                        next_a += 1
                    elif table == "b":
                        conn.execute("INSERT INTO w_b (id, note) VALUES (%s, %s)", (next_b, rng.choice(texts[:4])))
                        next_b += 1
                    elif table == "n":
                        conn.execute("INSERT INTO w_nokey VALUES (%s, %s)", (rng.choice(texts), rng.randint(0, 9)))
                    elif table == "t":
                        conn.execute("INSERT INTO w_toast VALUES (%s, 0, %s) ON CONFLICT (id) DO UPDATE SET "
                                     "flag = w_toast.flag + 1", (rng.randint(1, 300), rng.choice(toasted)))
                    elif table == "f":
                        key = rng.randint(1, 50)
                        conn.execute("INSERT INTO w_full VALUES (%s, 0) ON CONFLICT (id) DO UPDATE "
                                     "SET v = w_full.v + 1", (key,))
                        if rng.random() < 0.3:
                            conn.execute("DELETE FROM w_full WHERE id = %s", (key,))
                    elif table == "k":
                        conn.execute("UPDATE w_b SET id = id + 1000000 WHERE id = %s", (rng.randint(1, next_b),))
                    else:
                        conn.execute("UPDATE w_a SET name = %s WHERE id = %s",
                                     (rng.choice(texts), rng.randint(1, next_a)))
                        conn.execute("DELETE FROM w_b WHERE id = %s", (rng.randint(1, next_b),))
                if rng.random() < 0.1:
                    conn.execute("SELECT pg_logical_emit_message(true, 'p', 'in a transaction')")
            if n % 15 == 7:  # a Relation message between inserts of the same table
                extra += 1
                conn.execute(f"ALTER TABLE w_b ADD COLUMN extra_{extra} int DEFAULT {extra}")
            if n == 30:
                conn.execute("TRUNCATE w_nokey")
                conn.execute("INSERT INTO w_a (id, name) SELECT g, 'bulk ' || g FROM generate_series(100000, 103000) g")


@pytest.fixture(scope="module")
def db(pg: Any) -> Iterator[str]:
    """The workload, read by slots made before it: one per capture of the tests below (dropped at
    the end: the worker's server holds the slots of all its modules)."""
    dsn = fresh_database(pg, DB)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE w_a (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, "
                     "blob bytea, tags text[], doc jsonb)")
        conn.execute("CREATE TABLE w_b (id bigint PRIMARY KEY, note varchar(3000))")
        conn.execute("CREATE TABLE w_nokey (v text, n int)")
        conn.execute("CREATE TABLE w_toast (id int PRIMARY KEY, flag int, big text)")
        conn.execute("CREATE TABLE w_full (id int PRIMARY KEY, v int)")
        conn.execute("ALTER TABLE w_full REPLICA IDENTITY FULL")
        conn.execute(f"CREATE PUBLICATION {DB}_pub FOR TABLE w_a, w_b, w_nokey, w_toast, w_full")
        for slot in ("serial", "workers", "all1", "all2", "none1", "none2", "unwrap", "dies"):
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (f"{slot}_slot",))
    workload(dsn, 20261130)
    yield dsn
    drop_database_slots(pg.dsn_for("postgres"), DB)


def capture(pg: Any, tmp_path: Path, slot: str, workers: int, **props: str) -> list[dict[str, Any]]:
    config = write_properties(tmp_path / f"{slot}.properties", pg, DB, slot__name=f"{slot}_slot",
                              snapshot__mode="never", table__include__list=TABLES,
                              provide__transaction__metadata="true", skipped__operations="none",
                              lakecdc__streaming__workers=str(workers), **props)
    out = tmp_path / f"{slot}.jsonl"
    run_capture(config, f"jsonl:{out}", stop_when_idle=0.5, show_progress=False)
    return [json.loads(line) for line in out.read_text().splitlines()]


def masked(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its processing times and the run id header (each run has its own); in
    an END record, the logical messages' data collection apart: Debezium names it by a Java object's
    identity hash, so its name and its place among the others differ from run to run."""
    record = dict(record)
    record["headers"] = [h for h in record["headers"] if h["key"] != "__debezium.context.runId"]
    if record["value"] is None:
        return record
    payload = record["value"]["payload"]
    if not record["topic"].endswith(".transaction"):
        for name in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(name, None)
    elif payload.get("data_collections"):
        collections = payload.pop("data_collections")
        payload["data_collections"] = [c for c in collections if "@" not in c["data_collection"]]
        payload["messages"] = [c["event_count"] for c in collections if "@" in c["data_collection"]]
    return record


def forks(caplog: pytest.LogCaptureFixture) -> int:
    return sum(STARTED in r.getMessage() for r in caplog.records)


def test_workers_give_the_serial_records(pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(streaming_parallel, "CHUNK", 7)
    serial = capture(pg, tmp_path, "serial", 1)
    with caplog.at_level(logging.DEBUG, logger="lakecdc.capture.postgres.streaming_parallel"):
        parallel = capture(pg, tmp_path, "workers", 2)
    assert len(serial) > 5000
    assert [masked(r) for r in parallel] == [masked(r) for r in serial]
    # once at the first insert, again after each Relation message that came before an insert
    assert forks(caplog) >= 4, forks(caplog)
    ops = {r["value"]["payload"]["op"] for r in serial if r["value"] and "op" in r["value"]["payload"]}
    assert ops >= {"c", "u", "d", "t", "m"}
    assert any(r["value"] is None for r in serial)  # tombstones
    assert any(h["key"] == "__debezium.oldkey" for r in serial for h in r["headers"])  # key changes
    assert any((r["value"]["payload"].get("after") or {}).get("big") == "__debezium_unavailable_value"
               for r in serial if r["value"] and r["topic"] == "dbz.public.w_toast")
    assert any(r["value"]["payload"].get("before") for r in serial
               if r["value"] and r["topic"] == "dbz.public.w_full" and r["value"]["payload"]["op"] == "u")
    assert any("extra_4" in (r["value"]["payload"].get("after") or {}) for r in parallel if r["value"])


def test_rows_the_converter_refuses_meet_errors_tolerance_as_serially(
        pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A row a worker cannot encode is built again by the capture process, so the converter's
    failure meets errors.tolerance there: skipped and logged the same (all), or the capture stops
    with the same error after the same records (none)."""
    monkeypatch.setattr(streaming_parallel, "CHUNK", 7)
    refuse_rows(monkeypatch, "dbz.public.w_a", values={3, 40, 41, 100500}, keys={77})
    outputs, logged = {}, {}
    for workers in (1, 2):
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            outputs[workers] = capture(pg, tmp_path, f"all{workers}", workers, errors__tolerance="all",
                                       errors__log__enable="true")
        logged[workers] = error_handler_lines(caplog)
        assert (forks(caplog) > 0) == (workers == 2)
    assert [masked(r) for r in outputs[2]] == [masked(r) for r in outputs[1]]
    # the refused rows' inserts, and any update of them (its value is refused too)
    assert logged[2] == logged[1] and len(logged[2]) >= 5, logged[2]
    created = {r["key"]["payload"]["id"] for r in outputs[2]
               if r["topic"] == "dbz.public.w_a" and r["value"] and r["value"]["payload"]["op"] == "c"}
    assert not created & {3, 40, 41, 77, 100500} and {1, 2, 4, 100499} <= created

    errors, sent = {}, {}
    for workers in (1, 2):
        with pytest.raises(StageFailure) as failure:
            capture(pg, tmp_path, f"none{workers}", workers, errors__tolerance="none")
        errors[workers] = str(failure.value)
        lines = (tmp_path / f"none{workers}.jsonl").read_text().splitlines()
        sent[workers] = [masked(json.loads(line)) for line in lines]
    assert errors[2] == errors[1] and "refused the value of row 3" in errors[2]
    assert sent[2] == sent[1]


def test_transforms_keep_the_inserts_in_the_capture_process(pg: Any, db: str, tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """A transform reads record values: streamed rows are then not pre-encoded by workers."""
    with caplog.at_level(logging.DEBUG, logger="lakecdc.capture.postgres"):
        records = capture(pg, tmp_path, "unwrap", 2, transforms="unwrap",
                          transforms__unwrap__type="io.debezium.transforms.ExtractNewRecordState")
    assert forks(caplog) == 0
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
            and r.getMessage().startswith("lakecdc.streaming.workers=2 is not used: transforms")]
    assert any(r["topic"] == "dbz.public.w_a" and r["value"] and r["value"]["payload"].get("name") == "bulk 100000"
               for r in records)


def test_a_worker_that_dies_stops_the_capture_with_the_reason(pg: Any, db: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed under the capture (the OOM killer, say) fails the poll with an error naming
    the setting and the exit code, instead of a record missing or the capture waiting forever."""
    def die(*args: Any) -> list[Any]:
        os._exit(3)

    monkeypatch.setattr(streaming_parallel, "_encode_rows", die)
    with pytest.raises(RuntimeError, match=r"lakecdc\.streaming\.workers.*exit code 3"):
        capture(pg, tmp_path, "dies", 2)
