"""Offsets: the Debezium offset shapes written, and the resume point a restart derives from them."""

from __future__ import annotations

from lakecdc.capture.mysql.offset import (
    boundary_offset,
    in_transaction_offset,
    resume_point,
    snapshot_completed,
)


def test_offset_between_transactions_restarts_at_the_next_event():
    offset = boundary_offset("binlog.000003", 3251, 223344, "0-223344-11", 1700000000)
    assert offset == {"file": "binlog.000003", "pos": 3251, "server_id": 223344, "gtids": "0-223344-11",
                      "ts_sec": 1700000000}
    point = resume_point(offset)
    assert (point.file, point.pos, point.gtids, point.skip_through) == ("binlog.000003", 3251, "0-223344-11", None)
    assert not point.already_emitted(3, 3300, 0)


def test_offset_inside_a_transaction_rereads_it_and_skips_what_was_delivered():
    # transaction starts at 2605; rows event at 2987 had 2 of its rows delivered
    offset = in_transaction_offset("binlog.000003", 2605, 2987, 2, 1, 223344, "0-223344-10", None)
    assert offset["pos"] == 2605 and offset["event"] == 1 and offset["row"] == 2 and offset["event_pos"] == 2987
    point = resume_point(offset)
    assert point.pos == 2605
    assert point.already_emitted(3, 2700, 5)  # an earlier rows event of the transaction
    assert point.already_emitted(3, 2987, 0) and point.already_emitted(3, 2987, 1)
    assert not point.already_emitted(3, 2987, 2)  # the third row of that event was not delivered
    assert not point.already_emitted(3, 3100, 0)
    assert not point.already_emitted(4, 100, 0)  # a later file
    assert point.already_emitted(2, 99999, 0)  # an earlier file


def test_debezium_offsets_without_event_pos_are_read():
    point = resume_point({"file": "mysql-bin.000003", "pos": 154, "row": 1, "event": 2, "server_id": 1})
    assert (point.file, point.pos, point.skip_through) == ("mysql-bin.000003", 154, None)


def test_snapshot_completed():
    assert snapshot_completed({"file": "f.000001", "pos": 4})
    assert not snapshot_completed({"file": "f.000001", "pos": 4, "snapshot": True})
    assert snapshot_completed({"file": "f.000001", "pos": 4, "snapshot": True, "snapshot_completed": True})
