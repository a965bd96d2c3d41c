"""Exactly once across a crash between the table commits of one batch, for every writer.

The apply sequence commits bronze, then the delete ledger, then silver (which carries the progress
a restart reads). A crash between any two leaves the tables behind the stream; replaying the batch
must give exactly the state of a run without the crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.writers.base import LakeWriter, create_writer

pytestmark = pytest.mark.integration


class Crash(RuntimeError):
    """Stands in for the process dying at this point."""


def _writer(fmt: str, spark: SparkSession, warehouse: Path) -> LakeWriter:
    writer = create_writer(fmt, spark, warehouse=str(warehouse))
    assert isinstance(writer, LakeWriter)
    return writer


@pytest.fixture(params=["iceberg", "delta-rs"])
def fmt(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


FIRST = [Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 10, {"id": 2, "name": "b"}), Ev("c", 10, {"id": 3, "name": "c"})]
SECOND = [Ev("u", 20, {"id": 1, "name": "a2"}), Ev("d", 21, {"id": 2}), Ev("c", 22, {"id": 4, "name": "d"})]


@pytest.mark.parametrize("crash_at", ["_append_ledger", "_merge_silver"])
def test_crash_between_commits_then_replay(fmt: str, crash_at: str, spark: SparkSession, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _writer(fmt, spark, tmp_path)
    s = Stream(spark, "iceberg" if fmt == "iceberg" else "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch(FIRST), 1)
    second = s.batch(SECOND)
    committed_before = writer.committed_progress(s.target)

    original = getattr(writer, crash_at)

    def crash(*args: object, **kwargs: object) -> None:
        raise Crash(f"killed in {crash_at}")

    monkeypatch.setattr(writer, crash_at, crash)
    with pytest.raises(Crash):
        writer.apply(second, 2)
    monkeypatch.setattr(writer, crash_at, original)

    reader = TableReader(writer)
    assert len(reader.rows(s.target.bronze_table)) == 6  # bronze committed before the crash
    assert writer.committed_progress(s.target) == committed_before  # silver did not move: replay from here

    # restart: a new writer, the same batch re-read from the committed offsets
    restarted = _writer(fmt, spark, tmp_path)
    resumed_from = restarted.committed_progress(s.target)[(s.topic, 0)]
    replay = Stream(spark, s.target.format, [("id", LONG), ("name", STR)])
    replay.target, replay.topic, replay.next_offset = s.target, s.topic, resumed_from + 1
    result = restarted.apply(replay.batch([Ev(e.op, e.seq, e.row) for e in SECOND]), 2)
    assert not result.skipped and result.bronze_rows == 0  # bronze already had them: nothing added

    assert {k: v["name"] for k, v in reader.by_key(s.target.silver_table).items()} == {1: "a2", 3: "c", 4: "d"}
    assert len(reader.rows(s.target.bronze_table)) == 6
    assert restarted.committed_progress(s.target) == {(s.topic, 0): 5}
    # and replaying once more is a no-op
    again = Stream(spark, s.target.format, [("id", LONG), ("name", STR)])
    again.target, again.topic, again.next_offset = s.target, s.topic, 3
    assert restarted.apply(again.batch([Ev(e.op, e.seq, e.row) for e in SECOND]), 2).skipped


def test_delta_commits_record_app_transaction(spark: SparkSession, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    writer = _writer("delta-rs", spark, tmp_path)
    s = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch(FIRST), 41)
    writer.apply(s.batch(SECOND), 42)
    for name in (s.target.bronze_table, s.target.silver_table):
        table = DeltaTable(writer.table_uri(name))  # type: ignore[attr-defined]
        assert table.transaction_version(f"lakecdc:{name}") == 42
        newest = table.history(1)[0]
        assert newest["lakecdc.batch-id"] == "42" and newest["lakecdc.max-seq"] == "22,22,0,0"


def test_iceberg_snapshot_summary_carries_progress(spark: SparkSession, tmp_path: Path) -> None:
    writer = _writer("iceberg", spark, tmp_path)
    s = Stream(spark, "iceberg", [("id", LONG), ("name", STR)])
    writer.apply(s.batch(FIRST), 5)
    for name in (s.target.bronze_table, s.target.silver_table):
        full = writer.resolve(name)  # type: ignore[attr-defined]
        summary = spark.sql(f"SELECT summary FROM {full}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()[0][0]
        assert summary["lakecdc.progress"] == f'{{"{s.topic}":{{"0":2}}}}'
        assert summary["lakecdc.batch-id"] == "5" and summary["lakecdc.max-source-ts-ms"] == str(1_700_000_000_010)


def test_events_released_past_the_held_progress_are_not_a_replay(fmt: str, spark: SparkSession,
                                                                 tmp_path: Path) -> None:
    """FINDINGS #1: offsets 3-4 are a transaction still held back, 5-6 a later one released. The
    batch of 5-6 may only commit progress 2 (below the held event), which the table already has:
    it is a replay only if its events are at or below the stored progress, not its progress."""
    writer = _writer(fmt, spark, tmp_path)
    s = Stream(spark, "iceberg" if fmt == "iceberg" else "delta", [("id", LONG), ("name", STR)])
    writer.apply(s.batch(FIRST), 1)
    held = [Ev("u", 30, {"id": 1, "name": "held"}, offset=3), Ev("c", 30, {"id": 5, "name": "e"}, offset=4)]
    released = [Ev("u", 40, {"id": 2, "name": "b2"}, offset=5), Ev("c", 41, {"id": 6, "name": "f"}, offset=6)]
    s.next_offset = 7
    late = replace(s.batch(released), progress={(s.topic, 0): 2}, event_offsets={(s.topic, 0): 6})

    result = writer.apply(late, 2)
    reader = TableReader(writer)
    assert not result.skipped and result.bronze_rows == 2
    assert {k: v["name"] for k, v in reader.by_key(s.target.silver_table).items()} == {
        1: "a", 2: "b2", 3: "c", 6: "f"}
    assert writer.committed_progress(s.target) == {(s.topic, 0): 2}  # never past the held transaction

    # a restart re-reads 3-6: the released events again change nothing
    again = replace(s.batch([Ev(e.op, e.seq, e.row, offset=e.offset) for e in released]),
                    progress={(s.topic, 0): 2}, event_offsets={(s.topic, 0): 6})
    replayed = writer.apply(again, 3)
    assert not replayed.skipped and replayed.bronze_rows == 0
    # the held transaction completes: everything through 6 is now in the tables
    done = writer.apply(replace(s.batch(held), progress={(s.topic, 0): 6}, event_offsets={(s.topic, 0): 4}), 4)
    assert not done.skipped and done.bronze_rows == 2
    assert {k: v["name"] for k, v in reader.by_key(s.target.silver_table).items()} == {
        1: "held", 2: "b2", 3: "c", 5: "e", 6: "f"}
    assert sorted(r["_offset"] for r in reader.rows(s.target.bronze_table)) == [0, 1, 2, 3, 4, 5, 6]
    assert writer.committed_progress(s.target) == {(s.topic, 0): 6}
    # and now the whole range is a replay
    final = replace(s.batch([Ev(e.op, e.seq, e.row, offset=e.offset) for e in released]),
                    progress={(s.topic, 0): 6}, event_offsets={(s.topic, 0): 6})
    assert writer.apply(final, 5).skipped
