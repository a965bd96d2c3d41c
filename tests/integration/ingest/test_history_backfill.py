"""``history: scd2`` turned on for a table that already has bronze and silver: the job builds the
history from bronze on the first batch it sees (``lakecdc.writers.history_backfill``), exactly once,
then continues it batch by batch; on Iceberg in Spark and Delta through delta-rs.

The events are ``test_history_writers``' scenario: placeholders and a key change whose old key's
values are only in the batches ingested before the history was turned on, a truncate after it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import test_history_writers as hw
from test_history_writers import writer  # noqa: F401  (the fixture: Iceberg and delta-rs)
from writer_harness import TableReader

from lakecdc.writers.base import TableWriter

pytestmark = pytest.mark.integration


def test_turning_history_on_later_builds_it_from_bronze_once_then_continues(writer: TableWriter) -> None:  # noqa: F811
    s = hw.HistoryStream(writer.spark, writer.format)  # type: ignore[attr-defined]
    s.target = replace(s.target, history=None)
    batches = hw.in_delivery_order([hw.SCENARIO[:3], hw.SCENARIO[3:6], hw.SCENARIO[6:10], hw.SCENARIO[10:]])
    for batch_id, batch in enumerate(batches[:2], start=1):
        writer.apply(s.events(batch), batch_id)
    assert writer._table_schema(s.target.history_table) is None  # type: ignore[attr-defined]

    s.target = replace(s.target, history="scd2")  # the configuration changed; the job restarted
    writer.apply(s.events(batches[2]), 3)
    reader = TableReader(writer)
    # the versions of batches 1-2 are there: the placeholder of batch 2 carried key 2's note, and
    # batch 3's key change (2 -> 4) took it from key 2's version built from bronze
    assert hw.stored_history(writer, s) == hw.model_history([e for b in batches[:3] for e in b])
    assert [v["note"] for v in hw.stored_history(writer, s) if v["id"] == 4] == ["x"]
    commits = reader.commits(s.target.history_table)
    writer.apply(s.events(batches[2]), 3)  # a replay: built once, nothing more
    assert reader.commits(s.target.history_table) == commits

    writer.apply(s.events(batches[3]), 4)  # then batch by batch
    assert reader.commits(s.target.history_table) == commits + 1
    delivered = [e for b in batches for e in b]
    assert hw.stored_history(writer, s) == hw.model_history(delivered)
    current = {r["id"]: (r["name"], r["note"]) for r in hw.stored_history(writer, s) if r["_is_current"]}
    assert current == {r["id"]: (r["name"], r["note"]) for r in reader.rows(s.target.silver_table)}


def test_a_crash_during_or_after_the_backfill_resumes_without_loss_or_duplicates(
        writer: TableWriter, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    s = hw.HistoryStream(writer.spark, writer.format)  # type: ignore[attr-defined]
    s.target = replace(s.target, history=None)
    first, second = hw.in_delivery_order([hw.SCENARIO[:6], hw.SCENARIO[6:]])
    writer.apply(s.events(first), 1)
    s.target = replace(s.target, history="scd2")
    merge_history, merge_silver = writer._merge_history, writer._merge_silver  # type: ignore[attr-defined]

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed")

    monkeypatch.setattr(writer, "_merge_history", killed)  # before the backfill's commit
    with pytest.raises(RuntimeError, match="killed"):
        writer.apply(s.events(second), 2)
    assert writer._stored_progress(s.target.history_table) is None  # type: ignore[attr-defined]
    monkeypatch.setattr(writer, "_merge_history", merge_history)
    monkeypatch.setattr(writer, "_merge_silver", killed)  # after it, before silver's
    with pytest.raises(RuntimeError, match="killed"):
        writer.apply(s.events(second), 2)
    commits = TableReader(writer).commits(s.target.history_table)
    monkeypatch.setattr(writer, "_merge_silver", merge_silver)
    writer.apply(s.events(second), 2)  # the restart: silver takes the batch, the history holds it already
    assert TableReader(writer).commits(s.target.history_table) == commits
    assert hw.stored_history(writer, s) == hw.model_history(first + second)
    current = {r["id"]: (r["name"], r["note"]) for r in hw.stored_history(writer, s) if r["_is_current"]}
    assert current == {r["id"]: (r["name"], r["note"]) for r in TableReader(writer).rows(s.target.silver_table)}
