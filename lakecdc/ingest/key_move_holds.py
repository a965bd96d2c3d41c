"""Key-change creates with placeholders wait until their old key's earlier events have been read.

A source UPDATE that changes the primary key reaches the topic as Debezium's delete of the old key
(header ``__debezium.newkey``) and create of the new key (header ``__debezium.oldkey``), both at one
source position, each in its own key's partition. A column the UPDATE did not change may come as a
placeholder (PostgreSQL's unchanged TOAST value, Oracle's LOB, a minimal row image); silver and the
SCD2 history take its value from the old key's row just before the change
(``lakecdc.lake.key_moves``, ``lakecdc.lake.history_chain``). That row is only known once the old
key's partition has been read up to the delete. Partitions are read side by side, one ahead of
another, so a create can be read while its old key's earlier events are still in Kafka: applied
then, the create would take an older value, or none.

``KeyMoveHolds.split`` therefore holds such a create back until every other partition of its topic
has been read to the create's position (``_seq``) or to its end; the old key's delete, and so every
earlier event of that key, is then read. What waits with it, so that nothing overtakes it:

- the later events of its own partition (they include the new key's next changes);
- every later key-change create with placeholders of the topic (a chain A -> B -> C needs B's row).

Rows held here go back to the transaction buffer's held rows, so table progress and the consistency
point stay below them like below an open transaction. With transaction metadata this never holds
anything: the delete is in the create's transaction, which is released only complete. A batch read
to the end of every partition releases everything (the old key's events are then in bronze, or
nowhere).

Rows are decoded rows, or the groups of a batch decoded on the executors
(``executor_batch.RemoteSegment``: a group whose offsets reach a held offset is held whole).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.lake.key_moves import arrow_moved_placeholders
from lakecdc.lake.segments import DecodedSegment

Seq = tuple[int, ...]
TopicPartition = tuple[str, int]


def moved_creates(rows: pa.Table) -> list[tuple[Seq, int, int]]:
    """``(_seq, partition, offset)`` of each key-change create holding placeholders in ``rows``.

    Groups carry their first such create as ``_moved_seq``/``_moved_offset``."""
    if rows.num_rows == 0:
        return []
    if "_moved_seq" in rows.column_names:
        found = rows.filter(pc.is_valid(rows.column("_moved_seq")))
        return [(tuple(s), p, o) for s, p, o in zip(found.column("_moved_seq").to_pylist(),
                                                   found.column("_partition").to_pylist(),
                                                   found.column("_moved_offset").to_pylist())]
    found = rows.filter(arrow_moved_placeholders(rows))
    return [(tuple(s), p, o) for s, p, o in zip(found.column("_seq").to_pylist(),
                                               found.column("_partition").to_pylist(),
                                               found.column("_offset").to_pylist())]


class KeyMoveHolds:
    """The highest position read per partition, and the holds it implies (module docstring)."""

    def __init__(self) -> None:
        self._read: dict[TopicPartition, Seq] = {}

    def observe(self, segments: Iterable[DecodedSegment]) -> None:
        """Record how far each partition has been read (its newest decoded ``_seq``)."""
        for segment in segments:
            rows = segment.rows
            if rows.num_rows == 0:
                continue
            seqs = rows.column("_max_seq" if "_max_seq" in rows.column_names else "_seq").to_pylist()
            for partition, seq in zip(rows.column("_partition").to_pylist(), seqs):
                tp = (segment.topic, partition)
                if tp not in self._read or tuple(seq) > self._read[tp]:
                    self._read[tp] = tuple(seq)

    def read_past(self, topic: str, partition: int, seq: Seq, lagging: Collection[TopicPartition] | None) -> bool:
        """Whether every other partition of ``topic`` is read to ``seq`` or to its end.

        ``lagging`` names the partitions not read to their end; None when the reader cannot tell
        (then every partition read so far counts as lagging)."""
        others = lagging if lagging is not None else self._read
        return all(self._read.get(tp, ()) >= seq for tp in others if tp[0] == topic and tp[1] != partition)

    def split(self, segments: list[DecodedSegment], lagging: Collection[TopicPartition] | None,
              at_end_of_data: bool) -> tuple[list[DecodedSegment], list[DecodedSegment]]:
        """``segments`` (released by their transactions) -> (ready, held here)."""
        if at_end_of_data:
            return segments, []
        creates: dict[str, list[tuple[Seq, int, int]]] = defaultdict(list)
        for segment in segments:
            creates[segment.topic].extend(moved_creates(segment.rows))
        held_from: dict[TopicPartition, int] = {}  # per partition: the offset from which rows wait
        for topic, found in creates.items():
            waiting = False
            for seq, partition, offset in sorted(found):
                waiting = waiting or not self.read_past(topic, partition, seq, lagging)
                if waiting:
                    tp = (topic, partition)
                    held_from[tp] = min(offset, held_from.get(tp, offset))
        if not held_from:
            return segments, []
        ready: list[DecodedSegment] = []
        held: list[DecodedSegment] = []
        for segment in segments:
            mask = _waits(segment, held_from)
            if mask is None:
                ready.append(segment)
                continue
            ready.append(replace(segment, rows=segment.rows.filter(pc.invert(mask))))
            held.append(replace(segment, rows=segment.rows.filter(mask)))
        return [s for s in ready if s.rows.num_rows], [s for s in held if s.rows.num_rows]


def _waits(segment: DecodedSegment, held_from: dict[TopicPartition, int]) -> pa.ChunkedArray | None:
    """Which rows of ``segment`` wait: at or after the held offset of their partition (None: none)."""
    starts = {p: o for (t, p), o in held_from.items() if t == segment.topic}
    if not starts or segment.rows.num_rows == 0:
        return None
    rows = segment.rows
    last = rows.column("_last_offset" if "_last_offset" in rows.column_names else "_offset")
    start = pa.array([starts.get(p) for p in rows.column("_partition").to_pylist()], pa.int64())
    mask = pc.fill_null(pc.greater_equal(last, start), False)
    return mask if pc.any(mask).as_py() else None
