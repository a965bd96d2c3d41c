"""The snapshot's final record is marked ``last``, whichever table it belongs to.

Debezium's ``EventDispatcher.BufferingSnapshotChangeRecordReceiver`` holds back the newest snapshot
record and, when the snapshot completes, sends it with ``source.snapshot`` set to ``last``. So
when the tables read after it are empty, the final record of the last table that had rows says
``last`` (not ``last_in_data_collection``), and a snapshot of one row says ``last`` (not
``first``). ``HoldLast`` does the same over batches: it wraps a scan's ``emit``, holds back the
newest batch, and ``finish()`` re-marks that batch's final record and sends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lakecdc.capture.spi import Emit
from lakecdc.events.envelope import ChangeRecord


class HoldLast:
    """``emit`` for the data records of one snapshot scan; call ``finish()`` once the scan ends."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._held: list[ChangeRecord] = []

    def __call__(self, records: Sequence[ChangeRecord]) -> None:
        if not records:
            return
        if self._held:
            self._emit(self._held)
        self._held = list(records)

    def finish(self) -> None:
        if not self._held:
            return
        final = self._held[-1]
        value = final.value
        # a new source block: the one held may be shared by the table's other rows
        self._held[-1] = replace(final, value={**value, "source": {**value["source"], "snapshot": "last"}})
        self._emit(self._held)
        self._held = []
