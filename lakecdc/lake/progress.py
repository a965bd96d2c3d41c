"""Kafka progress and source position carried inside each table commit (exactly once).

Every bronze and silver commit lakecdc makes carries these properties (Iceberg snapshot summary,
Delta ``commitInfo`` custom metadata), written atomically with the data::

    {"lakecdc.progress": "{\\"shop.inventory.customers\\": {\\"0\\": 41, \\"1\\": 17}}",
     "lakecdc.batch-id": "12",
     "lakecdc.max-seq": "24023128,24023200,0,0",
     "lakecdc.max-source-ts-ms": "1700000000123",
     "lakecdc.truncated-through": "24000000,24000010,0,0",
     "lakecdc.complete-through": "24023200,24023128,1,0",
     "lakecdc.first-seq": "24023104,24023000,1,0",
     "lakecdc.tx-through": "{\"shop.transaction\": {\"0\": 57}}",
     "lakecdc.connector": "postgres"}

``lakecdc.progress`` is cumulative: the offsets of every partition the table has ever consumed
(this batch's offsets over the previous commit's), so a restart reads one commit and resumes.
``max-seq`` / ``max-source-ts-ms`` map the commit to the source position it reflects, which is
what "as of LSN x / time t" audits look up. ``truncated-through`` (silver only) is the newest
TRUNCATE applied: no event older than it may insert a row again.

``complete-through`` is the source position through which the table is complete: every source
transaction whose commit ranks at or below it (``_seq`` order, where a transaction ranks by its own
commit: ``lakecdc.ingest.ordering.rank_by_commit``) is wholly in the table, and none after it is
(the job releases transactions in commit order). ``first-seq`` is the lowest ``_seq`` this commit
added: with the previous commit's ``max-seq`` it tells which source positions fall between two
versions. ``tx-through`` is the transaction-topic offset through which every transaction is taken in
(a restart completes a transaction from the other tables when this table already holds its part).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PROGRESS_KEY = "lakecdc.progress"
BATCH_ID_KEY = "lakecdc.batch-id"
MAX_SEQ_KEY = "lakecdc.max-seq"
MAX_SOURCE_TS_KEY = "lakecdc.max-source-ts-ms"
TRUNCATED_THROUGH_KEY = "lakecdc.truncated-through"
COMPLETE_THROUGH_KEY = "lakecdc.complete-through"
FIRST_SEQ_KEY = "lakecdc.first-seq"
TX_THROUGH_KEY = "lakecdc.tx-through"
CONNECTOR_KEY = "lakecdc.connector"

Offsets = dict[tuple[str, int], int]
Seq = tuple[int, ...]
_LARGEST = (1 << 63) - 1


@dataclass(frozen=True)
class CommitPositions:
    """What the job knows about source positions when it commits one table (see the module docstring)."""

    complete_through: Seq | None = None
    first_seq: Seq | None = None
    tx_through: Offsets = field(default_factory=dict)
    connector: str | None = None


@dataclass(frozen=True)
class CommitProgress:
    """What one table commit says about the stream position it includes."""

    offsets: Offsets = field(default_factory=dict)
    batch_id: int | None = None
    max_seq: tuple[int, ...] | None = None
    max_source_ts_ms: int | None = None
    truncated_through: tuple[int, ...] | None = None  # newest truncate applied (silver only)
    complete_through: Seq | None = None
    first_seq: Seq | None = None  # this commit's lowest _seq (not carried to the next commit)
    tx_through: Offsets = field(default_factory=dict)
    connector: str | None = None

    def covers(self, batch_offsets: Mapping[tuple[str, int], int]) -> bool:
        """True when every offset of a batch is already in this commit (the batch is a replay)."""
        return bool(batch_offsets) and all(
            self.offsets.get(tp, -1) >= offset for tp, offset in batch_offsets.items())

    def advanced(self, batch_offsets: Mapping[tuple[str, int], int], batch_id: int,
                 max_seq: tuple[int, ...] | None, max_source_ts_ms: int | None,
                 truncate_seq: tuple[int, ...] | None = None,
                 positions: CommitPositions | None = None) -> CommitProgress:
        """The progress after committing a batch: offsets merged, positions never moving backwards."""
        positions = positions or CommitPositions()
        return CommitProgress(_merged(self.offsets, batch_offsets), batch_id, _newest(self.max_seq, max_seq),
                              _newest(self.max_source_ts_ms, max_source_ts_ms),
                              _newest(self.truncated_through, truncate_seq),
                              _newest(self.complete_through, positions.complete_through), positions.first_seq,
                              _merged(self.tx_through, positions.tx_through),
                              positions.connector or self.connector)

    def to_properties(self) -> dict[str, str]:
        props = {PROGRESS_KEY: _offsets_json(self.offsets)}
        if self.batch_id is not None:
            props[BATCH_ID_KEY] = str(self.batch_id)
        if self.max_seq is not None:
            props[MAX_SEQ_KEY] = ",".join(str(v) for v in self.max_seq)
        if self.max_source_ts_ms is not None:
            props[MAX_SOURCE_TS_KEY] = str(self.max_source_ts_ms)
        if self.truncated_through is not None:
            props[TRUNCATED_THROUGH_KEY] = ",".join(str(v) for v in self.truncated_through)
        if self.complete_through is not None:
            props[COMPLETE_THROUGH_KEY] = ",".join(str(v) for v in self.complete_through)
        if self.first_seq is not None:
            props[FIRST_SEQ_KEY] = ",".join(str(v) for v in self.first_seq)
        if self.tx_through:
            props[TX_THROUGH_KEY] = _offsets_json(self.tx_through)
        if self.connector:
            props[CONNECTOR_KEY] = self.connector
        return props

    @classmethod
    def from_properties(cls, props: Mapping[str, str] | None) -> CommitProgress | None:
        """Parse a commit's properties; None when the commit is not one of ours (e.g. compaction)."""
        if not props or PROGRESS_KEY not in props:
            return None
        ts = props.get(MAX_SOURCE_TS_KEY)
        batch = props.get(BATCH_ID_KEY)
        return cls(offsets=_offsets_from_json(props[PROGRESS_KEY]), batch_id=int(batch) if batch is not None else None,
                   max_seq=_seq(props.get(MAX_SEQ_KEY)), max_source_ts_ms=int(ts) if ts is not None else None,
                   truncated_through=_seq(props.get(TRUNCATED_THROUGH_KEY)),
                   complete_through=_seq(props.get(COMPLETE_THROUGH_KEY)), first_seq=_seq(props.get(FIRST_SEQ_KEY)),
                   tx_through=_offsets_from_json(props[TX_THROUGH_KEY]) if props.get(TX_THROUGH_KEY) else {},
                   connector=props.get(CONNECTOR_KEY))


def _seq(text: str | None) -> Seq | None:
    return tuple(int(v) for v in text.split(",")) if text else None


def _newest(old: Any, new: Any) -> Any:
    return old if new is None else new if old is None else max(old, new)


def _merged(old: Offsets, new: Mapping[tuple[str, int], int]) -> Offsets:
    out = dict(old)
    for tp, offset in new.items():
        out[tp] = max(offset, out.get(tp, -1))
    return out


def _offsets_json(offsets: Offsets) -> str:
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(nested, separators=(",", ":"), sort_keys=True)


def _offsets_from_json(text: str) -> Offsets:
    nested = json.loads(text)
    return {(topic, int(partition)): int(offset)
            for topic, partitions in nested.items() for partition, offset in partitions.items()}


def just_below(seq: Seq) -> Seq:
    """The greatest ``_seq`` below ``seq`` (components are never negative)."""
    parts = list(seq)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] > 0:
            parts[i] -= 1
            return tuple(parts[:i + 1]) + (_LARGEST,) * (len(parts) - i - 1)
    return tuple(parts)
