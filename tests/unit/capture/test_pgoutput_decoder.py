"""pgoutput protocol v1 decoding, on byte strings laid out as PostgreSQL sends them."""

from __future__ import annotations

import struct

import pytest

from lakecdc.capture.postgres.decoder import (
    PG_EPOCH_OFFSET_US,
    UNCHANGED,
    BeginMessage,
    CommitMessage,
    DecodeError,
    DeleteMessage,
    InsertMessage,
    LogicalMessage,
    RelationMessage,
    TruncateMessage,
    TypeMessage,
    UpdateMessage,
    decode_message,
)


def tuple_data(*cols: object) -> bytes:
    out = struct.pack(">h", len(cols))
    for c in cols:
        if c is None:
            out += b"n"
        elif c is UNCHANGED:
            out += b"u"
        else:
            raw = str(c).encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def test_begin_and_commit_carry_lsns_xid_and_unix_timestamps() -> None:
    begin = decode_message(b"B" + struct.pack(">QqI", 0x5E6A8C8, 1_000_000, 1260))
    assert begin == BeginMessage(0x5E6A8C8, 1_000_000 + PG_EPOCH_OFFSET_US, 1260)
    commit = decode_message(b"C" + struct.pack(">BQQq", 0, 100, 148, 5))
    assert commit == CommitMessage(0, 100, 148, 5 + PG_EPOCH_OFFSET_US)


def test_relation_lists_columns_with_key_flags_and_replica_identity() -> None:
    body = struct.pack(">I", 16385) + b"public\0customers\0" + b"f" + struct.pack(">h", 2)
    body += b"\x01id\0" + struct.pack(">Ii", 23, -1)
    body += b"\x00balance\0" + struct.pack(">Ii", 1700, (12 << 16 | 2) + 4)
    msg = decode_message(b"R" + body)
    assert isinstance(msg, RelationMessage)
    assert (msg.relation_id, msg.namespace, msg.name, msg.replica_identity) == (16385, "public", "customers", "f")
    assert [(c.name, c.type_oid, c.is_key) for c in msg.columns] == [("id", 23, True), ("balance", 1700, False)]
    assert msg.columns[1].typmod == (12 << 16 | 2) + 4


def test_insert_keeps_text_nulls_and_utf8() -> None:
    msg = decode_message(b"I" + struct.pack(">I", 7) + b"N" + tuple_data(1, None, "zoë"))
    assert msg == InsertMessage(7, ["1", None, "zoë"])


def test_update_with_old_full_row_and_unchanged_toast() -> None:
    data = b"U" + struct.pack(">I", 7) + b"O" + tuple_data(1, "a") + b"N" + tuple_data(1, UNCHANGED)
    msg = decode_message(data)
    assert isinstance(msg, UpdateMessage)
    assert msg.old_kind == "O" and msg.old == ["1", "a"]
    assert msg.new[0] == "1" and msg.new[1] is UNCHANGED


def test_update_without_old_tuple_and_with_key_only() -> None:
    plain = decode_message(b"U" + struct.pack(">I", 7) + b"N" + tuple_data(2, "b"))
    assert plain == UpdateMessage(7, "", None, ["2", "b"])
    keyed = decode_message(b"U" + struct.pack(">I", 7) + b"K" + tuple_data(1, None) + b"N" + tuple_data(2, "b"))
    assert keyed.old_kind == "K" and keyed.old == ["1", None] and keyed.new == ["2", "b"]


def test_delete_truncate_type_and_message() -> None:
    assert decode_message(b"D" + struct.pack(">I", 9) + b"K" + tuple_data(5)) == DeleteMessage(9, "K", ["5"])
    assert decode_message(b"T" + struct.pack(">IB", 2, 1) + struct.pack(">II", 10, 11)) == TruncateMessage(1, (10, 11))
    assert decode_message(b"Y" + struct.pack(">I", 16400) + b"public\0mood\0") == TypeMessage(16400, "public", "mood")
    msg = decode_message(b"M" + struct.pack(">BQ", 1, 4242) + b"audit\0" + struct.pack(">I", 3) + b"xyz")
    assert msg == LogicalMessage(True, 4242, "audit", b"xyz")


def test_unknown_message_type_names_it() -> None:
    with pytest.raises(DecodeError, match="'S'"):
        decode_message(b"S\0\0\0\1")
