"""The pieces every capture connector provides, after Debezium's decomposition.

A connector (``lakecdc/capture/<db>/``) supplies:

- a **snapshot source**: reads the captured tables consistently and hands ``op "r"`` records to
  the coordinator; it returns the offset streaming must start from (no gap, no overlap);
- a **streaming source**: reads the change log from an offset, produces change records, says which
  offset covers everything it produced so far, and acknowledges positions to the database once the
  coordinator tells it they are durable (PostgreSQL: the slot's confirmed flush LSN);
- an **offset context**: the connector's offset map (Debezium's shape) and its source partition.

The coordinator (``coordinator.py``) owns ordering: snapshot then stream, and the commit sequence
events -> sink flush -> store offset -> acknowledge source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from lakecdc.transport.offsets import Offset

#: Called with a batch of records (``lakecdc.events.envelope.ChangeRecord``) to send in order.
Emit = Callable[[list[Any]], None]


@dataclass(frozen=True)
class SnapshotResult:
    """What a finished snapshot leaves behind."""

    #: the offset streaming starts from; stored once every snapshot record is durable
    offset: Offset
    rows: int
    tables: int


class SnapshotSource(Protocol):
    def run(self, emit: Emit) -> SnapshotResult:
        """Read every captured table, emitting ``r`` records in batches; return the resume offset."""


class StreamingSource(Protocol):
    def start(self, offset: Offset | None) -> None:
        """Begin reading the change log after ``offset`` (None: from the slot's own position)."""

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        """Append up to about ``max_records`` records to ``out``, waiting at most ``timeout`` s.

        It returns by then even while the source keeps sending: heartbeats, offset commits and the
        stop check run between polls."""

    def committable_offset(self) -> Offset | None:
        """The offset that covers every record produced so far, or None if nothing new."""

    def acknowledge(self, offset: Offset) -> None:
        """Tell the source that everything up to ``offset`` is durable downstream."""

    def idle_seconds(self) -> float:
        """Seconds since the source last produced a data record."""

    def close(self) -> None: ...


class CaptureConnector(Protocol):
    """One source database's connector, as the coordinator drives it."""

    name: str  #: connector name (``name`` property), first part of the offset key
    partition: dict[str, Any]  #: Kafka Connect source partition, e.g. {"server": "dbz"}

    def snapshot_source(self, stored: Offset | None) -> SnapshotSource: ...

    def streaming_source(self) -> StreamingSource: ...

    def offset_has_completed_snapshot(self, stored: Offset) -> bool:
        """True when ``stored`` was written after a finished snapshot (or by streaming)."""

    def can_resume_streaming(self, stored: Offset) -> bool:
        """False when the stored position can no longer be streamed (slot gone, WAL removed)."""

    def close(self) -> None: ...
