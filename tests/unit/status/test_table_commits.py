"""Reading lakecdc commit properties and row counts from real Delta tables (delta-rs) and Iceberg metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from lakecdc.lake.progress import CommitProgress
from lakecdc.metrics.table_commits import iceberg_commit, read_commit, table_path


def test_delta_commit_is_the_newest_lakecdc_commit_and_rows_count_live_files(tmp_path: Path) -> None:
    path = tmp_path / "silver" / "orders"
    first = CommitProgress({("shop.public.orders", 0): 9}, 1, (10, 10, 0, 0), 1_700_000_000_000)
    write_deltalake(str(path), pa.table({"id": [1, 2, 3]}),
                    commit_properties=CommitProperties(custom_metadata=first.to_properties()))
    second = first.advanced({("shop.public.orders", 0): 14}, 2, (20, 21, 0, 0), 1_700_000_005_000)
    write_deltalake(str(path), pa.table({"id": [4, 5]}), mode="append",
                    commit_properties=CommitProperties(custom_metadata=second.to_properties()))
    DeltaTable(str(path)).delete("id = 1")  # not a lakecdc commit: skipped when looking for progress
    commit = read_commit("delta", tmp_path, "silver.orders")
    assert commit.exists and commit.rows == 4 and commit.version == 1
    assert CommitProgress.from_properties(commit.properties) == second
    assert commit.committed_at_ms is not None


def test_missing_tables_are_reported_as_not_existing(tmp_path: Path) -> None:
    assert not read_commit("delta", tmp_path, "silver.nothing").exists
    assert not read_commit("iceberg", tmp_path, "silver.nothing").exists


def test_table_path_drops_only_the_catalog_part(tmp_path: Path) -> None:
    assert table_path(tmp_path, "silver.orders") == tmp_path / "silver" / "orders"
    assert table_path(tmp_path, "lake.silver.orders", "lake") == tmp_path / "silver" / "orders"
    assert table_path(tmp_path, "main.silver.orders", "lake") == tmp_path / "main" / "silver" / "orders"


def test_iceberg_commit_walks_back_past_foreign_snapshots(tmp_path: Path) -> None:
    """A compaction snapshot on top of the lakecdc one: the properties come from its parent, the
    row count from the current snapshot (records minus position deletes)."""
    meta = tmp_path / "metadata"
    meta.mkdir()
    ours = CommitProgress({("t", 0): 5}, 3, (1, 2, 0, 0), 1_700_000_000_000).to_properties()
    document = {"current-snapshot-id": 2, "snapshots": [
        {"snapshot-id": 1, "timestamp-ms": 111, "summary": {**ours, "total-records": "10",
                                                            "total-position-deletes": "2"}},
        {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 222,
         "summary": {"operation": "replace", "total-records": "8", "total-position-deletes": "0"}}]}
    (meta / "v3.metadata.json").write_text(json.dumps(document))
    (meta / "version-hint.text").write_text("3")
    commit = iceberg_commit(tmp_path)
    assert commit.version == 1 and commit.committed_at_ms == 111 and commit.rows == 8
    assert commit.properties == ours
