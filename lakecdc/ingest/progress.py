"""Kafka progress and source position carried inside each table commit (exactly once).

Every bronze and silver commit lakecdc makes carries these properties (Iceberg snapshot summary,
Delta ``commitInfo`` custom metadata), written atomically with the data::

    {"lakecdc.progress": "{\\"shop.inventory.customers\\": {\\"0\\": 41, \\"1\\": 17}}",
     "lakecdc.batch-id": "12",
     "lakecdc.max-seq": "24023128,24023200,0,0",
     "lakecdc.max-source-ts-ms": "1700000000123",
     "lakecdc.truncated-through": "24000000,24000010,0,0"}

``lakecdc.progress`` is cumulative: the offsets of every partition the table has ever consumed
(this batch's offsets over the previous commit's), so a restart reads one commit and resumes.
``max-seq`` / ``max-source-ts-ms`` map the commit to the source position it reflects, which is
what "as of LSN x / time t" audits look up. ``truncated-through`` (silver only) is the newest
TRUNCATE applied: no event older than it may insert a row again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

PROGRESS_KEY = "lakecdc.progress"
BATCH_ID_KEY = "lakecdc.batch-id"
MAX_SEQ_KEY = "lakecdc.max-seq"
MAX_SOURCE_TS_KEY = "lakecdc.max-source-ts-ms"
TRUNCATED_THROUGH_KEY = "lakecdc.truncated-through"

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class CommitProgress:
    """What one table commit says about the stream position it includes."""

    offsets: Offsets = field(default_factory=dict)
    batch_id: int | None = None
    max_seq: tuple[int, ...] | None = None
    max_source_ts_ms: int | None = None
    truncated_through: tuple[int, ...] | None = None  # newest truncate applied (silver only)

    def covers(self, batch_offsets: Mapping[tuple[str, int], int]) -> bool:
        """True when every offset of a batch is already in this commit (the batch is a replay)."""
        return bool(batch_offsets) and all(
            self.offsets.get(tp, -1) >= offset for tp, offset in batch_offsets.items())

    def advanced(self, batch_offsets: Mapping[tuple[str, int], int], batch_id: int,
                 max_seq: tuple[int, ...] | None, max_source_ts_ms: int | None,
                 truncate_seq: tuple[int, ...] | None = None) -> CommitProgress:
        """The progress after committing a batch: offsets merged, positions never moving backwards."""
        offsets = dict(self.offsets)
        for tp, offset in batch_offsets.items():
            offsets[tp] = max(offset, offsets.get(tp, -1))
        seq = max(s for s in (self.max_seq, max_seq) if s is not None) if (self.max_seq or max_seq) else None
        ts_values = [t for t in (self.max_source_ts_ms, max_source_ts_ms) if t is not None]
        truncates = [t for t in (self.truncated_through, truncate_seq) if t is not None]
        return CommitProgress(offsets, batch_id, seq, max(ts_values) if ts_values else None,
                              max(truncates) if truncates else None)

    def to_properties(self) -> dict[str, str]:
        nested: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted(self.offsets.items()):
            nested.setdefault(topic, {})[str(partition)] = offset
        props = {PROGRESS_KEY: json.dumps(nested, separators=(",", ":"), sort_keys=True)}
        if self.batch_id is not None:
            props[BATCH_ID_KEY] = str(self.batch_id)
        if self.max_seq is not None:
            props[MAX_SEQ_KEY] = ",".join(str(v) for v in self.max_seq)
        if self.max_source_ts_ms is not None:
            props[MAX_SOURCE_TS_KEY] = str(self.max_source_ts_ms)
        if self.truncated_through is not None:
            props[TRUNCATED_THROUGH_KEY] = ",".join(str(v) for v in self.truncated_through)
        return props

    @classmethod
    def from_properties(cls, props: Mapping[str, str] | None) -> CommitProgress | None:
        """Parse a commit's properties; None when the commit is not one of ours (e.g. compaction)."""
        if not props or PROGRESS_KEY not in props:
            return None
        nested = json.loads(props[PROGRESS_KEY])
        offsets = {(topic, int(partition)): int(offset)
                   for topic, partitions in nested.items() for partition, offset in partitions.items()}
        seq = props.get(MAX_SEQ_KEY)
        ts = props.get(MAX_SOURCE_TS_KEY)
        batch = props.get(BATCH_ID_KEY)
        truncated = props.get(TRUNCATED_THROUGH_KEY)
        return cls(offsets=offsets, batch_id=int(batch) if batch is not None else None,
                   max_seq=tuple(int(v) for v in seq.split(",")) if seq else None,
                   max_source_ts_ms=int(ts) if ts is not None else None,
                   truncated_through=tuple(int(v) for v in truncated.split(",")) if truncated else None)
