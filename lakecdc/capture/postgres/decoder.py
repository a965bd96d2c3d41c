"""pgoutput (protocol version 1) message decoder.

Each XLogData payload from the replication stream holds exactly one pgoutput message; its first
byte says which. This module turns those bytes into small typed objects and nothing else: no
catalog look-ups, no value conversion (tuple columns stay as the text PostgreSQL sent, so the
same value converter serves COPY snapshot rows and streamed rows).

Wire layout (all integers big-endian; "String" is NUL-terminated UTF-8), e.g. an Insert::

    b'I' Int32 relid  b'N'  TupleData

    TupleData = Int16 ncols, then per column one of
        b'n'                      NULL
        b'u'                      unchanged TOASTed value (not sent)
        b't' Int32 len  bytes     text representation
        b'b' Int32 len  bytes     binary representation (not requested by lakecdc)

Example: ``49 00004001 4e 0002 74 00000001 31 6e`` decodes to
``InsertMessage(relation_id=16385, new=['1', None])``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from lakecdc.errors import SourceTerminalError

#: Marker placed in a decoded tuple for a TOASTed column whose value PostgreSQL did not resend.
UNCHANGED: Final = object()

# PostgreSQL timestamps count microseconds from 2000-01-01 UTC; Unix epoch offset in µs.
PG_EPOCH_OFFSET_US: Final = 946_684_800_000_000

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">BQQq")
_RELATION_HEAD = struct.Struct(">I")
_COLUMN_TAIL = struct.Struct(">Ii")
_MESSAGE_HEAD = struct.Struct(">BQ")

TupleValues = list  # list[str | None | UNCHANGED]


class DecodeError(SourceTerminalError):
    """A pgoutput message could not be parsed (unexpected protocol version or corrupt data)."""


@dataclass(slots=True, frozen=True)
class BeginMessage:
    final_lsn: int
    commit_ts_us: int  # Unix epoch microseconds
    xid: int


@dataclass(slots=True, frozen=True)
class CommitMessage:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True, frozen=True)
class RelationColumn:
    name: str
    type_oid: int
    typmod: int
    is_key: bool


@dataclass(slots=True, frozen=True)
class RelationMessage:
    relation_id: int
    namespace: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[RelationColumn, ...]


@dataclass(slots=True, frozen=True)
class TypeMessage:
    type_oid: int
    namespace: str
    name: str


@dataclass(slots=True, frozen=True)
class OriginMessage:
    origin_lsn: int
    name: str


@dataclass(slots=True, frozen=True)
class InsertMessage:
    relation_id: int
    new: TupleValues


@dataclass(slots=True, frozen=True)
class UpdateMessage:
    relation_id: int
    #: 'K' (old key columns only), 'O' (whole old row, REPLICA IDENTITY FULL) or '' (no old tuple)
    old_kind: str
    old: TupleValues | None
    new: TupleValues


@dataclass(slots=True, frozen=True)
class DeleteMessage:
    relation_id: int
    old_kind: str
    old: TupleValues


@dataclass(slots=True, frozen=True)
class TruncateMessage:
    options: int  # bit 1 = CASCADE, bit 2 = RESTART IDENTITY
    relation_ids: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class LogicalMessage:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


PgOutputMessage = (
    BeginMessage
    | CommitMessage
    | RelationMessage
    | TypeMessage
    | OriginMessage
    | InsertMessage
    | UpdateMessage
    | DeleteMessage
    | TruncateMessage
    | LogicalMessage
)


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    end = data.index(0, pos)
    return data[pos:end].decode("utf-8"), end + 1


def decode_tuple(data: bytes, pos: int) -> tuple[TupleValues, int]:
    """Decode a TupleData block starting at ``pos``; returns the values and the next offset."""
    (ncols,) = _INT16.unpack_from(data, pos)
    pos += 2
    values: TupleValues = [None] * ncols
    unpack_len = _INT32.unpack_from
    for i in range(ncols):
        kind = data[pos]
        pos += 1
        if kind == 0x74:  # 't'
            (length,) = unpack_len(data, pos)
            pos += 4
            values[i] = data[pos : pos + length].decode("utf-8")
            pos += length
        elif kind == 0x6E:  # 'n'
            pass
        elif kind == 0x75:  # 'u'
            values[i] = UNCHANGED
        elif kind == 0x62:  # 'b'
            (length,) = unpack_len(data, pos)
            pos += 4
            values[i] = bytes(data[pos : pos + length])
            pos += length
        else:
            raise DecodeError(f"pgoutput tuple column {i} has unknown kind byte {kind!r}")
    return values, pos


def decode_message(data: bytes) -> PgOutputMessage:
    """Decode one pgoutput message (the payload of one XLogData)."""
    tag = data[0]
    if tag == 0x49:  # 'I'
        (relid,) = _UINT32.unpack_from(data, 1)
        values, _ = decode_tuple(data, 6)
        return InsertMessage(relid, values)
    if tag == 0x55:  # 'U'
        (relid,) = _UINT32.unpack_from(data, 1)
        marker = data[5]
        if marker == 0x4E:  # 'N'
            new, _ = decode_tuple(data, 6)
            return UpdateMessage(relid, "", None, new)
        old, pos = decode_tuple(data, 6)
        new, _ = decode_tuple(data, pos + 1)  # skip the 'N' marker
        return UpdateMessage(relid, chr(marker), old, new)
    if tag == 0x44:  # 'D'
        (relid,) = _UINT32.unpack_from(data, 1)
        old, _ = decode_tuple(data, 6)
        return DeleteMessage(relid, chr(data[5]), old)
    if tag == 0x42:  # 'B'
        final_lsn, ts, xid = _BEGIN.unpack_from(data, 1)
        return BeginMessage(final_lsn, ts + PG_EPOCH_OFFSET_US, xid)
    if tag == 0x43:  # 'C'
        flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(data, 1)
        return CommitMessage(flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)
    if tag == 0x52:  # 'R'
        return _decode_relation(data)
    if tag == 0x59:  # 'Y'
        (oid,) = _UINT32.unpack_from(data, 1)
        namespace, pos = _read_string(data, 5)
        name, _ = _read_string(data, pos)
        return TypeMessage(oid, namespace, name)
    if tag == 0x4F:  # 'O'
        (lsn,) = struct.unpack_from(">Q", data, 1)
        name, _ = _read_string(data, 9)
        return OriginMessage(lsn, name)
    if tag == 0x54:  # 'T'
        (count,) = _UINT32.unpack_from(data, 1)
        options = data[5]
        relids = struct.unpack_from(f">{count}I", data, 6)
        return TruncateMessage(options, tuple(relids))
    if tag == 0x4D:  # 'M'
        flags, lsn = _MESSAGE_HEAD.unpack_from(data, 1)
        prefix, pos = _read_string(data, 10)
        (length,) = _UINT32.unpack_from(data, pos)
        content = bytes(data[pos + 4 : pos + 4 + length])
        return LogicalMessage(bool(flags & 1), lsn, prefix, content)
    raise DecodeError(
        f"unsupported pgoutput message type {chr(tag)!r}; lakecdc requests proto_version 1"
    )


def _decode_relation(data: bytes) -> RelationMessage:
    (relid,) = _RELATION_HEAD.unpack_from(data, 1)
    namespace, pos = _read_string(data, 5)
    name, pos = _read_string(data, pos)
    replica_identity = chr(data[pos])
    (ncols,) = _INT16.unpack_from(data, pos + 1)
    pos += 3
    columns = []
    for _ in range(ncols):
        flags = data[pos]
        col_name, pos = _read_string(data, pos + 1)
        type_oid, typmod = _COLUMN_TAIL.unpack_from(data, pos)
        pos += 8
        columns.append(RelationColumn(col_name, type_oid, typmod, bool(flags & 1)))
    return RelationMessage(relid, namespace, name, replica_identity, tuple(columns))
