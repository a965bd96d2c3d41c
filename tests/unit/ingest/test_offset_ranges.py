"""The offset-range planner: every record after the committed offset is fetched once, in order."""

from __future__ import annotations

import doctest

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.ingest import offset_ranges
from lakecdc.ingest.offset_ranges import MIN_SHARE, FetchedRange, OffsetRange, RangePlanner

# A partition's log: the offsets it holds (gaps = compaction or transaction markers).
logs = st.dictionaries(
    st.tuples(st.sampled_from(["p.a", "p.b", "p.transaction"]), st.integers(0, 2)),
    st.lists(st.integers(0, 5), max_size=400).map(lambda steps: _offsets(steps)),
    min_size=1, max_size=5)


def _offsets(steps: list[int]) -> list[int]:
    out, at = [], 0
    for step in steps:
        at += step
        out.append(at)
        at += 1
    return out


def fetch(log: dict[tuple[str, int], list[int]], ranges: list[OffsetRange]) -> tuple[
        dict[tuple[str, int], list[int]], dict[tuple[str, int], FetchedRange]]:
    """What a fetcher returns for ``ranges``: up to ``limit`` records from ``start``, to the end."""
    got, summary = {}, {}
    for r in ranges:
        offsets = [o for o in log[(r.topic, r.partition)] if o >= r.start][:r.limit]
        got[(r.topic, r.partition)] = offsets
        if offsets:
            summary[(r.topic, r.partition)] = FetchedRange(r.topic, r.partition, len(offsets), offsets[-1])
    return got, summary


@settings(max_examples=200, deadline=None)
@given(log=logs, committed_frac=st.floats(0, 1), budget=st.integers(1, 1500), growth=st.integers(1, 8))
def test_every_offset_after_the_committed_one_is_fetched_exactly_once(log, committed_frac, budget, growth) -> None:
    committed = {tp: offs[int(len(offs) * committed_frac) - 1] if int(len(offs) * committed_frac) else None
                 for tp, offs in log.items()}
    ceiling = budget * growth  # batch.backlog.max.records
    planner = RangePlanner(lambda t, p: committed[(t, p)], budget, ceiling)
    planner.add(sorted(log))
    seen: dict[tuple[str, int], list[int]] = {tp: [] for tp in log}
    for _ in range(10_000):
        ranges = planner.plan()
        current = planner.budget
        assert budget <= current <= ceiling
        assert sum(r.limit for r in ranges) <= current * 1.5 + len(ranges)
        got, summary = fetch(log, ranges)
        for tp, offsets in got.items():
            seen[tp] += offsets
        at_end = planner.advance(ranges, summary)
        # behind a backlog the next batch may read twice as much; at the end, batch.max.records again
        assert planner.budget == (budget if at_end else min(ceiling, current * 2))
        # a partition with offsets left is named lagging (what key-change holds wait on)
        left = {tp for tp, offs in log.items() if any(o > max(seen[tp], default=-1) and
                                                       (committed[tp] is None or o > committed[tp]) for o in offs)}
        assert left <= planner.lagging and (not at_end or not planner.lagging)
        if at_end:
            break
    for tp, offs in log.items():
        start = committed[tp]
        assert seen[tp] == [o for o in offs if start is None or o > start], tp
    # at the end: the next batch is empty and says so again
    ranges = planner.plan()
    got, summary = fetch(log, ranges)
    assert not any(got.values()) and planner.advance(ranges, summary)


def test_a_busy_partition_gets_the_budget_idle_ones_are_probed() -> None:
    planner = RangePlanner(lambda t, p: None, 10_000)
    planner.add([("busy", 0)] + [(f"idle{i}", 0) for i in range(20)])
    ranges = planner.plan()
    planner.advance(ranges, {("busy", 0): FetchedRange("busy", 0, ranges[0].limit, ranges[0].limit - 1)})
    again = {r.topic: r.limit for r in planner.plan()}
    assert again["busy"] >= 5_000 and all(again[f"idle{i}"] == MIN_SHARE for i in range(20))
    assert sum(again.values()) <= 10_000 + MIN_SHARE
    tiny = RangePlanner(lambda t, p: None, 7)
    tiny.add([("a", 0), ("b", 0)])
    assert [r.limit for r in tiny.plan()] == [3, 3]  # a small budget means small batches


def test_new_partitions_start_after_the_committed_offset_or_at_the_beginning() -> None:
    planner = RangePlanner(lambda t, p: {"a": 41}.get(t), 100)
    assert planner.add([("a", 0), ("b", 0)]) == [("a", 0), ("b", 0)]
    assert planner.add([("a", 0)]) == []
    assert {(r.topic, r.start) for r in planner.plan()} == {("a", 42), ("b", 0)}


def test_exact_ranges_are_what_was_counted() -> None:
    planner = RangePlanner(lambda t, p: 9, 100)
    planner.add([("a", 0), ("b", 0)])
    ranges = planner.plan()
    exact = planner.exact_ranges(ranges, {("a", 0): FetchedRange("a", 0, 3, 14)})
    assert exact == {("a", 0): (10, 14)}


def test_docstring_examples() -> None:
    result = doctest.testmod(offset_ranges)
    assert result.failed == 0 and result.attempted > 0
