"""Micro-batches as Kafka offset ranges, decided by lakecdc's loop from the tables' committed offsets.

Every Spark reader of the job (executors fetching with confluent-kafka, or Spark's own Kafka source)
reads exactly the ranges this planner hands out, so there is one resume path on every platform: after
a restart the next offset of a partition is the one after the offset the table committed
(``BatchProcessor.start_offset``), never a streaming checkpoint. A checkpoint is ahead of the tables
whenever events are held (a transaction waiting for its END, a table stopped by a schema error, events
held when ``available-now`` ends); the tables' own offsets are not, so nothing can be skipped.

A range is open-ended: ``limit`` records at most from ``start``, up to the partition's end as the
fetcher sees it. Ends are not taken from high watermarks because some Kafka-protocol brokers report
them wrongly (the local stack's tansu reports 1 for a partition holding 25 records); what was actually
fetched decides where the next batch starts (``advance``), and a batch's exact ranges
(``FetchedRange``) come from the records fetched.

The budget (``batch.max.records``) is shared out so that a busy partition is not starved by many idle
ones: partitions that filled their share in the previous batch split the budget; the others are
probed with a small share (they are read to their end whenever they have little).

Behind a backlog the budget grows: after a batch that did not reach the end of every partition, the
next one may read twice as many records, up to ``batch.backlog.max.records``; the first batch that
reaches the end returns to ``batch.max.records``. A batch has costs that do not grow with its size
(a Spark job per step, table commits, the driver's planning), so a backlog drains faster in fewer,
larger batches, and once it is drained, batches, and with them latency, are small again. Growth is
for these readers only: their records stay on the executors (spilled to disk when large), so the
driver's memory does not grow with the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

TopicPartition = tuple[str, int]
StartOffset = Callable[[str, int], "int | None"]

#: The smallest share of the budget a partition is asked for (less only when the budget is that small).
MIN_SHARE = 100


@dataclass(frozen=True)
class OffsetRange:
    """At most ``limit`` records of one partition from offset ``start`` (open-ended).

    >>> OffsetRange("shop.public.a", 0, 42, 1000).as_row()
    {'topic': 'shop.public.a', 'partition': 0, 'start': 42, 'limit': 1000}
    """

    topic: str
    partition: int
    start: int
    limit: int

    def as_row(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition, "start": self.start, "limit": self.limit}


@dataclass(frozen=True)
class FetchedRange:
    """What a fetch of one ``OffsetRange`` returned: ``count`` records, the last at ``last_offset``."""

    topic: str
    partition: int
    count: int
    last_offset: int  # -1 when nothing was fetched


class RangePlanner:
    """Next offset per partition and each batch's ranges (see the module docstring)."""

    def __init__(self, start_offset: StartOffset, max_records: int, backlog_max_records: int | None = None) -> None:
        self._start_offset = start_offset
        self._base = max_records
        self._ceiling = max(max_records, backlog_max_records or max_records)
        self._budget = max_records  # the next batch's: ``_base``, doubled per batch behind a backlog
        self._next: dict[TopicPartition, int] = {}
        self._busy: set[TopicPartition] = set()

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        return frozenset(self._next)

    @property
    def lagging(self) -> frozenset[TopicPartition]:
        """The partitions whose last range came back full (or not read yet): not at their end."""
        return frozenset(self._busy)

    @property
    def budget(self) -> int:
        """The records the next batch may read (``batch.max.records``, more behind a backlog)."""
        return self._budget

    def next_offset(self, tp: TopicPartition) -> int:
        return self._next[tp]

    def add(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Start reading new partitions after the offset their table committed (else at 0, the
        earliest offset a partition can have; a fetcher moves up to the log start by itself)."""
        new = [tp for tp in partitions if tp not in self._next]
        for tp in new:
            committed = self._start_offset(*tp)
            self._next[tp] = 0 if committed is None else committed + 1
            self._busy.add(tp)  # unknown: give it a full share first
        return new

    def plan(self) -> list[OffsetRange]:
        """This batch's ranges, one per partition, in (topic, partition) order.

        >>> p = RangePlanner(lambda t, n: {"a": 9}.get(t), 1000)
        >>> p.add([("a", 0), ("b", 0)])
        [('a', 0), ('b', 0)]
        >>> p.plan()  # doctest: +NORMALIZE_WHITESPACE
        [OffsetRange(topic='a', partition=0, start=10, limit=500),
         OffsetRange(topic='b', partition=0, start=0, limit=500)]
        """
        if not self._next:
            return []
        busy = [tp for tp in self._next if tp in self._busy]
        idle = len(self._next) - len(busy)
        floor = max(1, min(MIN_SHARE, self._budget // len(self._next)))
        probe = max(floor, self._budget // (10 * len(self._next)))
        left = max(self._budget - probe * idle, self._budget // 2)
        share = max(floor, left // max(1, len(busy)))
        return [OffsetRange(t, p, self._next[(t, p)], share if (t, p) in self._busy else probe)
                for t, p in sorted(self._next)]

    def advance(self, ranges: Iterable[OffsetRange], fetched: Mapping[TopicPartition, FetchedRange]) -> bool:
        """Move past what was fetched; True when every range came back short (the end was reached).

        The next budget doubles (up to the backlog ceiling) when a range came back full, and returns to
        ``batch.max.records`` when none did:

        >>> p = RangePlanner(lambda t, n: None, 100, backlog_max_records=300)
        >>> p.add([("a", 0)])
        [('a', 0)]
        >>> limits = []
        >>> for got in (100, 200, 300, 300, 7):
        ...     r = p.plan()
        ...     _ = p.advance(r, {("a", 0): FetchedRange("a", 0, got, r[0].start + got - 1)})
        ...     limits.append(r[0].limit)
        >>> limits
        [100, 200, 300, 300, 300]
        >>> p.budget
        100
        """
        at_end = True
        for r in ranges:
            tp = (r.topic, r.partition)
            got = fetched.get(tp)
            count = got.count if got is not None else 0
            if got is not None and got.last_offset >= 0:
                self._next[tp] = max(self._next[tp], got.last_offset + 1)
            if count >= r.limit:
                at_end = False
                self._busy.add(tp)
            else:
                self._busy.discard(tp)
        self._budget = self._base if at_end else min(self._ceiling, self._budget * 2)
        return at_end

    def exact_ranges(self, ranges: Iterable[OffsetRange],
                     fetched: Mapping[TopicPartition, FetchedRange]) -> dict[TopicPartition, tuple[int, int]]:
        """``{tp: (first, last)}`` offsets a batch holds: what a re-computed fetch is cut back to."""
        out = {}
        for r in ranges:
            got = fetched.get((r.topic, r.partition))
            if got is not None and got.count:
                out[(r.topic, r.partition)] = (r.start, got.last_offset)
        return out
