"""``AckTracker``: which prefix of the records sent so far the broker has acknowledged, without waiting.

Kafka Connect commits a source task's offsets without stopping the task: since KIP-618's
``SubmittedRecords`` (Kafka 3.x, the Connect runtime of Debezium 3) ``WorkerSourceTask`` keeps polling
and sending while the producer is in flight, and an offset is committed only once every record
submitted before it was acknowledged. lakecdc's capture does the same: at each commit point it takes a
:meth:`AckTracker.checkpoint` and keeps sending; the offset taken there is stored once
:meth:`AckTracker.settled` says every record sent before the checkpoint is acknowledged (or failed:
failures are raised by the sink before its offset is stored, as ``flush`` raises them).

Records are grouped into epochs (the records between two checkpoints): each epoch counts what was sent
and what librdkafka reported delivered, through one delivery callback per epoch (a bound method, no
closure per record). Per-record reports cross partitions in any order, so the prefix is known by
counting each epoch, not by the order of reports.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any


class Epoch:
    """Records sent between two checkpoints and how many of them librdkafka has reported on."""

    __slots__ = ("number", "sent", "reported", "failed", "_on_failure")

    def __init__(self, number: int, on_failure: Callable[[Any, Any], None]) -> None:
        self.number = number
        self.sent = 0
        self.reported = 0
        self.failed = 0
        self._on_failure = on_failure

    def delivered(self, error: Any, message: Any) -> None:
        """librdkafka's delivery report for one record of this epoch (served by ``poll``/``flush``)."""
        self.reported += 1
        if error is not None:
            self.failed += 1
            self._on_failure(error, message)


class AckTracker:
    """Epochs of sent records, oldest first; an epoch is settled when each of its records is reported."""

    def __init__(self, on_failure: Callable[[Any, Any], None]) -> None:
        self._on_failure = on_failure
        self._closed: deque[Epoch] = deque()
        #: checkpoints below this one belonged to a producer that was replaced: never settled
        self._lost_below = 0
        self.current = Epoch(0, on_failure)

    def checkpoint(self) -> int:
        """Close the current epoch; its number settles once it and every earlier epoch are reported."""
        epoch = self.current
        if epoch.sent:
            self._closed.append(epoch)
        self.current = Epoch(epoch.number + 1, self._on_failure)
        return epoch.number

    def settled(self, checkpoint: int) -> bool:
        """True when every record sent before ``checkpoint`` was taken has a delivery report. An epoch
        with a failed record stays unsettled until ``failures_handled`` (the sink raises them first)."""
        closed = self._closed
        while closed and closed[0].reported >= closed[0].sent and not closed[0].failed:
            closed.popleft()
        if checkpoint < self._lost_below:
            return False
        return not closed or closed[0].number > checkpoint

    def failed_before(self, checkpoint: int) -> bool:
        """A record sent before ``checkpoint`` was taken failed: the sink raises before it settles
        (a failure of a later record must not hold back the offsets of the records before it)."""
        return any(e.failed for e in (*self._closed, self.current) if e.number <= checkpoint)

    def failures_handled(self) -> None:
        """The failures so far were raised (and tolerated): their epochs settle once reported."""
        for epoch in (*self._closed, self.current):
            epoch.failed = 0

    def forget(self) -> None:
        """The producer was replaced: its unreported records will never be reported, so no
        checkpoint taken so far may settle (the capture re-sends from its last stored offset)."""
        self._closed.clear()
        self._lost_below = self.current.number + 1
        self.current = Epoch(self._lost_below, self._on_failure)

    @property
    def unsettled(self) -> int:
        """Records sent and not yet reported (closed epochs and the current one)."""
        return sum(e.sent - e.reported for e in self._closed) + self.current.sent - self.current.reported
