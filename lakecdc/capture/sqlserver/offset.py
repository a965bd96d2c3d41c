"""Offsets of the SQL Server connector and how a restart resumes from them.

Stored offset (Debezium ``SqlServerOffsetContext`` keys), source partition
``{"server": <topic.prefix>, "database": <db>}``::

    after the snapshot      {"commit_lsn": "00000025:00000d98:00a2", "event_serial_no": 0,
                             "snapshot": true, "snapshot_completed": true}
    after an event          {"commit_lsn": "00000027:00000758:0005",
                             "change_lsn": "00000027:00000758:0003", "event_serial_no": 1}
    after a whole pass      {"commit_lsn": "00000027:00000800:0001", "event_serial_no": 0}

Without ``change_lsn`` every change committed at or before ``commit_lsn`` is durable; with it,
the changes of that commit up to (``change_lsn``, ``event_serial_no``) are. A restart reads the
change tables from ``commit_lsn`` again and skips what the offset covers, so nothing is emitted
twice and nothing is lost. With ``provide.transaction.metadata`` offsets are stored only after a
transaction's END record (BEGIN/END and the per-event ``total_order`` cannot be resumed halfway), so
a crash inside a transaction sends that transaction again (at-least-once, as Debezium says).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecdc.events.positions import SqlServerPosition


def source_partition(config: Any) -> dict[str, Any]:
    """Debezium 2+'s ``SqlServerPartition``: one source partition per captured database."""
    return {"server": config.topic_prefix, "database": config.database}


@dataclass(frozen=True)
class ResumePoint:
    commit_lsn: int
    change_lsn: int | None
    event_serial_no: int

    @classmethod
    def from_offset(cls, offset: dict[str, Any]) -> ResumePoint:
        p = SqlServerPosition.from_offset(offset)
        return cls(p.commit_lsn, p.change_lsn, p.event_serial_no)

    def covers(self, commit_lsn: int, change_lsn: int, event_serial_no: int) -> bool:
        """True when the event at this position was emitted before the restart."""
        if self.change_lsn is None:
            return commit_lsn <= self.commit_lsn
        return (commit_lsn, change_lsn, event_serial_no) <= (self.commit_lsn, self.change_lsn, self.event_serial_no)


def snapshot_completed(offset: dict[str, Any]) -> bool:
    """Offsets are stored only once a snapshot is complete, or by streaming."""
    return not offset.get("snapshot", False) or bool(offset.get("snapshot_completed", False))


def snapshot_offset(max_lsn: int) -> dict[str, Any]:
    return SqlServerPosition(commit_lsn=max_lsn, snapshot=True, snapshot_completed=True).to_offset()


def event_offset(commit_lsn: int, change_lsn: int | None, event_serial_no: int) -> dict[str, Any]:
    return SqlServerPosition(commit_lsn=commit_lsn, change_lsn=change_lsn, event_serial_no=event_serial_no).to_offset()
