"""PostgreSQL offsets: Debezium's ``PostgresOffsetContext`` shape, and where to resume from it.

Stored after a transaction commit (all LSNs are the commit's end LSN)::

    {"lsn_proc": 99100312, "lsn_commit": 99100312, "lsn": 99100312, "txId": 1271,
     "ts_usec": 1795336045083801}

Stored in the middle of a large transaction (``lsn`` = last event sent, ``lsn_commit`` = the
previous commit; ``in_tx`` is lakecdc's marker, ignored by Debezium)::

    {"lsn_proc": 99300000, "lsn_commit": 99100312, "lsn": 99300000, "txId": 1272, ..., "in_tx": true}

Stored while the captured tables are idle (``lsn`` = the server's keepalive position, so the slot
releases WAL that only held other tables' changes; ``lsn_commit`` stays the last commit)::

    {"lsn_proc": 99500000, "lsn_commit": 99100312, "lsn": 99500000, "ts_usec": ...}

Stored once a snapshot finished (``lsn`` = the slot's consistent point)::

    {"lsn": 98987608, "txId": 1257, "ts_usec": ..., "snapshot": true, "last_snapshot_record": true}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecdc.events.positions import PostgresPosition


@dataclass(frozen=True)
class ResumePoint:
    start_lsn: int  #: START_REPLICATION position (0 = the slot's confirmed flush LSN)
    last_commit_lsn: int | None  #: first element of ``source.sequence`` until the next commit
    skip_xid: int | None = None  #: transaction partly sent before the stop
    skip_upto_lsn: int = 0  #: its events at or before this LSN were already sent


def resume_point(offset: dict[str, Any] | None) -> ResumePoint:
    if not offset:
        return ResumePoint(0, None)
    position = PostgresPosition.from_offset(offset)
    if position.snapshot:
        return ResumePoint(position.lsn, None)
    commit = position.commit_lsn
    if offset.get("in_tx") and position.tx_id is not None:
        # restart before the partly sent transaction; its events up to ``lsn`` are skipped
        return ResumePoint(commit or 0, commit, position.tx_id, position.lsn)
    return ResumePoint(position.lsn, commit)


def flush_lsn(offset: dict[str, Any]) -> int | None:
    """The LSN PostgreSQL may release once ``offset`` is durable: never inside a transaction."""
    if offset.get("snapshot"):
        return None
    if offset.get("in_tx"):
        commit = offset.get("lsn_commit")
        return int(commit) if commit is not None else None
    return int(offset["lsn"])


def snapshot_completed(offset: dict[str, Any]) -> bool:
    """A stored offset without the snapshot flag, or with its last record, means done."""
    return not offset.get("snapshot") or bool(offset.get("last_snapshot_record"))


def snapshot_offset(lsn: int, tx_id: int | None, ts_usec: int) -> dict[str, Any]:
    return PostgresPosition(
        lsn=lsn, tx_id=tx_id, ts_usec=ts_usec, snapshot=True, last_snapshot_record=True
    ).to_offset()
