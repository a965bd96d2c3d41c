"""Oracle offsets: Debezium's keys and forms, round trips, resume decisions."""

from __future__ import annotations

from lakecdc.capture.oracle.offset import OracleOffset, ThreadCommit, snapshot_completed


def test_after_snapshot_with_pending_transactions() -> None:
    offset = OracleOffset.after_snapshot(1000, {"0d00000001000000": 980, "0e00000001000000": 990})
    stored = offset.to_offset()
    assert stored == {"scn": "979", "snapshot_scn": "1000",
                      "snapshot_pending_tx": "0d00000001000000:980,0e00000001000000:990", "commit_scn": None}
    back = OracleOffset.from_offset(stored)
    assert back.to_offset() == stored
    assert back.before_snapshot(1000) and not back.before_snapshot(1001)
    back.passed_snapshot(999)
    assert back.snapshot_scn == 1000  # a restart would still mine below the snapshot SCN
    back.passed_snapshot(1000)
    assert back.snapshot_scn is None and back.pending == {}


def test_commit_scn_per_redo_thread() -> None:
    offset = OracleOffset(2000)
    offset.record_commit(ThreadCommit(2122185, "0x001234.00012345.0124", 1, 1))
    offset.record_commit(ThreadCommit(2122190, None, 0, 2))
    stored = offset.to_offset()
    assert stored == {"scn": "2000", "commit_scn": "2122185:0x001234.00012345.0124:1:1,2122190::0:2"}
    back = OracleOffset.from_offset(stored)
    assert back.already_emitted(1, 2122185) and not back.already_emitted(1, 2122186)
    assert back.already_emitted(2, 2122190) and not back.already_emitted(3, 1)
    # Debezium 1.x offsets: commit_scn as a number or a bare SCN string, thread 1
    assert OracleOffset.from_offset({"scn": "5", "commit_scn": 7}).already_emitted(1, 7)
    assert OracleOffset.from_offset({"scn": "5", "commit_scn": "7"}).already_emitted(1, 7)


def test_snapshot_completed() -> None:
    assert snapshot_completed({"scn": "1"})
    assert not snapshot_completed({"scn": "1", "snapshot": True})
    assert snapshot_completed({"scn": "1", "snapshot": True, "snapshot_completed": True})
