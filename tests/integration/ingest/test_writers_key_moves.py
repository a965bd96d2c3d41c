"""Primary-key changes whose create holds placeholders, on real tables, for every writer.

Debezium emits a key change as delete(old key) + create(new key) at ONE source position, so both
events here share a ``_seq`` (the topic orders them by offset). The create's placeholder columns
must take the old key's row just before the change (``lakecdc.lake.key_moves``): from the batch,
the stored silver row (also soft-deleted, when its delete is the change's own), or bronze when
the delete was applied by an earlier micro-batch (no transaction metadata) and silver forgot it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.writers.base import LakeWriter, create_writer

pytestmark = pytest.mark.integration

COLUMNS = [("id", LONG), ("name", STR), ("notes", STR)]
PH = {"unavailable": ("notes",)}


@pytest.fixture(params=["iceberg", "delta-rs"])
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[LakeWriter]:
    made = create_writer(request.param, spark, warehouse=str(tmp_path / "delta"))
    assert isinstance(made, LakeWriter)
    yield made


def stream(writer: LakeWriter, spark: SparkSession, delete_mode: str = "hard") -> Stream:
    return Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS, delete_mode=delete_mode)


def silver(writer: LakeWriter, s: Stream) -> dict[Any, dict[str, Any]]:
    return TableReader(writer).by_key(s.target.silver_table)


def values(writer: LakeWriter, s: Stream) -> dict[Any, tuple[Any, Any]]:
    """Live rows: key -> (name, notes)."""
    return {k: (v["name"], v["notes"]) for k, v in silver(writer, s).items() if not v.get("_is_deleted")}


def move(seq: int, old: int, new: int, name: str, **kw: Any) -> list[Ev]:
    """A key change old -> new whose unchanged ``notes`` arrives as the placeholder."""
    return [Ev("d", seq, {"id": old}, **kw), Ev("c", seq, {"id": new, "name": name}, old_key={"id": old}, **PH, **kw)]


def resent(events: list[Ev]) -> list[Ev]:
    """The same events at new Kafka offsets (a restarted capture): same source positions."""
    return [Ev(e.op, e.seq, e.row, unavailable=e.unavailable, ts_ms=e.ts_ms, old_key=e.old_key) for e in events]


def bronze_bookkeeping(writer: LakeWriter, s: Stream) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["_op"], r["_seq"], r["notes"]) for r in TableReader(writer).rows(s.target.bronze_table))


def test_key_change_keeps_the_old_keys_values_for_placeholders(writer: LakeWriter, spark: SparkSession) -> None:
    """From the stored silver row, from earlier events of the batch, and across chained key changes."""
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "stored text"}),
                          Ev("c", 10, {"id": 5, "name": "e", "notes": "five"})]), 1)
    writer.apply(s.batch(move(20, 1, 2, "a")), 2)
    assert values(writer, s) == {2: ("a", "stored text"), 5: ("e", "five")}
    writer.apply(s.batch([
        Ev("c", 30, {"id": 3, "name": "c", "notes": "batch text"}), Ev("u", 31, {"id": 3, "name": "c2"}, **PH),
        *move(32, 3, 4, "c2"), *move(33, 4, 6, "c3"), *move(34, 5, 8, "e"),
        Ev("u", 35, {"id": 8, "name": "e2"}, **PH), *move(36, 8, 9, "e2"),
    ]), 3)
    assert values(writer, s) == {2: ("a", "stored text"), 6: ("c3", "batch text"), 9: ("e2", "five")}
    # bronze keeps the events as they came: the placeholder stays a placeholder there
    moved = [r for r in TableReader(writer).rows(s.target.bronze_table) if r["id"] == 2]
    assert [(r["_op"], r["notes"], list(r["_unavailable"]), r["_old_key_json"]) for r in moved] == [
        ("c", None, ["notes"], '{"id":1}')]


def test_a_delete_before_the_change_ends_the_old_values(writer: LakeWriter, spark: SparkSession) -> None:
    """Values from before an earlier delete of the old key are not its row just before the change
    (the key was re-created by events not read yet): the column stays unknown (null on insert)."""
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "gone"}), Ev("d", 11, {"id": 1})]), 1)
    writer.apply(s.batch([Ev("c", 20, {"id": 2, "name": "a"}, old_key={"id": 1}, **PH)]), 2)
    assert values(writer, s) == {2: ("a", None)}


def test_key_change_in_soft_delete_mode(writer: LakeWriter, spark: SparkSession) -> None:
    s = stream(writer, spark, delete_mode="soft")
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "one"}),
                          Ev("c", 10, {"id": 5, "name": "e", "notes": "five"}),
                          Ev("c", 10, {"id": 7, "name": "g", "notes": "seven"})]), 1)
    # delete and create in one batch: the new key holds the old row's values, the old key is marked
    change = move(20, 1, 2, "a", ts_ms=1_700_000_020_000)
    writer.apply(s.batch(change), 2)
    rows = silver(writer, s)
    assert (rows[2]["name"], rows[2]["notes"], rows[2]["_is_deleted"], rows[2]["_deleted_at"]) == (
        "a", "one", False, None)
    assert (rows[1]["_is_deleted"], rows[1]["notes"]) == (True, "one")
    assert rows[1]["_deleted_at"].timestamp() == pytest.approx(1_700_000_020.0)
    # the delete in one micro-batch, the create in the next: the soft-deleted row is the source
    # (its delete is the change's own, at the create's position)
    delete, create = move(30, 5, 6, "e", ts_ms=1_700_000_030_000)
    writer.apply(s.batch([delete]), 3)
    assert silver(writer, s)[5]["_is_deleted"] is True
    writer.apply(s.batch([create]), 4)
    rows = silver(writer, s)
    assert (rows[6]["name"], rows[6]["notes"], rows[6]["_is_deleted"]) == ("e", "five", False)
    assert (rows[5]["_is_deleted"], rows[5]["_deleted_at"].timestamp()) == (True, pytest.approx(1_700_000_030.0))
    # a row soft-deleted BEFORE the change is no source: its values are not the row just before it
    writer.apply(s.batch([Ev("d", 40, {"id": 7})]), 5)
    writer.apply(s.batch([Ev("c", 50, {"id": 8, "name": "g"}, old_key={"id": 7}, **PH)]), 6)
    assert values(writer, s) == {2: ("a", "one"), 6: ("e", "five"), 8: ("g", None)}
    # a replay (the events re-sent at new offsets) changes nothing
    before = (silver(writer, s), bronze_bookkeeping(writer, s))
    for events, batch_id in ((change, 7), ([delete, create], 8)):
        result = writer.apply(s.batch(resent(events)), batch_id)
        assert not result.skipped and result.bronze_rows == 0
    assert (silver(writer, s), bronze_bookkeeping(writer, s)) == before


def test_delete_applied_in_an_earlier_batch_takes_the_values_from_bronze(writer: LakeWriter,
                                                                         spark: SparkSession) -> None:
    """Hard deletes, no transaction metadata: a batch boundary between the delete and the create
    leaves no silver row of the old key; bronze still holds its events."""
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "one"}),
                          Ev("u", 11, {"id": 1, "name": "a2"}, **PH),  # placeholder in bronze: skipped
                          Ev("c", 12, {"id": 3, "name": "c", "notes": "three"})]), 1)
    delete, create = move(20, 1, 2, "a2")
    writer.apply(s.batch([delete]), 2)
    assert 1 not in silver(writer, s)
    writer.apply(s.batch([create]), 3)
    assert values(writer, s) == {2: ("a2", "one"), 3: ("c", "three")}
    # two key changes 3 -> 4 -> 6, each split: the second finds 4's create in bronze (still the
    # placeholder there), and 3's events behind it
    chain = [*move(30, 3, 4, "c"), *move(31, 4, 6, "c")]
    for batch_id, event in enumerate(chain, start=4):
        writer.apply(s.batch([event]), batch_id)
    assert values(writer, s) == {2: ("a2", "one"), 6: ("c", "three")}
    # a replay (the events re-sent at new offsets) changes nothing
    before = (silver(writer, s), bronze_bookkeeping(writer, s))
    for batch_id, event in enumerate([delete, create, *chain], start=10):
        result = writer.apply(s.batch(resent([event])), batch_id)
        assert not result.skipped and result.bronze_rows == 0
    assert (silver(writer, s), bronze_bookkeeping(writer, s)) == before
