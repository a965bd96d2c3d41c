"""The buffer of uncommitted transactions (Debezium's ``TransactionCache``).

LogMiner returns every change as it was written to the redo, interleaved across transactions and
including changes that are later rolled back. Each change is kept under its transaction id (XID)
until the transaction's COMMIT (emitted then, in redo order, with the commit's SCN) or ROLLBACK
(dropped). Rows undone by a partial rollback (``ROLLBACK`` = 1, ``rollback to savepoint``) remove
the change they undo, matched by ROW_ID from the newest change backwards.

Memory is bounded as Debezium's ``log.mining.buffer.*`` properties say:

- ``log.mining.buffer.type``: ``memory`` (default) keeps every row in memory, as Debezium's heap
  buffer; ``sqlite`` (lakecdc's; Debezium's ``ehcache``/``infinispan_*`` names select it too) moves a
  transaction's rows to a local :class:`SpillStore` once it holds more than
  ``log.mining.buffer.memory.threshold`` rows (lakecdc's property), so memory holds at most that
  many rows per open transaction;
- ``log.mining.buffer.transaction.events.threshold`` (Debezium's; 0 = no limit): a transaction with
  more changes is abandoned with a warning and its changes are never emitted, as Debezium does.

The oldest buffered transaction decides where mining must restart after a crash
(:meth:`TransactionBuffer.restart_scn`): its first change, so that it is read again whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lakecdc.capture.oracle.logminer.spill import SpillStore

log = logging.getLogger(__name__)


@dataclass
class Transaction:
    xid: str
    start_scn: int  # SCN of the first change seen (or of the START row)
    start_ts: Any = None
    user_name: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)  # the rows held in memory
    size: int = 0  # rows buffered, in memory or spilled
    spilled: bool = False  # the rows are in the spill store, none in ``events``
    too_large: bool = False  # over log.mining.buffer.transaction.events.threshold: never emitted


class TransactionBuffer:
    def __init__(self, spill: SpillStore | None = None, memory_threshold: int = 0,
                 events_threshold: int = 0) -> None:
        self._open: dict[str, Transaction] = {}
        self.spill = spill
        self.memory_threshold = memory_threshold
        self.events_threshold = events_threshold
        self.in_memory = 0  #: rows held in Python objects, committed ones included until released
        self.peak_in_memory = 0

    def _held(self, delta: int) -> None:
        self.in_memory += delta
        self.peak_in_memory = max(self.peak_in_memory, self.in_memory)

    def __len__(self) -> int:
        return len(self._open)

    def start(self, row: dict[str, Any], xid: str) -> None:
        if xid not in self._open:
            self._open[xid] = Transaction(xid, int(row["SCN"]), row.get("TIMESTAMP"), row.get("USERNAME"))

    def add(self, row: dict[str, Any], xid: str) -> None:
        tx = self._open.get(xid)
        if tx is None:
            tx = self._open[xid] = Transaction(xid, int(row["SCN"]), row.get("TIMESTAMP"), row.get("USERNAME"))
        if tx.too_large:
            return
        if row.get("ROLLBACK") in (1, "1"):
            self._undo(tx, row)
            return
        if self.events_threshold and tx.size >= self.events_threshold:
            log.warning("transaction %s (started at SCN %d) has more than log.mining.buffer.transaction.events."
                        "threshold=%d changes: it is abandoned and its changes will not be emitted", xid,
                        tx.start_scn, self.events_threshold)
            self._release(tx)
            tx.too_large = True
            return
        tx.size += 1
        if tx.spilled:
            assert self.spill is not None
            self.spill.append(xid, (row,))
            return
        tx.events.append(row)
        self._held(1)
        if self.spill is not None and len(tx.events) > self.memory_threshold:
            self.spill.append(xid, tx.events)
            self._held(-len(tx.events))
            tx.events = []
            tx.spilled = True

    def _undo(self, tx: Transaction, row: dict[str, Any]) -> None:
        """A rollback-to-savepoint row undoes the newest earlier change of the same ROW_ID."""
        if tx.spilled:
            assert self.spill is not None
            if self.spill.undo_last(tx.xid, row.get("ROW_ID")):
                tx.size -= 1
            return
        for i in range(len(tx.events) - 1, -1, -1):
            if tx.events[i].get("ROW_ID") == row.get("ROW_ID"):
                del tx.events[i]
                self._held(-1)
                tx.size -= 1
                return

    def rows(self, tx: Transaction) -> Iterator[dict[str, Any]]:
        """A (committed) transaction's rows in redo order, from memory or the spill store."""
        if tx.spilled:
            assert self.spill is not None
            return self.spill.rows(tx.xid)
        return iter(tx.events)

    def release(self, tx: Transaction) -> None:
        """Forget a transaction's rows once emitted (or dropped)."""
        self._release(tx)

    def _release(self, tx: Transaction) -> None:
        if tx.spilled and self.spill is not None:
            self.spill.discard(tx.xid)
        self._held(-len(tx.events))
        tx.events = []
        tx.spilled = False

    def commit(self, xid: str) -> Transaction | None:
        tx = self._open.pop(xid, None)
        if tx is not None and tx.too_large:
            log.warning("transaction %s committed but was abandoned (more than log.mining.buffer.transaction.events."
                        "threshold=%d changes): its changes are not emitted", xid, self.events_threshold)
            return None
        return tx

    def rollback(self, xid: str) -> Transaction | None:
        tx = self._open.pop(xid, None)
        if tx is not None:
            self._release(tx)
        return tx

    def restart_scn(self, window_end: int) -> int:
        """Where mining restarts so that every open transaction is read again from its start."""
        if not self._open:
            return window_end
        return min(window_end, min(tx.start_scn for tx in self._open.values()) - 1)

    def abandon_started_before(self, cutoff: Any) -> list[Transaction]:
        """Drop the transactions whose first change is older than ``cutoff`` (a LogMiner TIMESTAMP):
        ``log.mining.transaction.retention.ms``, so one forgotten session cannot hold the restart SCN
        back forever. Their changes are lost if they commit later (Debezium's trade-off too)."""
        old = [tx for tx in self._open.values() if tx.start_ts is not None and tx.start_ts < cutoff]
        for tx in old:
            del self._open[tx.xid]
            self._release(tx)
        return old

    def clear(self) -> None:
        for tx in self._open.values():
            self._release(tx)
        self._open.clear()

    def close(self, drop: bool) -> None:
        """``drop``: ``log.mining.buffer.drop.on.stop`` (remove the spill file on a clean stop)."""
        self.clear()
        if self.spill is not None:
            self.spill.close(drop)
            self.spill = None
