"""The buffer of uncommitted transactions (Debezium's ``TransactionCache``, in memory).

LogMiner returns every change as it was written to the redo, interleaved across transactions and
including changes that are later rolled back. Each change is kept under its transaction id (XID)
until the transaction's COMMIT (emitted then, in redo order, with the commit's SCN) or ROLLBACK
(dropped). Rows undone by a partial rollback (``ROLLBACK`` = 1, ``rollback to savepoint``) remove
the change they undo, matched by ROW_ID from the newest change backwards.

The oldest buffered transaction decides where mining must restart after a crash
(:meth:`TransactionBuffer.restart_scn`): its first change, so that it is read again whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transaction:
    xid: str
    start_scn: int  # SCN of the first change seen (or of the START row)
    start_ts: Any = None
    user_name: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


class TransactionBuffer:
    def __init__(self) -> None:
        self._open: dict[str, Transaction] = {}

    def __len__(self) -> int:
        return len(self._open)

    def start(self, row: dict[str, Any], xid: str) -> None:
        if xid not in self._open:
            self._open[xid] = Transaction(xid, int(row["SCN"]), row.get("TIMESTAMP"), row.get("USERNAME"))

    def add(self, row: dict[str, Any], xid: str) -> None:
        tx = self._open.get(xid)
        if tx is None:
            tx = self._open[xid] = Transaction(xid, int(row["SCN"]), row.get("TIMESTAMP"), row.get("USERNAME"))
        if row.get("ROLLBACK") in (1, "1"):
            self._undo(tx, row)
            return
        tx.events.append(row)

    @staticmethod
    def _undo(tx: Transaction, row: dict[str, Any]) -> None:
        """A rollback-to-savepoint row undoes the newest earlier change of the same ROW_ID."""
        for i in range(len(tx.events) - 1, -1, -1):
            if tx.events[i].get("ROW_ID") == row.get("ROW_ID"):
                del tx.events[i]
                return

    def commit(self, xid: str) -> Transaction | None:
        return self._open.pop(xid, None)

    def rollback(self, xid: str) -> Transaction | None:
        return self._open.pop(xid, None)

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
        return old

    def clear(self) -> None:
        self._open.clear()
