"""The snapshot read by worker processes (``snapshot.max.threads`` > 1) gives the records of the
serial read, in the same order, with the same snapshot markers, on a real PostgreSQL 18.

Ranges are made small here so that a few thousand rows give many of them, and rows are deleted
so that some ranges are empty and some hold one or two rows (a range's first and last row are
read by the capture process, the rows between by the workers)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_capture_support import (
    capture_subprocess,
    fresh_database,
    load_records,
    mask_record,
    processes_running,
    wait_for,
    write_properties,
)
from refused_rows import error_handler_lines, refuse_rows

from lakecdc.capture.postgres import snapshot_parallel
from lakecdc.capture.runner import run_capture
from lakecdc.transforms.errors import StageFailure

pytestmark = pytest.mark.integration

DB = "parallel_snap"


@pytest.fixture
def db(pg: Any) -> str:
    dsn = fresh_database(pg, DB)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("a", "c"):
            conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, pad text)")
            conn.execute(f"INSERT INTO {table} SELECT g, 'row ' || g, repeat('x', 300) FROM generate_series(1, 3000) g")
        conn.execute("CREATE TABLE b (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO b VALUES (1, 'one'), (2, 'two')")
        conn.execute("CREATE TABLE z (id int PRIMARY KEY)")  # empty, read last: c's final row is 'last'
        # holes: whole ranges without a visible row, ranges with a single row, c's tail empty
        conn.execute("DELETE FROM a WHERE id BETWEEN 200 AND 900 OR (id BETWEEN 1000 AND 1300 AND id <> 1150)")
        conn.execute("DELETE FROM c WHERE id > 2000")
        conn.execute("ANALYZE")
    return dsn


def capture(pg: Any, tmp_path: Path, name: str, threads: int) -> list[dict[str, Any]]:
    config = write_properties(tmp_path / f"{name}.properties", pg, DB, slot__name=f"{name}_slot",
                              snapshot__mode="initial_only", table__include__list="public.a,public.b,public.c,public.z",
                              snapshot__max__threads=str(threads))
    out = tmp_path / f"{name}.jsonl"
    stats = run_capture(config, f"jsonl:{out}", stop_when_idle=0.5, show_progress=False)
    assert stats.snapshot_rows == 1999 + 2 + 2000
    return load_records(out)


def masked(record: dict[str, Any]) -> dict[str, Any]:
    """Positions and times masked, and the run id header each capture run has its own of."""
    record = mask_record(record)
    record["headers"] = [h for h in record["headers"] if h["key"] != "__debezium.context.runId"]
    return record


def test_parallel_snapshot_equals_the_serial_one(pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 500)
    monkeypatch.setattr(snapshot_parallel, "RANGE_ROWS", 60)
    serial = capture(pg, tmp_path, "serial", 1)
    with caplog.at_level(logging.INFO, logger="lakecdc.capture.postgres.snapshot_parallel"):
        parallel = capture(pg, tmp_path, "parallel", 2)
    read_by_workers = [r.getMessage() for r in caplog.records if "worker processes" in r.getMessage()]
    assert len(read_by_workers) == 2, read_by_workers  # a and c; b is too small
    assert [masked(r) for r in parallel] == [masked(r) for r in serial]
    markers = [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["source"]["snapshot"]) for r in parallel]
    assert markers[0] == ("a", "first")
    assert markers[-1] == ("c", "last")
    assert ("a", "last_in_data_collection") in markers and ("b", "first_in_data_collection") in markers
    assert ("c", "first_in_data_collection") in markers
    assert {m for _, m in markers} == {"first", "true", "last_in_data_collection", "first_in_data_collection", "last"}
    ids = [r["key"]["payload"]["id"] for r in parallel if r["topic"].endswith(".a")]
    assert 1150 in ids and 200 not in ids and ids == sorted(ids)  # the table's physical order: insert order


def capture_a(pg: Any, tmp_path: Path, name: str, threads: int, tolerance: str) -> list[dict[str, Any]]:
    """Tables a (parallel when ``threads`` > 1) and b, with ``errors.tolerance`` and its log."""
    config = write_properties(tmp_path / f"{name}.properties", pg, DB, slot__name=f"{name}_slot",
                              snapshot__mode="initial_only", table__include__list="public.a,public.b",
                              snapshot__max__threads=str(threads), errors__tolerance=tolerance,
                              errors__log__enable="true")
    out = tmp_path / f"{name}.jsonl"
    stats = run_capture(config, f"jsonl:{out}", stop_when_idle=0.5, show_progress=False)
    assert stats.snapshot_rows == 1999 + 2  # rows read, skipped ones included
    return load_records(out)


# before the workers answered refused rows as values, the converter's error reached the pool's result
# handler, which could not rebuild it and died: the snapshot waited forever
@pytest.mark.timeout(300)
def test_rows_the_converter_refuses_are_skipped_as_in_the_serial_read(
        pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """errors.tolerance=all: a row whose key or value the converter refuses is skipped and logged
    whether the capture process or a worker read it; every other row is sent once, in order, with
    the markers of the serial read (whose first row is one of the refused: no record is ``first``)."""
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 500)
    monkeypatch.setattr(snapshot_parallel, "RANGE_ROWS", 60)
    refused = {1, 100, 101, 950, 1150, 2500}
    refuse_rows(monkeypatch, "dbz.public.a", values=refused - {950}, keys={950})
    logged = {}
    outputs = {}
    for threads in (1, 2):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            outputs[threads] = capture_a(pg, tmp_path, f"all{threads}", threads, "all")
        logged[threads] = error_handler_lines(caplog)
        assert any("block ranges read by 2 worker processes" in r.getMessage() for r in caplog.records) == \
            (threads == 2)
    serial, parallel = outputs[1], outputs[2]
    assert [masked(r) for r in parallel] == [masked(r) for r in serial]
    ids = [r["key"]["payload"]["id"] for r in parallel if r["topic"].endswith(".a")]
    visible = [*range(1, 200), *range(901, 1000), 1150, *range(1301, 3001)]
    assert ids == [i for i in visible if i not in refused]
    markers = [r["value"]["payload"]["source"]["snapshot"] for r in parallel]
    assert markers[-2:] == ["first_in_data_collection", "last"] and "first" not in markers
    assert "last_in_data_collection" in markers
    assert logged[2] == logged[1] and len(logged[2]) == len(refused), logged
    assert sum("Executing stage 'KEY_CONVERTER'" in line for line in logged[2]) == 1
    assert all("topic 'dbz.public.a'" in line and "the record is skipped" in line for line in logged[2])


# before the workers answered refused rows as values, the converter's error reached the pool's result
# handler, which could not rebuild it and died: the snapshot waited forever
@pytest.mark.timeout(300)
def test_a_row_the_converter_refuses_stops_the_snapshot_as_the_serial_read(
        pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """errors.tolerance=none: a row between a range's first and last, which a worker reads, stops
    the capture with the serial read's error (naming the table's topic) and nothing after it is sent."""
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 500)
    monkeypatch.setattr(snapshot_parallel, "RANGE_ROWS", 60)
    refuse_rows(monkeypatch, "dbz.public.a", values={150})
    errors = {}
    for threads in (1, 2):
        with pytest.raises(StageFailure) as failure:
            capture_a(pg, tmp_path, f"none{threads}", threads, "none")
        errors[threads] = str(failure.value)
        out = tmp_path / f"none{threads}.jsonl"
        ids = [r["key"]["payload"]["id"] for r in load_records(out)] if out.exists() else []
        assert ids == list(range(1, len(ids) + 1)) and len(ids) < 150
    assert errors[2] == errors[1]
    assert "failed on a record of topic 'dbz.public.a'" in errors[2] and "refused the value of row 150" in errors[2]


def test_transforms_keep_the_serial_read(pg: Any, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """A transform reads record values: the rows are then not pre-encoded by workers."""
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 500)
    config = write_properties(tmp_path / "t.properties", pg, DB, slot__name="t_slot", snapshot__mode="initial_only",
                              table__include__list="public.a", snapshot__max__threads="2",
                              transforms="unwrap",
                              transforms__unwrap__type="io.debezium.transforms.ExtractNewRecordState")
    out = tmp_path / "t.jsonl"
    with caplog.at_level(logging.INFO, logger="lakecdc.capture.postgres.snapshot_parallel"):
        run_capture(config, f"jsonl:{out}", stop_when_idle=0.5, show_progress=False)
    assert not [r for r in caplog.records if "worker processes" in r.getMessage()]
    records = load_records(out)
    assert len(records) == 1999 and records[0]["value"]["payload"]["name"] == "row 1"


def test_a_worker_that_cannot_import_the_snapshot_fails_the_snapshot(pg: Any, db: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose connection fails (here: the snapshot name is wrong) stops the snapshot with
    PostgreSQL's error instead of the pool starting workers forever."""
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 500)
    real = snapshot_parallel._WorkerState

    def wrong_snapshot(*args: Any) -> Any:
        state = real(*args)
        state.snapshot_name = "00000000-00000000-1"
        return state

    monkeypatch.setattr(snapshot_parallel, "_WorkerState", wrong_snapshot)
    config = write_properties(tmp_path / "w.properties", pg, DB, slot__name="w_slot", snapshot__mode="initial_only",
                              table__include__list="public.a", snapshot__max__threads="2")
    with pytest.raises(psycopg.Error, match="snapshot"):
        run_capture(config, f"jsonl:{tmp_path / 'w.jsonl'}", stop_when_idle=0.5, show_progress=False)


def test_the_workers_of_a_capture_killed_mid_snapshot_exit(pg: Any, db: str, tmp_path: Path) -> None:
    """kill -9 of the capture while its workers read: they notice their parent is gone and exit,
    instead of waiting forever on their task queue with a connection in the snapshot's transaction."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE TABLE big AS SELECT g AS id, repeat('y', 300) AS pad FROM generate_series(1, 300000) g")
        conn.execute("ALTER TABLE big ADD PRIMARY KEY (id)")
        conn.execute("ANALYZE big")
    config = write_properties(tmp_path / "k.properties", pg, DB, slot__name="k_slot", snapshot__mode="initial_only",
                              table__include__list="public.big", snapshot__max__threads="2")
    out, log = tmp_path / "k.jsonl", tmp_path / "k.log"
    process = capture_subprocess(config, out, 0.5, log)
    try:
        wait_for(lambda: out.exists() and out.stat().st_size > 0, timeout=120, what="the snapshot to write records")
        assert len(processes_running(config)) == 3, log.read_text()[-2000:]  # the capture and its two workers
    finally:
        process.kill()
        process.wait()
    assert sum(1 for _ in out.open("rb")) < 300_000  # killed mid-snapshot
    wait_for(lambda: not processes_running(config), timeout=15, what="the killed capture's workers to exit")
