"""``--remove-orphans`` on real tables: files no commit references (what a killed write leaves)
go once older than the retention; younger ones stay (a running writer may be about to commit
them), and files a version references stay whatever their age."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.errors import ConfigError
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.run import Maintainer, maintain_tables
from lakecdc.writers.base import TableWriter

pytestmark = pytest.mark.integration

COLUMNS = [("id", LONG), ("name", STR)]
RETENTION = timedelta(days=2)
LONG_AGO = time.time() - timedelta(days=10).total_seconds()




def _location(writer: TableWriter, name: str) -> Path:
    if writer.format == "iceberg":
        location = writer._iceberg_table(name).location()  # type: ignore[attr-defined]
        return Path(str(location).removeprefix("file:"))
    return Path(writer.table_uri(name))  # type: ignore[attr-defined]


def _data_files(root: Path) -> set[Path]:
    """Every file under the table's directory but its metadata / log."""
    return {p for p in root.rglob("*") if p.is_file() and not ({"metadata", "_delta_log"} & set(p.parts))}


def test_orphans_older_than_the_retention_go_young_ones_and_live_files_stay(
        setup: tuple[TableWriter, Maintainer]) -> None:
    writer, maintainer = setup
    s = Stream(writer.spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS)
    writer.apply(s.batch([Ev("c", 10 + i, {"id": i, "name": f"a{i}"}) for i in range(5)]), 1)
    writer.apply(s.batch([Ev("u", 20, {"id": 1, "name": "b1"}), Ev("d", 21, {"id": 2})]), 2)
    tables = [s.target.bronze_table, s.target.silver_table]
    reader = TableReader(writer)
    before = {n: sorted(map(str, reader.rows(n))) for n in tables}
    planted: dict[str, tuple[Path, Path]] = {}
    for name in tables:
        root = _location(writer, name)
        live = _data_files(root)
        for path in live:  # live files as old as the orphans: age alone must not remove them
            os.utime(path, (LONG_AGO, LONG_AGO))
        beside = sorted(live)[0].parent  # where the writer puts data files (bronze: a partition directory)
        old, young = beside / "00000-0-killed-write-old.parquet", beside / "00000-0-killed-write-young.parquet"
        for orphan in (old, young):
            orphan.write_bytes(b"PAR1 half-written by a killed writer")
        os.utime(old, (LONG_AGO, LONG_AGO))
        planted[name] = (old, young)

    options = MaintenanceOptions(expire_older_than=RETENTION, remove_orphans=True)
    planned = maintain_tables([maintainer], MaintenanceOptions(expire_older_than=RETENTION, remove_orphans=True,
                                                               dry_run=True), tables)
    assert all("orphan" in " ".join(r.actions) for r in planned), [r.actions for r in planned]
    assert all(old.exists() and young.exists() for old, young in planted.values())

    results = maintain_tables([maintainer], options, tables)
    for name, (old, young) in planted.items():
        assert not old.exists(), f"{name}: an orphan older than the retention is removed"
        assert young.exists(), f"{name}: an orphan younger than the retention is kept"
    assert all(r.files_deleted >= 1 for r in results)
    assert {n: sorted(map(str, reader.rows(n))) for n in tables} == before  # no live file went
    # the writer goes on over the maintained tables
    assert not writer.apply(s.batch([Ev("u", 30, {"id": 3, "name": "c3"})]), 3).skipped
    assert reader.by_key(s.target.silver_table)[3]["name"] == "c3"


def test_orphan_removal_refuses_a_retention_under_a_day() -> None:
    with pytest.raises(ConfigError, match="at least 1d") as refused:
        MaintenanceOptions(expire_older_than=timedelta(hours=12), remove_orphans=True)
    assert refused.value.property_name == "expire-older-than"
    assert MaintenanceOptions(expire_older_than=timedelta(hours=12)).expire_older_than == timedelta(hours=12)
