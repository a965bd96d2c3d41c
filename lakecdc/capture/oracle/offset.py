"""Offsets of the Oracle connector: what is stored, and how a restart resumes from it.

Stored offset (Debezium ``OracleOffsetContext`` keys)::

    after the snapshot  {"scn": "2122100", "snapshot_scn": "2122100", "commit_scn": null}
    ... with transactions open at the snapshot SCN
                        {"scn": "2122089", "snapshot_scn": "2122100",
                         "snapshot_pending_tx": "0a00000001000000:2122090", "commit_scn": null}
    while streaming     {"scn": "2122180", "commit_scn": "2122185:0x0000a5.00012345.0124:1:1"}

``scn`` is where mining restarts (exclusive: rows with ``SCN > scn`` are read again): the end of the
last mined window, or just before the first change of the oldest transaction still open then, so
an open transaction is re-read whole. ``commit_scn`` lists, per redo thread, the last transaction
commit already emitted as ``<commit scn>:<rs_id>:<ssn>:<thread>`` (Debezium's ``CommitScn``); a
restart skips every transaction whose COMMIT is at or before that SCN on its thread, so nothing is
emitted twice and nothing is lost.

``snapshot_pending_tx`` (Debezium's key) lists the transactions open when the snapshot read its SCN,
``xid:start scn``: their changes are not in the ``AS OF SCN`` reads, so mining starts before the
oldest of them, and up to the snapshot SCN only their changes are kept (everything else committed
before the snapshot SCN is in the snapshot). Both keys are dropped once mining passes the snapshot
SCN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ThreadCommit:
    scn: int
    rs_id: str | None
    ssn: int
    thread: int

    def text(self) -> str:
        return f"{self.scn}:{self.rs_id or ''}:{self.ssn}:{self.thread}"

    @classmethod
    def parse(cls, text: str) -> ThreadCommit:
        parts = text.split(":")
        if len(parts) == 1:  # Debezium 1.x offsets: the SCN alone, thread 1
            return cls(int(parts[0]), None, 0, 1)
        if len(parts) != 4:
            raise ValueError(f"unexpected commit_scn entry {text!r} (expected scn:rs_id:ssn:thread)")
        return cls(int(parts[0]), parts[1] or None, int(parts[2]), int(parts[3]))


@dataclass
class OracleOffset:
    """The connector's offset; ``commits`` maps redo thread -> last emitted commit."""

    scn: int
    commits: dict[int, ThreadCommit] = field(default_factory=dict)
    snapshot_scn: int | None = None
    #: transactions open at the snapshot SCN: xid -> start SCN
    pending: dict[str, int] = field(default_factory=dict)

    def before_snapshot(self, scn: int) -> bool:
        """True while ``scn`` is covered by the snapshot (only pending transactions count there)."""
        return self.snapshot_scn is not None and scn <= self.snapshot_scn

    def passed_snapshot(self, restart_scn: int) -> None:
        """Forget the snapshot filter once a restart would no longer mine below the snapshot SCN."""
        if self.snapshot_scn is not None and restart_scn >= self.snapshot_scn:
            self.snapshot_scn = None
            self.pending = {}

    def already_emitted(self, thread: int, commit_scn: int) -> bool:
        last = self.commits.get(thread)
        return last is not None and commit_scn <= last.scn

    def record_commit(self, commit: ThreadCommit) -> None:
        self.commits[commit.thread] = commit

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scn": str(self.scn)}
        if self.snapshot_scn is not None:
            out["snapshot_scn"] = str(self.snapshot_scn)
            if self.pending:
                out["snapshot_pending_tx"] = ",".join(f"{x}:{s}" for x, s in sorted(self.pending.items()))
        out["commit_scn"] = ",".join(self.commits[t].text() for t in sorted(self.commits)) or None
        return out

    @classmethod
    def from_offset(cls, offset: dict[str, Any]) -> OracleOffset:
        if offset.get("scn") is None:
            raise ValueError(f"Oracle offset has no 'scn': {offset}")
        commits: dict[int, ThreadCommit] = {}
        raw = offset.get("commit_scn")
        if isinstance(raw, int):
            commits[1] = ThreadCommit(raw, None, 0, 1)
        elif raw:
            for part in str(raw).split(","):
                entry = ThreadCommit.parse(part)
                commits[entry.thread] = entry
        snapshot_scn = offset.get("snapshot_scn")
        pending = {}
        for part in (offset.get("snapshot_pending_tx") or "").split(","):
            if part:
                xid, _, start = part.partition(":")
                pending[xid] = int(start)
        return cls(int(offset["scn"]), commits, int(snapshot_scn) if snapshot_scn is not None else None, pending)

    @classmethod
    def after_snapshot(cls, snapshot_scn: int, pending: dict[str, int]) -> OracleOffset:
        """Where streaming starts after a snapshot read at ``snapshot_scn``."""
        start = min([snapshot_scn, *(s - 1 for s in pending.values())])
        return cls(start, {}, snapshot_scn, dict(pending))


def snapshot_completed(offset: dict[str, Any]) -> bool:
    """Offsets are stored only once a snapshot is complete, or by streaming."""
    return not offset.get("snapshot", False) or bool(offset.get("snapshot_completed", False))
