"""Typed, totally ordered source positions, one class per connector.

Every position gives ``seq()``: four non-negative int64 numbers compared left to right. The ingest
job stores it as ``_seq array<bigint>`` and applies an event only when its ``_seq`` is greater than
the stored one. Positions compare by that key alone (``a < b`` iff ``a.seq() < b.seq()``); fields
that do not take part in the order (timestamps, transaction ids) are carried for offsets only.

A snapshot row takes the position the snapshot was read at and orders *before* a streamed event at
that same position (phase 0 = snapshot, 1 = streaming), so every change after the snapshot wins.

==========  ========================================================  =============================
connector   order                                                     seq()
==========  ========================================================  =============================
postgresql  (last commit LSN or else event LSN, event LSN, phase, index) the same four numbers
mysql       (binlog file index, event position, row, phase)           the same four numbers
sqlserver   (commit_lsn, change_lsn, event_serial_no, phase)          bit-packed (LSNs are 80 bits)
oracle      (commit_scn, scn, rs_id, ssn, phase)                      bit-packed (rs_id is 72 bits)
==========  ========================================================  =============================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from lakecdc.events.position_text import (
    binlog_file_index,
    lsn_from_text,
    lsn_to_text,
    oracle_rs_id_to_int,
    pack_seq,
    sqlserver_lsn_from_text,
    sqlserver_lsn_to_text,
)

__all__ = [
    "MySqlPosition",
    "OraclePosition",
    "Position",
    "PostgresPosition",
    "SqlServerPosition",
    "binlog_file_index",
    "lsn_from_text",
    "lsn_to_text",
    "pack_seq",
    "position_from_offset",
    "position_from_source",
    "position_type",
    "sqlserver_lsn_from_text",
    "sqlserver_lsn_to_text",
]

SNAPSHOT_PHASE = 0
STREAMING_PHASE = 1


class _Ordered:
    """Order and equality by ``seq()``; subclasses are dataclasses with eq=False.

    Positions are values: nothing assigns to one after it is made (``dataclasses.replace`` makes
    another). They are not ``frozen``, because a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``: a position is made per record, and that was 1 µs of it (the
    streaming capture's loop, which also makes the ``ChangeRecord``, spent 15 % of its time there)."""

    __slots__ = ()

    def seq(self) -> tuple[int, int, int, int]:
        raise NotImplementedError

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, _Ordered) or type(other) is not type(self):
            return NotImplemented
        return self.seq() < other.seq()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, _Ordered) or type(other) is not type(self):
            return NotImplemented
        return self.seq() <= other.seq()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, _Ordered) or type(other) is not type(self):
            return NotImplemented
        return self.seq() > other.seq()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, _Ordered) or type(other) is not type(self):
            return NotImplemented
        return self.seq() >= other.seq()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.seq() == other.seq()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.seq()))


def _snapshot_flag(value: Any) -> bool:
    """Debezium's source ``snapshot`` (Enum text or boolean) -> is this a snapshot read?"""
    if isinstance(value, bool):
        return value
    if value is not None and not isinstance(value, str):
        raise ValueError(f"source.snapshot: expected text or a boolean, got {_shown(value)}")
    return value not in (None, "false", "False")


# Every number of a position is stored in a bigint of ``_seq`` (or packed into them): a value
# outside 0..2^63-1, a fraction or a boolean read from an event is refused, naming the field,
# instead of being truncated (int(1.5)), coerced (int(True)) or overflowing Arrow later.
_LIMIT = 1 << 63


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _number(value: Any, where: str) -> int | None:
    """A non-negative integer of an event (JSON number, or decimal digits as Debezium's Oracle
    and SQL Server connectors write SCNs and serial numbers); None stays None."""
    if type(value) is int and 0 <= value < _LIMIT or value is None:
        return value
    if type(value) is int:
        number = value
    elif type(value) is str and value.isascii() and value.isdigit():
        number = int(value)
    else:
        raise ValueError(f"{where}: expected a non-negative integer, got {_shown(value)}")
    if not 0 <= number < _LIMIT:
        raise ValueError(f"{where}: {number} is outside 0..2^63-1")
    return number


def _source_int(source: Mapping[str, Any], name: str) -> int | None:
    return _number(source.get(name), f"source.{name}")


def _source_text(source: Mapping[str, Any], name: str) -> str | None:
    value = source.get(name)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"source.{name}: expected text, got {_shown(value)}")
    return value


def _sequence_pair(text: Any) -> tuple[int | None, int | None]:
    """Debezium PostgreSQL ``source.sequence``: ``["<last commit LSN>","<event LSN>"]``, either null."""
    if not isinstance(text, str):
        raise ValueError(f"source.sequence: expected text, got {_shown(text)}")
    try:
        pair = json.loads(text)
    except ValueError:
        raise ValueError(f"source.sequence: not JSON: {text[:60]!r}") from None
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError(f"source.sequence: expected a JSON array of two LSNs, got {text[:60]!r}")
    return _number(pair[0], "source.sequence[0]"), _number(pair[1], "source.sequence[1]")


# ---- PostgreSQL ----------------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class PostgresPosition(_Ordered):
    """A PostgreSQL WAL position.

    ``commit_lsn`` is Debezium's *last commit LSN* (``sequence[0]``, offset ``lsn_commit``): the
    commit LSN of the last transaction completed before this event; it only grows from one
    transaction to the next, so (commit_lsn, lsn) follows commit order even for interleaved
    transactions. ``lsn`` is the event's own LSN (``source.lsn``, ``sequence[1]``). ``index``
    separates events sharing one LSN (a primary-key change emits delete + create at the same LSN).

    Offset shape (Debezium ``PostgresOffsetContext``)::

        {"lsn_proc": 99090472, "lsn_commit": 99090472, "lsn": 99090472, "txId": 1261,
         "ts_usec": 1795336045065290}
    """

    connector: ClassVar[str] = "postgresql"

    lsn: int
    commit_lsn: int | None = None
    lsn_proc: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    xmin: int | None = None
    snapshot: bool = False
    last_snapshot_record: bool = False
    index: int = 0
    message_type: str | None = None  # offset "messageType": BEGIN, COMMIT, INSERT, ... last processed

    def seq(self) -> tuple[int, int, int, int]:
        phase = SNAPSHOT_PHASE if self.snapshot else STREAMING_PHASE
        # Without a known last commit (snapshot rows; the first transaction after a start without
        # an offset) the event LSN stands in: every later transaction's last commit LSN is at
        # least the commit LSN of this one, which is at least this event's LSN.
        commit = self.lsn if self.commit_lsn is None else self.commit_lsn
        return (commit, self.lsn, phase, self.index)

    def source_sequence(self) -> str:
        """Debezium's ``source.sequence`` text, e.g. ``["99090472","99091416"]``."""
        commit = "null" if self.commit_lsn is None else f'"{self.commit_lsn}"'
        return f'[{commit},"{self.lsn}"]'

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.lsn_proc is not None:
            out["lsn_proc"] = self.lsn_proc
        if self.commit_lsn is not None:
            out["lsn_commit"] = self.commit_lsn
        out["lsn"] = self.lsn
        if self.tx_id is not None:
            out["txId"] = self.tx_id
        if self.ts_usec is not None:
            out["ts_usec"] = self.ts_usec
        if self.xmin is not None:
            out["xmin"] = self.xmin
        if self.snapshot:
            out["snapshot"] = True
            out["last_snapshot_record"] = self.last_snapshot_record
        if self.message_type is not None:
            out["messageType"] = self.message_type
        return out

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any]) -> PostgresPosition:
        if "lsn" not in offset:
            raise ValueError(f"PostgreSQL offset has no 'lsn': {dict(offset)}")
        # Debezium's loader falls back to lsn_proc when lsn_commit is absent, for resuming; the
        # position keeps them apart so that offsets round-trip exactly.
        return cls(
            lsn=int(offset["lsn"]),
            commit_lsn=_opt_int(offset.get("lsn_commit")),
            lsn_proc=_opt_int(offset.get("lsn_proc")),
            tx_id=_opt_int(offset.get("txId")),
            ts_usec=_opt_int(offset.get("ts_usec")),
            xmin=_opt_int(offset.get("xmin")),
            snapshot=bool(offset.get("snapshot", False)),
            last_snapshot_record=bool(offset.get("last_snapshot_record", False)),
            message_type=offset.get("messageType"),
        )

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> PostgresPosition:
        commit_lsn: int | None = None
        lsn = _source_int(source, "lsn")
        seq_text = source.get("sequence")
        if seq_text:
            commit_lsn, seq_lsn = _sequence_pair(seq_text)
            lsn = seq_lsn if seq_lsn is not None else lsn
        if lsn is None:
            raise ValueError(f"PostgreSQL source block has neither 'lsn' nor 'sequence': {dict(source)}")
        ts_us = _source_int(source, "ts_us")
        ts_ms = _source_int(source, "ts_ms")
        return cls(
            lsn=lsn,
            commit_lsn=commit_lsn,
            tx_id=_source_int(source, "txId"),
            ts_usec=ts_us if ts_us is not None else _ms_to_us(ts_ms),
            xmin=_source_int(source, "xmin"),
            snapshot=_snapshot_flag(source.get("snapshot")),
            last_snapshot_record=source.get("snapshot") == "last",
        )


# ---- MySQL / MariaDB -----------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class MySqlPosition(_Ordered):
    """A MySQL/MariaDB binlog position of one row change.

    ``pos`` is the position of the row event (``source.pos``), ``row`` the row within it.
    ``restart_pos`` and ``event`` are what Debezium stores in the offset to resume: the position of
    the transaction's first event and how many events of it to skip. ``gtid_set`` is the executed
    GTID set at this point (offset ``gtids``); ``gtid`` the event's own transaction GTID.

    Offset shape (Debezium ``MySqlOffsetContext``)::

        {"file": "mysql-bin.000003", "pos": 154, "row": 1, "event": 2, "server_id": 223344,
         "gtids": "0-1-100", "ts_sec": 1465581}
    """

    connector: ClassVar[str] = "mysql"

    file: str
    pos: int
    row: int = 0
    event: int = 0
    restart_pos: int | None = None
    server_id: int | None = None
    gtid: str | None = None
    gtid_set: str | None = None
    ts_sec: int | None = None
    snapshot: bool = False

    def seq(self) -> tuple[int, int, int, int]:
        phase = SNAPSHOT_PHASE if self.snapshot else STREAMING_PHASE
        return (binlog_file_index(self.file), self.pos, self.row, phase)

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "pos": self.restart_pos if self.restart_pos is not None else self.pos,
        }
        if self.event:
            out["event"] = self.event
        if self.row:
            out["row"] = self.row
        if self.server_id is not None:
            out["server_id"] = self.server_id
        if self.gtid_set:
            out["gtids"] = self.gtid_set
        if self.ts_sec is not None:
            out["ts_sec"] = self.ts_sec
        if self.snapshot:
            out["snapshot"] = True
        # The event position is ours (Debezium keeps it only in memory); stored so the round trip is exact.
        if self.restart_pos is not None:
            out["event_pos"] = self.pos
        return out

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any]) -> MySqlPosition:
        if "file" not in offset or "pos" not in offset:
            raise ValueError(f"MySQL offset needs 'file' and 'pos': {dict(offset)}")
        event_pos = offset.get("event_pos")
        return cls(
            file=str(offset["file"]),
            pos=int(event_pos) if event_pos is not None else int(offset["pos"]),
            row=int(offset.get("row", 0)),
            event=int(offset.get("event", 0)),
            restart_pos=int(offset["pos"]) if event_pos is not None else None,
            server_id=_opt_int(offset.get("server_id")),
            gtid_set=offset.get("gtids"),
            ts_sec=_opt_int(offset.get("ts_sec")),
            snapshot=bool(offset.get("snapshot", False)),
        )

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> MySqlPosition:
        file, pos = _source_text(source, "file"), _source_int(source, "pos")
        if file is None or pos is None:
            raise ValueError(f"MySQL source block needs 'file' and 'pos': {dict(source)}")
        if not binlog_file_index(file) < _LIMIT:
            raise ValueError(f"source.file: binlog file number of {file[:60]!r} is 2^63 or more")
        ts_ms = _source_int(source, "ts_ms")
        return cls(
            file=file,
            pos=pos,
            row=_source_int(source, "row") or 0,
            server_id=_source_int(source, "server_id"),
            gtid=_source_text(source, "gtid"),
            ts_sec=ts_ms // 1000 if ts_ms is not None else None,
            snapshot=_snapshot_flag(source.get("snapshot")),
        )


# ---- SQL Server ----------------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class SqlServerPosition(_Ordered):
    """A SQL Server CDC position: (commit_lsn, change_lsn, event_serial_no), LSNs as 80-bit ints.

    Offset shape (Debezium ``SqlServerOffsetContext``)::

        {"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003",
         "event_serial_no": 1}
    """

    connector: ClassVar[str] = "sqlserver"

    commit_lsn: int
    change_lsn: int | None = None
    event_serial_no: int = 0
    snapshot: bool = False
    snapshot_completed: bool = False

    def seq(self) -> tuple[int, int, int, int]:
        phase = SNAPSHOT_PHASE if self.snapshot else STREAMING_PHASE
        return pack_seq(
            [(self.commit_lsn, 80), (self.change_lsn or 0, 80), (self.event_serial_no, 63), (phase, 1)]
        )

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit_lsn": sqlserver_lsn_to_text(self.commit_lsn)}
        if self.change_lsn is not None:
            out["change_lsn"] = sqlserver_lsn_to_text(self.change_lsn)
        out["event_serial_no"] = self.event_serial_no
        if self.snapshot:
            out["snapshot"] = True
            out["snapshot_completed"] = self.snapshot_completed
        return out

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any]) -> SqlServerPosition:
        if offset.get("commit_lsn") is None:
            raise ValueError(f"SQL Server offset has no 'commit_lsn': {dict(offset)}")
        change = offset.get("change_lsn")
        return cls(
            commit_lsn=sqlserver_lsn_from_text(str(offset["commit_lsn"])),
            change_lsn=sqlserver_lsn_from_text(str(change)) if change else None,
            event_serial_no=int(offset.get("event_serial_no") or 0),
            snapshot=bool(offset.get("snapshot", False)),
            snapshot_completed=bool(offset.get("snapshot_completed", False)),
        )

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> SqlServerPosition:
        commit = _source_text(source, "commit_lsn")
        if not commit:
            raise ValueError(f"SQL Server source block has no 'commit_lsn': {dict(source)}")
        change = _source_text(source, "change_lsn")
        return cls(
            commit_lsn=sqlserver_lsn_from_text(commit),
            change_lsn=sqlserver_lsn_from_text(change) if change else None,
            # The seeds render event_serial_no as a string ("1"); Debezium's schema says int64.
            event_serial_no=_source_int(source, "event_serial_no") or 0,
            snapshot=_snapshot_flag(source.get("snapshot")),
        )


# ---- Oracle --------------------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class OraclePosition(_Ordered):
    """An Oracle LogMiner position: (commit_scn, scn, rs_id, ssn).

    Offset shape (Debezium ``OracleOffsetContext``)::

        {"scn": "289613", "commit_scn": "289620", "rs_id": " 0x0000a5.00012345.0124 ", "ssn": 1}
    """

    connector: ClassVar[str] = "oracle"

    scn: int
    commit_scn: int | None = None
    rs_id: str | None = None
    ssn: int = 0
    tx_id: str | None = None
    snapshot: bool = False

    def seq(self) -> tuple[int, int, int, int]:
        phase = SNAPSHOT_PHASE if self.snapshot else STREAMING_PHASE
        commit = self.commit_scn if self.commit_scn is not None else self.scn
        return pack_seq(
            [(commit, 64), (self.scn, 64), (oracle_rs_id_to_int(self.rs_id), 80), (self.ssn, 43), (phase, 1)]
        )

    def to_offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scn": str(self.scn)}
        if self.commit_scn is not None:
            out["commit_scn"] = str(self.commit_scn)
        if self.rs_id is not None:
            out["rs_id"] = self.rs_id
        out["ssn"] = self.ssn
        if self.tx_id is not None:
            out["txId"] = self.tx_id
        if self.snapshot:
            out["snapshot"] = True
        return out

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any]) -> OraclePosition:
        if offset.get("scn") is None:
            raise ValueError(f"Oracle offset has no 'scn': {dict(offset)}")
        return cls(
            scn=int(offset["scn"]),
            commit_scn=_opt_int(offset.get("commit_scn")),
            rs_id=offset.get("rs_id"),
            ssn=int(offset.get("ssn") or 0),
            tx_id=offset.get("txId"),
            snapshot=bool(offset.get("snapshot", False)),
        )

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> OraclePosition:
        scn = _source_int(source, "scn")
        if scn is None:
            raise ValueError(f"Oracle source block has no 'scn': {dict(source)}")
        return cls(
            scn=scn,
            commit_scn=_source_int(source, "commit_scn"),
            rs_id=_source_text(source, "rs_id"),
            ssn=_source_int(source, "ssn") or 0,
            tx_id=_source_text(source, "txId"),
            snapshot=_snapshot_flag(source.get("snapshot")),
        )


Position = Union[PostgresPosition, MySqlPosition, SqlServerPosition, OraclePosition]

POSITION_TYPES: dict[str, type[PostgresPosition | MySqlPosition | SqlServerPosition | OraclePosition]] = {
    "postgresql": PostgresPosition,
    "postgres": PostgresPosition,
    "mysql": MySqlPosition,
    "mariadb": MySqlPosition,
    "sqlserver": SqlServerPosition,
    "oracle": OraclePosition,
}


def position_type(connector: str) -> type[Position]:
    try:
        return POSITION_TYPES[connector.lower()]
    except KeyError:
        raise ValueError(
            f"unknown connector {connector!r} for positions; known: {sorted(set(POSITION_TYPES))}"
        ) from None


def position_from_source(connector: str, source: Mapping[str, Any]) -> Position:
    """Recover the position of an event from its ``source`` block (ours or Debezium's).

    >>> position_from_source("postgresql", {"sequence": '["99091160","99091416"]', "lsn": 99091416,
    ...     "snapshot": "false"}).seq()
    (99091160, 99091416, 1, 0)

    Raises ValueError naming the field when the block is not one the connector writes.
    """
    if not isinstance(connector, str):
        raise ValueError(f"source.connector: expected text, got {_shown(connector)}")
    if not isinstance(source, Mapping):
        raise ValueError(f"source: expected an object, got {_shown(source)}")
    return position_type(connector).from_source(source)


def position_from_offset(connector: str, offset: Mapping[str, Any]) -> Position:
    return position_type(connector).from_offset(offset)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _ms_to_us(value: Any) -> int | None:
    return None if value is None else int(value) * 1000
