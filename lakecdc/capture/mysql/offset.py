"""Offsets of the MySQL/MariaDB connector: what is stored, and how a restart resumes from it.

Stored offset (Debezium ``BinlogOffsetContext`` keys; ``event_pos`` is lakecdc's addition)::

    between transactions  {"file": "binlog.000001", "pos": 3251, "server_id": 223344,
                           "gtids": "0-223344-11", "ts_sec": 1700000000}
    inside a transaction  {"file": "binlog.000001", "pos": 2605, "event": 1, "row": 1,
                           "event_pos": 2987, "server_id": 223344, "gtids": "0-223344-10"}

``pos`` is where reading restarts (the first event of the open transaction, or the end of the
last one). Inside a transaction ``event_pos``/``row`` name the row event and the number of its rows
already emitted, so a restart re-reads the transaction and skips exactly what was delivered: no row
is lost and none is emitted twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecdc.events.positions import MySqlPosition, binlog_file_index


@dataclass(frozen=True)
class ResumePoint:
    file: str
    pos: int  # where the binlog reader starts
    # rows at or before (file index, event pos, rows emitted in that event) were already emitted
    skip_through: tuple[int, int, int] | None
    gtids: str | None

    def already_emitted(self, file_index: int, event_pos: int, row: int) -> bool:
        if self.skip_through is None:
            return False
        f, p, rows_done = self.skip_through
        return (file_index, event_pos) < (f, p) or ((file_index, event_pos) == (f, p) and row < rows_done)


def resume_point(offset: dict[str, Any]) -> ResumePoint:
    position = MySqlPosition.from_offset(offset)
    start = position.restart_pos if position.restart_pos is not None else position.pos
    skip = None
    if position.restart_pos is not None:
        skip = (binlog_file_index(position.file), position.pos, position.row)
    return ResumePoint(position.file, start, skip, position.gtid_set)


def snapshot_completed(offset: dict[str, Any]) -> bool:
    """Offsets are stored only once a snapshot is complete, or by streaming."""
    return not offset.get("snapshot", False) or bool(offset.get("snapshot_completed", False))


def boundary_offset(file: str, pos: int, server_id: int, gtids: str | None, ts_sec: int | None) -> dict[str, Any]:
    """The offset after a complete transaction (or at the snapshot position)."""
    return MySqlPosition(file=file, pos=pos, server_id=server_id, gtid_set=gtids, ts_sec=ts_sec).to_offset()


def in_transaction_offset(file: str, restart_pos: int, event_pos: int, rows_done: int, events_done: int,
                          server_id: int, gtids: str | None, ts_sec: int | None) -> dict[str, Any]:
    return MySqlPosition(
        file=file, pos=event_pos, row=rows_done, event=events_done, restart_pos=restart_pos,
        server_id=server_id, gtid_set=gtids, ts_sec=ts_sec,
    ).to_offset()
