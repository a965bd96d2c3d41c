"""Key-change creates holding placeholders wait for their old key's partition (``key_move_holds``).

Property over source histories without transaction metadata (Debezium's default), spread over 1-4
partitions by key, read in batches where partitions run ahead of each other: through the
transaction buffer, as decoded rows and as the executors' groups,

- every event is released exactly once, each partition's events in offset order;
- a key change's create is released with or after its own delete (the old key's last event before
  the change: every earlier event of that key is then released too), never before.

The second is what silver's and the history's placeholder fill need (``lake.key_moves``); without
the holds a create read ahead of its old key's partition broke it (the property fails with
``KeyMoveHolds.split`` returning everything).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.ingest.executor_batch import RemoteSegment, _groups
from lakecdc.ingest.key_move_holds import KeyMoveHolds, moved_creates
from lakecdc.ingest.transactions import TransactionBuffer
from lakecdc.lake.segments import DecodedSegment, SourceTable

TOPIC = "shop.public.docs"
SOURCE = SourceTable("postgresql", "shop", "public", "docs")


@dataclass(frozen=True)
class Event:
    partition: int
    offset: int
    key: int
    op: str
    seq: tuple[int, ...]
    old_key: int | None = None
    placeholder: bool = False


def history(draw: st.DrawFn) -> tuple[int, list[Event]]:
    """A source history as Debezium writes it to a topic of ``partitions`` partitions (by key)."""
    partitions = draw(st.integers(1, 4))
    live: set[int] = set()
    next_key, lsn, events = 0, 100, []
    offsets = [0] * partitions

    def emit(key: int, op: str, old_key: int | None = None, placeholder: bool = False) -> None:
        p = key % partitions
        events.append(Event(p, offsets[p], key, op, (lsn - 8, lsn, 1), old_key, placeholder))
        offsets[p] += 1

    for _ in range(draw(st.integers(1, 30))):
        lsn += 8
        kind = draw(st.sampled_from(["insert", "update", "move"])) if live else "insert"
        if kind == "insert":
            emit(next_key, "c")
            live.add(next_key)
            next_key += 1
        elif kind == "update":
            emit(draw(st.sampled_from(sorted(live))), "u", placeholder=draw(st.booleans()))
        else:  # UPDATE ... SET id = new: delete(old) + create(new) at one position
            old = draw(st.sampled_from(sorted(live)))
            emit(old, "d")
            emit(next_key, "c", old_key=old, placeholder=draw(st.booleans()))
            live.discard(old)
            live.add(next_key)
            next_key += 1
    return partitions, events


def rows(events: list[Event]) -> pa.Table:
    return pa.table({
        "_tx_id": pa.array([None] * len(events), pa.string()),
        "_partition": pa.array([e.partition for e in events], pa.int32()),
        "_offset": pa.array([e.offset for e in events], pa.int64()),
        "_seq": pa.array([list(e.seq) for e in events], pa.list_(pa.int64())),
        "_op": pa.array([e.op for e in events], pa.string()),
        "_key_json": pa.array([f'{{"id":{e.key}}}' for e in events], pa.string()),
        "_old_key_json": pa.array([None if e.old_key is None else f'{{"id":{e.old_key}}}' for e in events],
                                  pa.string()),
        "_unavailable": pa.array([["body"] if e.placeholder else None for e in events], pa.list_(pa.string())),
    })


def segment(events: list[Event], grouped: bool) -> DecodedSegment:
    decoded = DecodedSegment(TOPIC, 0, [], ("id",), SOURCE, rows(events))
    if grouped:  # the executors' form: one group per (transaction, partition) of a task's rows
        moved = {(p, o): seq for seq, p, o in moved_creates(decoded.rows)}
        cuts: dict[int, list[int]] = {}
        for p, o in sorted(moved):
            cuts.setdefault(p, []).append(o)
        return RemoteSegment(TOPIC, 0, [], ("id",), SOURCE, _groups(decoded.rows, moved, cuts))
    return decoded


def released_events(ready: list[DecodedSegment], by_place: dict[tuple[int, int], Event]) -> list[Event]:
    out = []
    for s in ready:
        if "_last_offset" in s.rows.column_names:  # a group stands for its offset range
            for p, lo, hi in zip(*(s.rows.column(n).to_pylist() for n in ("_partition", "_offset", "_last_offset"))):
                out.extend(by_place[(p, o)] for o in range(lo, hi + 1) if (p, o) in by_place)
        else:
            out.extend(by_place[(p, o)] for p, o in zip(s.rows.column("_partition").to_pylist(),
                                                       s.rows.column("_offset").to_pylist()))
    return out


@st.composite
def schedules(draw: st.DrawFn) -> tuple[int, list[Event], list[list[int]]]:
    """A history and the reads: per batch, how many more events each partition gives."""
    partitions, events = history(draw)
    steps = draw(st.lists(st.lists(st.integers(0, 3), min_size=partitions, max_size=partitions), max_size=12))
    return partitions, events, steps


def run(partitions: int, events: list[Event], steps: list[list[int]], grouped: bool,
        holds: bool = True) -> list[list[Event]]:
    """Released events per batch; the last batch reads what is left, to the end of every partition."""
    buffer = TransactionBuffer()
    if not holds:
        buffer._key_moves.split = lambda segments, lagging, at_end: (segments, [])  # type: ignore[method-assign]
    by_partition = [[e for e in events if e.partition == p] for p in range(partitions)]
    by_place = {(e.partition, e.offset): e for e in events}
    read = [0] * partitions
    out = []
    for step in [*steps, [len(events)] * partitions]:
        batch = []
        for p in range(partitions):
            batch.extend(by_partition[p][read[p]:read[p] + step[p]])
            read[p] = min(len(by_partition[p]), read[p] + step[p])
        lagging = frozenset((TOPIC, p) for p in range(partitions) if read[p] < len(by_partition[p]))
        # a task decodes one partition: the executors' groups never mix partitions of one task
        fresh = [segment([e for e in batch if e.partition == p], grouped) for p in range(partitions)
                 if any(e.partition == p for e in batch)] if grouped else ([segment(batch, False)] if batch else [])
        ready = buffer.split(fresh, at_end_of_data=not lagging, lagging=lagging)
        out.append(released_events(ready, by_place))
    assert buffer.held_events == 0
    return out


def check(events: list[Event], batches: list[list[Event]]) -> None:
    order = [e for b in batches for e in b]
    assert sorted(order, key=lambda e: (e.partition, e.offset)) == sorted(events, key=lambda e: (e.partition, e.offset))
    for p in {e.partition for e in events}:
        offsets = [e.offset for e in order if e.partition == p]
        assert offsets == sorted(offsets), f"partition {p} released out of order"
    batch_of = {(e.partition, e.offset): i for i, b in enumerate(batches) for e in b}
    for e in events:
        if e.old_key is not None and e.placeholder:
            delete = next(d for d in events if d.op == "d" and d.key == e.old_key and d.seq == e.seq)
            assert batch_of[(delete.partition, delete.offset)] <= batch_of[(e.partition, e.offset)], (
                f"key {e.key}'s create (moved from {e.old_key}) was released before its old key's delete")


@pytest.mark.parametrize("grouped", [False, True], ids=["rows", "executor-groups"])
@settings(max_examples=300, deadline=None)
@given(case=schedules())
def test_a_moved_create_never_overtakes_its_old_keys_events(grouped: bool,
                                                           case: tuple[int, list[Event], list[list[int]]]) -> None:
    partitions, events, steps = case
    check(events, run(partitions, events, steps, grouped))


def test_without_the_holds_a_create_read_ahead_is_released_first() -> None:
    """The named case: key 0 (partition 0) moves to key 1 (partition 1); partition 1 is read first."""
    events = [Event(0, 0, 0, "c", (92, 100, 1)), Event(0, 1, 0, "u", (100, 108, 1)),
              Event(0, 2, 0, "d", (108, 116, 1)), Event(1, 0, 1, "c", (108, 116, 1), old_key=0, placeholder=True),
              Event(1, 1, 1, "u", (116, 124, 1), placeholder=True)]
    steps = [[1, 2]]
    for grouped in (False, True):
        batches = run(2, events, steps, grouped)
        check(events, batches)
        assert [e.key for e in batches[0]] == [0]  # the create and key 1's update waited
        with pytest.raises(AssertionError, match="released before its old key's delete"):
            check(events, run(2, events, steps, grouped, holds=False))


def test_a_reader_that_cannot_tell_which_partitions_lag_waits_for_each_one_read() -> None:
    holds = KeyMoveHolds()
    early = segment([Event(0, 0, 0, "c", (92, 100, 1))], grouped=False)
    moved = segment([Event(1, 0, 1, "c", (108, 116, 1), old_key=0, placeholder=True)], grouped=False)
    holds.observe([early, moved])
    ready, held = holds.split([moved], lagging=None, at_end_of_data=False)
    assert ready == [] and held[0].rows.num_rows == 1  # partition 0 was read only to 100
    holds.observe([segment([Event(0, 1, 0, "d", (108, 116, 1))], grouped=False)])
    ready, held = holds.split([moved], lagging=None, at_end_of_data=False)
    assert held == [] and ready[0].rows.num_rows == 1
