"""Table maintenance on real tables: Iceberg through Spark procedures, Delta through delta-rs.

After several MERGE batches with updates and deletes, maintenance must leave every row as it was,
fold Iceberg's position deletes (0 delete files) and Delta's small files, and leave the exactly-once
machinery intact: the committed progress is unchanged, a replayed batch changes nothing, the next
batch applies, and time travel to a version before maintenance still works within the retention.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.periodic import PeriodicMaintenance
from lakecdc.maintenance.run import Maintainer, maintain_tables
from lakecdc.writers.base import TableWriter, create_writer

pytestmark = pytest.mark.integration

COLUMNS = [("id", LONG), ("name", STR)]




def _batches(s: Stream) -> list[list[Ev]]:
    """Inserts, updates and deletes spread over earlier batches' keys, then inserts of new keys
    (copy-on-write Delta rewrites the files a MERGE touches: only new keys leave several files)."""
    return [
        [Ev("c", 10 + i, {"id": i, "name": f"a{i}"}) for i in range(20)],
        [Ev("u", 40 + i, {"id": i, "name": f"b{i}"}) for i in range(0, 20, 3)] + [Ev("d", 70, {"id": 1})],
        [Ev("c", 80 + i, {"id": 100 + i, "name": f"c{i}"}) for i in range(10)] + [Ev("d", 95, {"id": 4})],
        [Ev("u", 100 + i, {"id": i, "name": f"d{i}"}) for i in range(2, 20, 4)] + [Ev("d", 130, {"id": 105})],
        [Ev("c", 140 + i, {"id": 200 + i, "name": f"e{i}"}) for i in range(5)],
        [Ev("c", 150 + i, {"id": 300 + i, "name": f"f{i}"}) for i in range(5)],
    ]


def _tables(s: Stream) -> list[str]:
    return [s.target.bronze_table, s.target.silver_table, s.target.ledger_table]


def _state(reader: TableReader, s: Stream) -> dict[str, Any]:
    return {name: sorted(reader.rows(name), key=lambda r: (r.get("_offset", 0), r["id"] or 0, r["_seq"]))
            for name in _tables(s)}


def _files(writer: TableWriter, name: str) -> tuple[int, int]:
    """(data files, delete files) of the table's current version."""
    if writer.format == "iceberg":
        full = writer.resolve(name)  # type: ignore[attr-defined]
        rows = writer.spark.sql(f"SELECT content FROM {full}.files").collect()
        return sum(1 for r in rows if r[0] == 0), sum(1 for r in rows if r[0] != 0)
    from deltalake import DeltaTable
    return len(DeltaTable(writer.table_uri(name)).file_uris()), 0  # type: ignore[attr-defined]


def _version(writer: TableWriter, name: str) -> int:
    if writer.format == "iceberg":
        full = writer.resolve(name)  # type: ignore[attr-defined]
        return int(writer.spark.sql(f"SELECT snapshot_id FROM {full}.snapshots ORDER BY committed_at DESC "
                                    "LIMIT 1").collect()[0][0])
    from deltalake import DeltaTable
    return DeltaTable(writer.table_uri(name)).version()  # type: ignore[attr-defined]


def _rows_as_of(writer: TableWriter, name: str, version: int) -> list[dict[str, Any]]:
    if writer.format == "iceberg":
        full = writer.resolve(name)  # type: ignore[attr-defined]
        rows = writer.spark.sql(f"SELECT * FROM {full} VERSION AS OF {version}").collect()
        return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["id"])
    from deltalake import DeltaTable
    table = DeltaTable(writer.table_uri(name), version=version)  # type: ignore[attr-defined]
    return sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


@pytest.mark.spark4
def test_maintenance_keeps_rows_progress_and_history(setup: tuple[TableWriter, Maintainer],
                                                     spark: SparkSession) -> None:
    writer, maintainer = setup
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    batches = [s.batch(events) for events in _batches(s)]
    for batch_id, batch in enumerate(batches, start=1):
        assert not writer.apply(batch, batch_id).skipped
    reader = TableReader(writer)
    before = _state(reader, s)
    progress = writer.committed_progress(s.target)
    silver = s.target.silver_table
    files_before = _files(writer, silver)
    old_version = _version(writer, silver)
    old_rows = _rows_as_of(writer, silver, old_version)
    if writer.format == "iceberg":
        assert files_before[1] > 0, "merge-on-read MERGEs with updates and deletes leave position deletes"
    assert files_before[0] > 1

    assert set(_tables(s)) <= set(maintainer.tables())  # discovered, ledger included
    dry = maintain_tables([maintainer], MaintenanceOptions(dry_run=True), _tables(s))
    assert [r.table for r in dry] == _tables(s) and all(r.actions for r in dry)
    assert _version(writer, silver) == old_version and _files(writer, silver) == files_before

    results = {r.table: r for r in maintain_tables([maintainer], MaintenanceOptions(), _tables(s))}
    assert _state(reader, s) == before
    data_after, deletes_after = _files(writer, silver)
    assert deletes_after == 0
    assert data_after < files_before[0]
    assert results[silver].data_files_after == data_after and results[silver].data_files_before == files_before[0]
    assert results[silver].delete_files_after == 0
    assert _version(writer, silver) != old_version  # maintenance committed

    # exactly once across maintenance: same progress, a replay is a no-op, the next batch applies
    assert writer.committed_progress(s.target) == progress
    commits = (reader.commits(s.target.bronze_table), reader.commits(silver))
    replay = writer.apply(replace(batches[-1]), len(batches))
    assert replay.skipped
    assert _state(reader, s) == before
    assert (reader.commits(s.target.bronze_table), reader.commits(silver)) == commits
    nxt = writer.apply(s.batch([Ev("u", 200, {"id": 0, "name": "after"}), Ev("d", 201, {"id": 2})]), len(batches) + 1)
    assert not nxt.skipped and nxt.bronze_rows == 2
    now = reader.by_key(silver)
    assert now[0]["name"] == "after" and 2 not in now and now[5]["name"] == "a5"

    # time travel to before maintenance (inside the 7-day retention)
    assert _rows_as_of(writer, silver, old_version) == old_rows


def test_expiring_everything_keeps_the_newest_lakecdc_commit(setup: tuple[TableWriter, Maintainer],
                                                             spark: SparkSession) -> None:
    """A zero retention still leaves the commit a restart resumes from."""
    writer, maintainer = setup
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    for batch_id, events in enumerate(_batches(s), start=1):
        writer.apply(s.batch(events), batch_id)
    progress = writer.committed_progress(s.target)
    before = _state(TableReader(writer), s)
    options = MaintenanceOptions(expire_older_than=MaintenanceOptions().expire_older_than * 0, retain_last=1)
    results = maintain_tables([maintainer], options, _tables(s))
    assert writer.committed_progress(s.target) == progress
    assert _state(TableReader(writer), s) == before
    if writer.format == "iceberg":
        assert results[1].history_removed > 0  # old silver snapshots went
    else:
        assert results[1].files_deleted > 0  # files the MERGEs replaced went
    # Nothing left to do: a second run commits nothing (repeated runs must not push the newest
    # lakecdc commit out of the history a restart reads back).
    versions = {n: _version(writer, n) for n in _tables(s)}
    again = maintain_tables([maintainer], options, _tables(s))
    assert {n: _version(writer, n) for n in _tables(s)} == versions
    assert [r.files_deleted for r in again] == [0, 0, 0]


def test_cli_dry_run_changes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    from lakecdc.cli.main import app

    warehouse = tmp_path / "lake"
    writer = create_writer("delta-rs", spark, warehouse=str(warehouse))
    s = Stream(spark, "delta", COLUMNS)
    for batch_id, events in enumerate(_batches(s), start=1):
        writer.apply(s.batch(events), batch_id)
    versions = {n: _version(writer, n) for n in _tables(s)}
    config = tmp_path / "ingest.yaml"
    config.write_text(f"kafka.bootstrap.servers: 127.0.0.1:1\ntopic.prefix: shop\ntable.format: delta\n"
                      f"warehouse: {warehouse}\n")
    dry = CliRunner().invoke(app, ["maintain", "--config", str(config), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"{s.target.silver_table} (delta):" in dry.output and "would:" in dry.output
    assert {n: _version(writer, n) for n in _tables(s)} == versions
    done = CliRunner().invoke(app, ["maintain", "--config", str(config), "--table", s.target.silver_table])
    assert done.exit_code == 0, done.output
    assert _version(writer, s.target.silver_table) > versions[s.target.silver_table]
    assert _version(writer, s.target.bronze_table) == versions[s.target.bronze_table]
    missing = CliRunner().invoke(app, ["maintain", "--config", str(config), "--table", "silver.nope"])
    assert missing.exit_code == 1 and "silver.nope" in missing.output


def test_periodic_maintenance_every_second_batch(setup: tuple[TableWriter, Maintainer], spark: SparkSession) -> None:
    """``maintenance.compact.every.batches: 2``: what the job calls after each committed batch."""
    writer, maintainer = setup
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    periodic = PeriodicMaintenance(2, lambda fmt: maintainer if fmt == s.target.format else None)
    ran = []
    batches = _batches(s)
    for batch_id, events in enumerate(batches[:4], start=1):
        writer.apply(s.batch(events), batch_id)
        ran.append([r.table for r in periodic.after_batch([s.target])])
        assert periodic.after_batch([]) == []  # a batch that applied nothing does not count
    assert ran == [[], _tables(s), [], _tables(s)]
    assert _files(writer, s.target.silver_table)[1] == 0
    progress = writer.committed_progress(s.target)
    assert writer.apply(s.batch(batches[4]), 5).bronze_rows == len(batches[4])
    assert writer.committed_progress(s.target) != progress
    assert PeriodicMaintenance(0, lambda fmt: maintainer).after_batch([s.target]) == []  # off by default


@pytest.mark.spark4
def test_cli_over_an_iceberg_config(spark: SparkSession, tmp_path: Path) -> None:
    import json

    from lakecdc.cli.main import app

    writer = create_writer("iceberg", spark)
    s = Stream(spark, "iceberg", COLUMNS)
    for batch_id, events in enumerate(_batches(s)[:2], start=1):
        writer.apply(s.batch(events), batch_id)
    silver = s.target.silver_table
    version = _version(writer, silver)
    config = tmp_path / "ingest.yaml"
    config.write_text(f"kafka.bootstrap.servers: 127.0.0.1:1\ntopic.prefix: shop\ntable.format: iceberg\n"
                      f"warehouse: {spark.conf.get('spark.sql.catalog.lake.warehouse')}\n")
    dry = CliRunner().invoke(app, ["maintain", "-c", str(config), "--table", silver, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert [(r["table"], r["dry_run"]) for r in planned] == [(silver, True)] and planned[0]["delete_files_before"] > 0
    assert _version(writer, silver) == version
    done = CliRunner().invoke(app, ["maintain", "-c", str(config), "--table", silver, "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)[0]
    assert result["delete_files_after"] == 0 and result["data_files_after"] == _files(writer, silver)[0] == 1
