"""Maintenance beside a writing ingest job, on real tables (Iceberg through Spark, Delta through delta-rs).

A writer thread applies MERGE batches (inserts, updates, deletes) to bronze, silver and the ledger
while maintenance compacts and expires the same tables in a loop with no retention (every
snapshot it may expire goes, so expiry races the writer's reads too). Whichever side loses a commit
conflict redoes its work (``lakecdc.writers.conflicts``); afterwards every row is there exactly
once, the exactly-once progress is found past the maintenance commits, a replay is skipped and
the next batch applies.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.lake.batch import ChangeBatch
from lakecdc.maintenance.delta import DeltaMaintainer
from lakecdc.maintenance.iceberg import IcebergMaintainer
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.run import Maintainer, MaintenanceConflictError, maintain_tables
from lakecdc.writers import conflicts
from lakecdc.writers.base import TableWriter, create_writer
from lakecdc.writers.conflicts import CommitConflictError, is_commit_conflict, retry_on_conflict

pytestmark = pytest.mark.integration

COLUMNS = [("id", LONG), ("name", STR)]
BATCHES = 4
NO_RETENTION = MaintenanceOptions(expire_older_than=timedelta(0), retain_last=1)


@pytest.fixture(params=["iceberg", "iceberg-jdbc", "delta-rs"])
def setup(request: pytest.FixtureRequest, spark: SparkSession,
          tmp_path: Path) -> Iterator[tuple[TableWriter, Maintainer]]:
    if request.param == "iceberg":
        yield create_writer("iceberg", spark), IcebergMaintainer(spark)
    elif request.param == "iceberg-jdbc":
        # the local stack's catalog.type=jdbc: Iceberg's JDBC catalog on SQLite, one writer at a time
        from lakecdc.devstack.spark import spark_session
        jdbc = spark_session(tmp_path / "jdbc-lake", catalog="jdbc")
        yield create_writer("iceberg", jdbc), IcebergMaintainer(jdbc)
    else:
        warehouse = str(tmp_path / "delta")
        yield create_writer("delta-rs", spark, warehouse=warehouse), DeltaMaintainer(warehouse)


def events(i: int) -> list[Ev]:
    """Batch ``i``: five new keys; from the second on, updates of three keys of the batch before
    and a delete of its fifth (silver MERGEs that touch files a compaction rewrites)."""
    out = [Ev("c", 1000 * i + k, {"id": 100 * i + k, "name": f"new{i}"}) for k in range(5)]
    if i > 1:
        out += [Ev("u", 1000 * i + 10 + k, {"id": 100 * (i - 1) + k, "name": f"upd{i}"}) for k in range(3)]
        out.append(Ev("d", 1000 * i + 20, {"id": 100 * (i - 1) + 4}))
    return out


def expected_silver(batches: int) -> dict[int, str]:
    rows: dict[int, str] = {}
    for i in range(1, batches + 1):
        for e in events(i):
            if e.op == "d":
                rows.pop(e.row["id"])
            else:
                rows[e.row["id"]] = e.row["name"]
    return rows


def tables(s: Stream) -> list[str]:
    return [s.target.bronze_table, s.target.silver_table, s.target.ledger_table]


def write_in_background(writer: TableWriter, s: Stream) -> tuple[threading.Thread, threading.Event,
                                                                 list[BaseException], list[ChangeBatch]]:
    """Batches 2..BATCHES applied on a thread, as the ingest job would (batch 1 is the caller's):
    (thread, set when done, its failures, the last batch applied)."""
    failures: list[BaseException] = []
    written = threading.Event()
    last: list[ChangeBatch] = []

    def ingest() -> None:
        try:
            for i in range(2, BATCHES + 1):
                last[:] = [s.batch(events(i))]
                assert not writer.apply(last[0], i).skipped
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            failures.append(error)
        finally:
            written.set()

    job = threading.Thread(target=ingest, name="ingest-writer")
    job.start()
    return job, written, failures, last


def test_maintenance_while_the_ingest_writer_commits(setup: tuple[TableWriter, Maintainer],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    writer, maintainer = setup
    s = Stream(writer.spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    writer.apply(s.batch(events(1)), 1)
    caplog.set_level(logging.WARNING, logger="lakecdc.writers.conflicts")
    job, written, failures, last = write_in_background(writer, s)
    rounds, reported = 0, []
    try:
        # silver every other time: its compaction replaces the files the MERGEs delete from
        names = itertools.cycle([s.target.silver_table, s.target.bronze_table, s.target.silver_table,
                                 s.target.ledger_table])
        while not written.is_set():
            name = next(names)
            try:
                maintain_tables([maintainer], NO_RETENTION, [name])
            except MaintenanceConflictError as error:  # acceptable: named, table unchanged
                assert error.tables == [name] and str(error).startswith(f"maintenance of {name}: ")
                reported.append(error)
            rounds += 1
    finally:
        job.join(timeout=600)
    assert not failures, failures
    assert rounds >= 2, "maintenance ran beside the writer"
    # (how often either side lost: informative, timing decides)
    print(f"{rounds} maintenance runs, {len(caplog.records)} conflicts redone, {len(reported)} reported")

    # every change once: bronze holds each offset once, silver the state the events lead to
    reader = TableReader(writer)
    assert sorted(r["_offset"] for r in reader.rows(s.target.bronze_table)) == list(range(s.next_offset))
    assert {k: r["name"] for k, r in reader.by_key(s.target.silver_table).items()} == expected_silver(BATCHES)

    # the progress is read back past the maintenance commits, also after one with nothing racing it
    progress = writer.committed_progress(s.target)
    assert progress == {(s.topic, 0): s.next_offset - 1}
    silver = maintain_tables([maintainer], NO_RETENTION, [s.target.silver_table])[0]
    assert writer.committed_progress(s.target) == progress
    assert silver.delete_files_after == 0 and silver.data_files_after == 1
    assert writer.apply(replace(last[0]), BATCHES).skipped  # the last batch again: already committed


def _iceberg_conflict(writer: Any, name: str) -> None:
    """Two commits from one base, through Iceberg's Java API: a rewrite of a data file that a
    delete committed first removed (what a compaction meets when a MERGE wins). The file is
    appended back afterwards, so the next try meets the same conflict."""
    table = writer._iceberg_table(name)
    tasks = table.newScan().planFiles()
    data_file = tasks.iterator().next().file()
    tasks.close()
    rewrite = table.newRewrite().deleteFile(data_file).validateFromSnapshot(table.currentSnapshot().snapshotId())
    writer._iceberg_table(name).newDelete().deleteFile(data_file).commit()
    try:
        rewrite.commit()
    finally:
        writer._iceberg_table(name).newAppend().appendFile(data_file).commit()


def _delta_conflict(writer: Any, name: str, offset: int, stale_deletes: str = "_offset = 4") -> None:
    """A delete from a stale version of the table after another delete rewrote the same file."""
    from deltalake import DeltaTable
    stale = DeltaTable(writer.table_uri(name))
    DeltaTable(writer.table_uri(name)).delete(f"_offset = {offset}")
    stale.delete(stale_deletes)


@pytest.mark.parametrize("setup", ["iceberg", "delta-rs"], indirect=True)
def test_a_real_conflict_is_recognised_and_reported_by_table(setup: tuple[TableWriter, Maintainer]) -> None:
    writer, _ = setup
    s = Stream(writer.spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    writer.apply(s.batch(events(1)), 1)
    bronze = s.target.bronze_table
    attempts: list[int] = []
    offsets = iter(range(4))  # Delta: each try deletes another row first (offset 4 is the stale delete's)

    def losing() -> None:
        attempts.append(1)
        if writer.format == "iceberg":
            _iceberg_conflict(writer, bronze)
        else:
            _delta_conflict(writer, bronze, next(offsets))

    with pytest.raises(Exception) as raised:
        losing()
    assert is_commit_conflict(raised.value), raised.value
    assert not is_commit_conflict(ValueError("Cannot commit"))
    attempts.clear()
    with pytest.raises(CommitConflictError) as reported:
        retry_on_conflict(bronze, losing, attempts=2)
    assert len(attempts) == 2
    assert str(reported.value).startswith(f"{bronze}: still conflicting") and "\n" not in str(reported.value)


def test_a_table_that_keeps_conflicting_is_named_after_the_others(spark: SparkSession, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A table whose maintenance loses every try does not stop the others' (real Delta conflicts)."""
    monkeypatch.setattr(conflicts, "FIRST_BACKOFF_S", 0.01)  # six tries without the real waits
    warehouse = str(tmp_path / "delta")
    writer = create_writer("delta-rs", spark, warehouse=warehouse)
    s = Stream(spark, "delta", COLUMNS)
    for i in (1, 2):
        writer.apply(s.batch(events(i)), i)
    bronze = s.target.bronze_table
    offsets = iter(range(conflicts.COMMIT_ATTEMPTS))

    class Contended(DeltaMaintainer):
        """Every try on bronze meets a real commit conflict (a delete from a stale version after another's)."""

        def maintain(self, name: str, options: MaintenanceOptions) -> Any:
            if name == bronze:
                _delta_conflict(writer, name, next(offsets), stale_deletes="_offset >= 0")
            return super().maintain(name, options)

    with pytest.raises(MaintenanceConflictError) as raised:
        maintain_tables([Contended(warehouse)], MaintenanceOptions(), tables(s))
    assert raised.value.tables == [bronze]
    assert str(raised.value).startswith(f"maintenance of {bronze}: still conflicting")
    assert [r.table for r in raised.value.results] == [s.target.silver_table, s.target.ledger_table]


def test_lakecdc_maintain_in_another_process_beside_the_writer(spark: SparkSession, tmp_path: Path) -> None:
    """``lakecdc maintain`` as cron runs it, in its own process, while the writer commits to Delta
    tables: delta-rs' commit protocol, not a lock in one process, keeps the two apart."""
    warehouse = str(tmp_path / "delta")
    writer = create_writer("delta-rs", spark, warehouse=warehouse)
    s = Stream(spark, "delta", COLUMNS)
    writer.apply(s.batch(events(1)), 1)
    config = tmp_path / "ingest.yaml"
    config.write_text(f"kafka.bootstrap.servers: 127.0.0.1:1\ntopic.prefix: shop\ntable.format: delta\n"
                      f"warehouse: {warehouse}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    job, written, failures, _ = write_in_background(writer, s)
    runs = []
    try:
        while not runs or not written.is_set():
            done = subprocess.run([sys.executable, "-m", "lakecdc.cli.main", "maintain", "-c", str(config),
                                   "--expire-older-than", "0s", "--retain-last", "1", "--json"],
                                  env=env, capture_output=True, text=True, timeout=600)
            # 0, or 2 with the tables that kept conflicting named (the others were maintained)
            assert done.returncode == 0 or (done.returncode == 2 and "still conflicting" in done.stderr), done.stderr
            runs.append(json.loads(done.stdout))
    finally:
        job.join(timeout=600)
    assert not failures, failures
    assert any(r["table"] == s.target.silver_table for run in runs for r in run), runs
    reader = TableReader(writer)
    assert sorted(r["_offset"] for r in reader.rows(s.target.bronze_table)) == list(range(s.next_offset))
    assert {k: r["name"] for k, r in reader.by_key(s.target.silver_table).items()} == expected_silver(BATCHES)
    assert writer.committed_progress(s.target) == {(s.topic, 0): s.next_offset - 1}
