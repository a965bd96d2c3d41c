"""The consistency point: only a position every table holds exactly is published (``consistency_point``)."""

from __future__ import annotations

import pyarrow as pa

from lakecdc.ingest.consistency_point import ConsistencyPoint
from lakecdc.ingest.job_state import JobState
from lakecdc.lake.progress import just_below
from lakecdc.lake.segments import METADATA_ARROW


def rows(*events: tuple[str, tuple[int, ...]]) -> pa.Table:
    return pa.table({"_op": pa.array([op for op, _ in events], pa.string()),
                     "_seq": pa.array([list(s) for _, s in events], METADATA_ARROW["_seq"])})


def test_snapshot_rows_hold_the_point_until_every_partition_was_read_to_its_end() -> None:
    point = ConsistencyPoint(JobState())  # never published: its snapshot may be partly read
    point.advance([rows(("r", (100, 100, 0, 0)), ("r", (100, 100, 0, 1)))], False, None, None)
    assert not point.publishable  # another table's snapshot rows (also at 100) may be unread
    point.advance([rows(("u", (150, 120, 1, 0)))], False, None, 150)
    assert not point.publishable and point.point is not None and point.point < (100, 100, 0, 0)
    point.advance([], True, None, 150)  # everything read: the snapshot is complete
    assert point.publishable and point.point == (150, 120, 1, 0)
    state = JobState()
    point.save(state)
    assert state.applied_through_seq == [150, 120, 1, 0] and state.snapshot_pending_seq is None


def test_a_held_transaction_keeps_the_point_below_it_and_nothing_is_published_past_a_table() -> None:
    point = ConsistencyPoint(JobState(applied_through_seq=[10, 0, 0, 0]))
    point.advance([rows(("c", (200, 190, 1, 0)))], False, (180, 170, 1, 0), 200)
    assert point.point == just_below((180, 170, 1, 0)) and not point.publishable  # a table holds 200
    point.advance([rows(("u", (210, 205, 1, 0)))], False, None, 210)
    assert point.point == (210, 205, 1, 0) and point.publishable


def test_after_a_restart_no_point_below_what_a_table_already_holds_is_published() -> None:
    point = ConsistencyPoint(JobState(applied_through_seq=[10, 0, 0, 0]))
    point.table_holds((300, 0, 0, 0))
    point.advance([rows(("u", (250, 240, 1, 0)))], False, None, 250)
    assert not point.publishable
    point.advance([rows(("u", (310, 305, 1, 0)))], False, None, 310)
    assert point.publishable


def test_after_a_restart_whose_replays_release_nothing_the_end_of_data_lifts_the_point() -> None:
    """Killed after a table committed the last transactions: the restarted job finds every event
    already committed, releases nothing new, and must still publish once it has read everything
    (the MariaDB invariant test waited forever for a point before this)."""
    point = ConsistencyPoint(JobState(applied_through_seq=[10, 0, 0, 0]))
    point.table_holds((300, 0, 0, 0))
    point.advance([rows(("u", (250, 240, 1, 0)))], False, None, None)
    assert point.behind_floor and not point.publishable
    point.advance([], True, (260, 255, 1, 0), None)  # at the end, but a transaction is still held
    assert point.behind_floor
    point.advance([], True, None, None)  # at the end, nothing held: every table is complete through 300
    assert not point.behind_floor and point.publishable and point.point == (300, 0, 0, 0)


def test_just_below() -> None:
    assert just_below((5, 0, 0, 0)) == (4, (1 << 63) - 1, (1 << 63) - 1, (1 << 63) - 1)
    assert just_below((5, 6, 7, 8)) == (5, 6, 7, 7)
    assert just_below((0, 0, 0, 0)) == (0, 0, 0, 0)


def test_a_table_holding_changes_above_its_recorded_position_is_the_floor_after_a_restart() -> None:
    """MariaDB, killed three times: a run committed the last transactions into one table while the
    snapshot kept the point (and so the table's complete-through) low, and was killed before it read
    every partition to its end. The restarted job drops those events as replays; its point must
    still reach them, and nothing below them may be published (that table's newest version holds
    them)."""
    point = ConsistencyPoint(JobState(applied_through_seq=[0, 0, 0, 0], snapshot_pending_seq=[0, 0, 0, 0]))
    point.table_holds((0, 0, 0, 0), (1, 20_000, 0, 1))  # checking: complete through nothing, holds 1:20000
    point.table_holds((0, 0, 0, 0), (1, 15_000, 0, 1))
    point.advance([rows(("u", (1, 16_000, 0, 1)))], False, None, None)  # savings' last events, not at the end
    assert point.behind_floor and not point.publishable
    point.advance([rows(("u", (1, 17_000, 0, 1)))], True, None, None)  # read to the end, nothing held
    assert point.publishable and point.point == (1, 20_000, 0, 1)
    state = JobState()
    point.save(state)
    assert state.applied_through_seq == [1, 20_000, 0, 1] and state.snapshot_pending_seq is None


def test_a_point_is_never_published_below_the_changes_a_table_already_holds() -> None:
    point = ConsistencyPoint(JobState(applied_through_seq=[1, 100, 0, 1]))
    point.table_holds((1, 100, 0, 1), (1, 900, 0, 1))
    point.advance([rows(("u", (1, 500, 0, 1)))], False, None, None)
    assert point.point == (1, 500, 0, 1) and not point.publishable  # that table's version holds 1:900
    point.advance([rows(("u", (1, 950, 0, 1)))], False, None, None)
    assert point.publishable and not point.behind_floor
