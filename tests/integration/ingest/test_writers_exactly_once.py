"""Exactly once across a crash between the table commits of one batch, for every writer.

The apply sequence commits bronze, then the delete ledger, then silver (which carries the progress
a restart reads). A crash between any two leaves the tables behind the stream; replaying the batch
must give exactly the state of a run without the crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakecdc.writers.base import LakeWriter, create_writer
from writer_harness import LONG, STR, Ev, Stream, TableReader

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
