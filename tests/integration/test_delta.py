"""Delta tables through delta-rs (deltalake), the path used when Spark has no Delta jars."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

pytestmark = pytest.mark.integration


def test_delta_write_merge_history_and_time_travel(tmp_warehouse: Path) -> None:
    path = str(tmp_warehouse / "fruit")
    write_deltalake(path, pa.table({"id": [1, 2, 3], "name": ["apple", "banana", "cherry"]}))
    changes = pa.table({"id": [1, 2, 4], "name": ["apple v2", None, "date"], "op": ["u", "d", "c"]})

    table = DeltaTable(path)
    metrics = (
        table.merge(changes, predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.op = 'd'")
        .when_matched_update(updates={"name": "s.name"})
        .when_not_matched_insert(updates={"id": "s.id", "name": "s.name"}, predicate="s.op <> 'd'")
        .execute()
    )
    assert (metrics["num_target_rows_inserted"], metrics["num_target_rows_updated"],
            metrics["num_target_rows_deleted"]) == (1, 1, 1)

    current = DeltaTable(path)
    assert current.to_pyarrow_table().sort_by("id").to_pylist() == [
        {"id": 1, "name": "apple v2"}, {"id": 3, "name": "cherry"}, {"id": 4, "name": "date"}]
    assert current.version() == 1
    operations = [entry["operation"] for entry in current.history()]
    assert operations == ["MERGE", "WRITE"]

    first = DeltaTable(path)
    first.load_as_version(0)
    assert first.to_pyarrow_table().sort_by("id").to_pylist() == [
        {"id": 1, "name": "apple"}, {"id": 2, "name": "banana"}, {"id": 3, "name": "cherry"}]


def test_delta_commit_metadata_round_trips(tmp_warehouse: Path) -> None:
    # Ingest stores Kafka offsets in the same commit as the data; delta-rs must keep them.
    from deltalake import CommitProperties

    path = str(tmp_warehouse / "offsets")
    write_deltalake(path, pa.table({"id": [1]}),
                    commit_properties=CommitProperties(custom_metadata={"lakecdc.progress": '{"t/0": 41}'}))
    assert DeltaTable(path).history(1)[0]["lakecdc.progress"] == '{"t/0": 41}'
