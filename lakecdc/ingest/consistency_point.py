"""The job's consistency point: the source position through which every table is complete.

After each micro-batch the point is the highest rank released (``_seq``; a PostgreSQL transaction
released with no event left to read -- after a restart -- counts by its commit LSN). Transactions are
released whole and in commit order (``lakecdc.ingest.transactions``), so every source transaction
ranked at or below it is in every table. It is kept below:

- the lowest event still held back (a transaction not complete yet);
- the lowest snapshot row released since every partition was last read to its end: snapshot rows
  carry no transaction, so nothing else says when every table's rows have been read (kept in the job
  state across restarts; a job that never had a point waits for the end of the data too, as its
  snapshot may be partly read).

A point is *published* (``lakecdc.ingest.consistency``) only when no table holds anything above it
-- then each table's newest version holds exactly the point -- and not below what a table's newest
commit held before a restart (``floor``: the highest ``_seq`` it holds, not only the position it
recorded as complete through, which a snapshot or a held transaction may have kept lower). After a
restart whose replays release nothing new, reading every partition to its end with nothing held
lifts the point to the floor: every transaction read is then in every table.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.ingest.job_state import JobState
from lakecdc.ingest.ordering import seq_bounds
from lakecdc.lake.progress import just_below

Seq = tuple[int, ...]


class ConsistencyPoint:
    """Tracks the point across batches (see the module docstring)."""

    def __init__(self, state: JobState) -> None:
        self.point: Seq | None = None
        #: the highest point a table's newest commit held before a restart
        self.floor: Seq | None = None
        self._released_max: Seq | None = None  # the highest rank released in this run
        self.snapshot_pending: Seq | None = (
            tuple(state.snapshot_pending_seq) if state.snapshot_pending_seq is not None
            else (0, 0, 0, 0) if state.applied_through_seq is None else None)

    def table_holds(self, complete_through: Seq | None, max_seq: Seq | None = None) -> None:
        """A table's newest commit (read at start) is complete through ``complete_through`` and holds
        changes up to ``max_seq``: after a kill, its events above the position it recorded (released
        while a snapshot or another transaction kept the point lower) are replays the restarted job
        drops, so only this floor says the point must reach them."""
        for held in (complete_through, max_seq):
            if held is not None:
                self.floor = max(self.floor or held, tuple(held))

    def advance(self, released: Iterable[pa.Table], at_end_of_data: bool, held_min: Seq | None,
                last_commit_lsn: int | None) -> None:
        """After a batch released ``released`` (rows with ``_seq`` and ``_op``)."""
        rows = [r for r in released if r.num_rows]
        pending = [s for s in (*(_lowest_read(r) for r in rows), self.snapshot_pending) if s is not None]
        self.snapshot_pending = None if at_end_of_data else min(pending, default=None)
        ranks = [s for s in (self._released_max, *(_highest(r) for r in rows)) if s is not None]
        if last_commit_lsn is not None:
            ranks.append((last_commit_lsn, 0, 0, 0))
        self._released_max = max(ranks, default=None)
        point = self._released_max
        if at_end_of_data and held_min is None and self.floor is not None:
            # Everything read is applied or was already in the tables and nothing is held: every table
            # holds what the one furthest ahead holds (after a restart whose replays released nothing).
            point = self.floor if point is None else max(point, self.floor)
        for below in (held_min, self.snapshot_pending):
            if point is not None and below is not None and point >= below:
                point = just_below(below)
        if point is not None:
            self.point = point if self.point is None else max(point, self.point)

    @property
    def behind_floor(self) -> bool:
        """A restarted job has not yet reached what a table's newest commit holds (an end-of-data batch
        can lift it: ``advance``)."""
        return self.floor is not None and (self.point is None or self.point < self.floor)

    @property
    def publishable(self) -> bool:
        """Every table's newest version holds exactly the point."""
        if self.point is None or (self.floor is not None and self.point < self.floor):
            return False
        return self._released_max is None or self.point >= self._released_max

    def save(self, state: JobState) -> None:
        if self.point is not None:
            state.applied_through_seq = list(self.point)
        state.snapshot_pending_seq = list(self.snapshot_pending) if self.snapshot_pending is not None else None


def _lowest_read(rows: pa.Table) -> Seq | None:
    """The lowest ``_seq`` of the snapshot rows (``_op`` r) among ``rows``, or None."""
    bounds = seq_bounds(rows.column("_seq").filter(pc.equal(rows.column("_op"), "r")))
    return bounds[0] if bounds else None


def _highest(rows: pa.Table) -> Seq | None:
    bounds = seq_bounds(rows.column("_seq"))
    return bounds[1] if bounds else None
