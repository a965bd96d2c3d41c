"""SCD2 history end to end through the writers' apply (Iceberg in Spark, Delta through delta-rs), and
its audits compared with silver's time travel and bronze replay.

The same random source histories as the unit model tests (``tests/unit/ingest/history_model``),
fewer of them: every batch goes through ``LakeWriter.apply`` (bronze, ledger, history, silver).
Delta through Spark runs the same in the connector JVM (``test_history_delta_spark``).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.audit.as_of import read_as_of_with_version
from lakecdc.audit.replay import events_between, replay
from lakecdc.audit.scd2 import history_as_of, history_of, key_versions
from lakecdc.audit.tables import LakeTable, to_pandas
from lakecdc.lake.history_chain import normalize_version
from lakecdc.writers.base import TableWriter, create_writer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "ingest"))
from history_model import (  # noqa: E402
    check_chain,
    deliveries,
    event,
    model_history,
    model_silver,
    source_histories,
)

pytestmark = pytest.mark.integration
Row = dict[str, Any]


@pytest.fixture(params=["iceberg", "delta-rs"])
def writer(request: pytest.FixtureRequest, spark: SparkSession,
           tmp_path_factory: pytest.TempPathFactory) -> TableWriter:
    if request.param == "iceberg":
        return create_writer("iceberg", spark)
    return create_writer("delta-rs", spark, warehouse=str(tmp_path_factory.mktemp("delta")))


class HistoryStream(Stream):
    """A table with ``history: scd2`` whose batches are made of ``history_model`` events."""

    def __init__(self, spark: SparkSession, fmt: str, **history: Any) -> None:
        super().__init__(spark, fmt, [("id", LONG), ("name", STR), ("note", STR)])
        self.target = replace(self.target, history="scd2", **history)

    def events(self, batch: list[Row]) -> Any:
        return self.batch([Ev(e["_op"], tuple(e["_seq"]), {"id": e["id"], "name": e["name"], "note": e["note"]},
                              tuple(e["_unavailable"]), e["_source_ts_ms"], e["_offset"],
                              old_key=None if e["_old_key_json"] is None else {"id": int(e["_old_key_json"][6:-1])})
                           for e in batch])


def in_delivery_order(batches: list[list[Row]]) -> list[list[Row]]:
    """Kafka offsets by first delivery (a replay keeps its offset); the harness's transaction ids."""
    offsets: dict[tuple[Any, ...], int] = {}
    return [[{**e, "_offset": offsets.setdefault((tuple(e["_seq"]), e["_op"], e["id"]), len(offsets)),
              "_tx_id": f"{e['_seq'][0]}:{e['_seq'][0]}"} for e in batch] for batch in batches]


def stored_history(writer: TableWriter, s: HistoryStream) -> list[Row]:
    rows = TableReader(writer).rows(s.target.history_table)
    return sorted((normalize_version(r) for r in rows), key=lambda v: (v["id"], v["_valid_from_seq"]))


def lake_table(writer: TableWriter, name: str) -> LakeTable:
    if writer.format == "iceberg":
        return LakeTable.iceberg(writer.spark, name)  # type: ignore[attr-defined]
    return LakeTable.delta(writer.warehouse, name)  # type: ignore[attr-defined]


def deliver(writer: TableWriter, s: HistoryStream, batches: list[list[Row]]) -> None:
    for batch_id, batch in enumerate(batches, start=1):
        writer.apply(s.events(batch), batch_id)
        check_chain(stored_history(writer, s))


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_delivery_through_the_writer_folds_to_the_model(writer: TableWriter, data: st.DataObject) -> None:
    events = data.draw(source_histories(max_steps=10))
    batches = in_delivery_order(data.draw(deliveries(events)))
    s = HistoryStream(writer.spark, writer.format)  # type: ignore[attr-defined]
    deliver(writer, s, batches)
    delivered = list({e["_offset"]: e for b in batches for e in b}.values())
    assert stored_history(writer, s) == model_history(delivered)
    # exactly once: replaying the batches commits nothing to the history
    commits = TableReader(writer).commits(s.target.history_table)
    for batch_id, batch in enumerate(batches, start=1):
        writer.apply(s.events(batch), batch_id)
    assert TableReader(writer).commits(s.target.history_table) == commits
    assert stored_history(writer, s) == model_history(delivered)


SCENARIO = [  # source order; every kind of event, a primary-key change with a placeholder, a truncate
    event("c", 10, 0, 1, "a", "x"), event("c", 11, 0, 2, "b", "x"), event("u", 12, 0, 1, "a2", "x"),
    event("u", 13, 0, 2, "b", None, ("note",)), event("d", 14, 0, 1), event("c", 15, 0, 3, "c", "y"),
    event("d", 16, 0, 2), event("c", 16, 0, 4, "b", None, ("note",), old_key=2), event("u", 17, 0, 3, "c", "z"),
    event("t", 18, 0, None), event("c", 19, 0, 1, "again", "w"), event("u", 20, 0, 1, "again", "v"),
]


@pytest.mark.spark4
def test_history_audits_agree_with_time_travel_and_bronze_replay(writer: TableWriter) -> None:
    s = HistoryStream(writer.spark, writer.format, track_history_except_columns=("note",))  # type: ignore[attr-defined]
    batches = in_delivery_order([SCENARIO[:3], SCENARIO[3:6], SCENARIO[6:10], SCENARIO[10:]])
    deliver(writer, s, batches)
    delivered = [e for b in batches for e in b]
    assert stored_history(writer, s) == model_history(delivered, tracked=("name",))
    silver = lake_table(writer, s.target.silver_table)
    history = history_of(silver)
    # the open versions are silver's rows
    current = {r["id"]: (r["name"], r["note"]) for r in stored_history(writer, s) if r["_is_current"]}
    assert current == {r["id"]: (r["name"], r["note"]) for r in TableReader(writer).rows(s.target.silver_table)}
    assert current == model_silver(delivered)
    # a key's versions: the placeholder carried the note, the key change took it from the old key
    versions = key_versions(history, {"id": 2})
    assert list(versions["note"]) == ["x"] and list(versions["name"]) == ["b"]
    assert list(key_versions(history, {"id": 4})["note"]) == ["x"]
    bronze = to_pandas(lake_table(writer, s.target.bronze_table).arrow())
    # as of a position, history answers for the tracked columns: an untracked change (note) updated
    # its version in place, so the version shows its newest untracked value
    columns = ["id", "name"]
    for position in range(10, 21):
        at = (position, position, 0, 0)
        from_history = history_as_of(history, source_position=at)[columns]
        travelled = read_as_of_with_version(silver, source_position=at).rows
        replayed = replay(travelled.iloc[0:0], events_between(bronze, None, at), ("id",))
        for other in (travelled, replayed):
            expected = other[columns].sort_values("id").reset_index(drop=True)
            assert from_history.sort_values("id").reset_index(drop=True).to_dict("records") == \
                expected.to_dict("records"), position
    # as of a source commit time: the same rows as at the position committed then
    by_time = history_as_of(history, timestamp="2023-11-14T22:13:20.015+00:00")[columns]
    assert by_time.to_dict("records") == history_as_of(history, source_position=(15, 15, 0, 0))[columns].to_dict(
        "records")


def test_a_crash_between_the_history_and_silver_commits_resumes_without_loss_or_duplicates(
        writer: TableWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    s = HistoryStream(writer.spark, writer.format)  # type: ignore[attr-defined]
    first, second = in_delivery_order([SCENARIO[:6], SCENARIO[6:]])
    writer.apply(s.events(first), 1)
    merge_silver = writer._merge_silver  # type: ignore[attr-defined]

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed after the history commit, before silver's")

    monkeypatch.setattr(writer, "_merge_silver", killed)
    with pytest.raises(RuntimeError, match="killed"):
        writer.apply(s.events(second), 2)
    commits = TableReader(writer).commits(s.target.history_table)
    assert stored_history(writer, s) == model_history(first + second)  # the history committed the batch
    monkeypatch.setattr(writer, "_merge_silver", merge_silver)
    writer.apply(s.events(second), 2)  # the restart reads silver's progress and replays the batch
    assert TableReader(writer).commits(s.target.history_table) == commits
    assert stored_history(writer, s) == model_history(first + second)
    current = {r["id"]: (r["name"], r["note"]) for r in stored_history(writer, s) if r["_is_current"]}
    assert current == {r["id"]: (r["name"], r["note"]) for r in TableReader(writer).rows(s.target.silver_table)}
