"""Logical replication over libpq (psycopg 3's ``pq`` layer) with our own CopyBoth framing.

psycopg 3 has no replication API, but a ``replication=database`` connection accepts the
replication commands, and ``START_REPLICATION`` switches it to COPY BOTH mode where each
CopyData message is one of (big-endian integers)::

    server -> client  b'w' Int64 dataStart  Int64 walEnd  Int64 sendTime  payload   (XLogData)
    server -> client  b'k' Int64 walEnd     Int64 sendTime  Byte replyRequested    (keepalive)
    client -> server  b'r' Int64 written  Int64 flushed  Int64 applied  Int64 clock  Byte reply

The client's "flushed" LSN is what PostgreSQL may discard WAL up to: lakecdc sends only a
position whose events the sink has made durable (see coordinator.py).
"""

from __future__ import annotations

import logging
import select
import struct
import time
from dataclasses import dataclass
from typing import Final

import psycopg
from psycopg import pq

from lakecdc.capture.postgres.decoder import PG_EPOCH_OFFSET_US
from lakecdc.capture.postgres.errors import (
    PublicationMissingError,
    ReplicationConnectionLost,
    raise_for_replication_error,
)

log = logging.getLogger(__name__)

_XLOG_HEAD: Final = struct.Struct(">QQq")
_KEEPALIVE: Final = struct.Struct(">QqB")
_STATUS: Final = struct.Struct(">cQQQqB")


def _text(message: str | bytes) -> str:
    """libpq error text (psycopg gives str or bytes depending on the call)."""
    return message.decode(errors="replace") if isinstance(message, bytes) else message


def format_lsn(lsn: int) -> str:
    """``0x16B3748`` -> ``'0/16B3748'`` (PostgreSQL's textual LSN)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


@dataclass(slots=True, frozen=True)
class SlotCreated:
    slot_name: str
    consistent_point: int
    snapshot_name: str | None


@dataclass(slots=True)
class XLogData:
    data_start: int
    wal_end: int
    payload: memoryview


@dataclass(slots=True)
class Keepalive:
    wal_end: int
    reply_requested: bool


class ReplicationConnection:
    """One ``replication=database`` libpq connection.

    >>> conn = ReplicationConnection.connect("host=... dbname=shop user=cdc replication=database")
    >>> conn.start("lakecdc_slot", 0, {"proto_version": "1", "publication_names": "pub"})
    >>> msg = conn.read(timeout=1.0)   # XLogData, Keepalive or None
    """

    def __init__(self, pgconn: pq.abc.PGconn) -> None:
        self._pgconn = pgconn
        self._streaming = False
        self._pending: list[bytes] = []
        self._skipped_publication: str | None = None
        pgconn.notice_handler = self._on_notice

    @classmethod
    def connect(cls, conninfo: str) -> "ReplicationConnection":
        pgconn = pq.PGconn.connect(conninfo.encode())
        if pgconn.status != pq.ConnStatus.OK:
            message = _text(pgconn.get_error_message())
            pgconn.finish()
            raise_for_replication_error(message, during="connecting for replication")
        return cls(pgconn)

    # -- commands ---------------------------------------------------------------------------
    def command(self, sql: str) -> list[tuple[str | None, ...]]:
        """Run one replication command and return its rows as text."""
        result = self._pgconn.exec_(sql.encode())
        if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
            message = _text(result.get_error_message())
            raise_for_replication_error(message, during=sql.split(" (")[0])
        rows = []
        for row in range(result.ntuples):
            rows.append(
                tuple(
                    None if (v := result.get_value(row, col)) is None else v.decode()
                    for col in range(result.nfields)
                )
            )
        return rows

    def create_slot(self, slot_name: str, export_snapshot: bool, failover: bool = False) -> SlotCreated:
        """Create a pgoutput slot; with ``export_snapshot`` the returned snapshot name stays valid
        until the next command on this connection (the snapshot reader imports it meanwhile).
        ``failover`` (``slot.failover``) makes it a failover slot where the server has them."""
        option = "EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"
        if failover and self._can_create_failover_slot():
            # PostgreSQL 17's option list; the old keywords cannot be combined with it
            option = f"(SNAPSHOT '{'export' if export_snapshot else 'nothing'}', FAILOVER)"
        rows = self.command(f'CREATE_REPLICATION_SLOT "{slot_name}" LOGICAL pgoutput {option}')
        _, consistent_point, snapshot_name, _ = rows[0]
        return SlotCreated(slot_name, parse_lsn(consistent_point or "0/0"), snapshot_name)

    def _can_create_failover_slot(self) -> bool:
        """Debezium's rule: failover slots need PostgreSQL 17+ and a primary; otherwise the slot is
        created without failover (Debezium logs that at debug; lakecdc warns, as it was asked for)."""
        if self._pgconn.server_version < 170000:
            log.warning("slot.failover=true: PostgreSQL %s has no failover slots (17 or newer); creating a "
                        "slot without failover", self._pgconn.server_version // 10000)
            return False
        if self.command("SELECT pg_is_in_recovery()")[0][0] == "t":
            log.warning("slot.failover=true: a failover slot cannot be created on a standby; creating a slot "
                        "without failover")
            return False
        return True

    def start(self, slot_name: str, start_lsn: int, options: dict[str, str]) -> None:
        opts = ", ".join(f"{k} '{v}'" for k, v in options.items())
        sql = f'START_REPLICATION SLOT "{slot_name}" LOGICAL {format_lsn(start_lsn)} ({opts})'
        self._pgconn.send_query(sql.encode())
        result = self._pgconn.get_result()
        if result is None or result.status != pq.ExecStatus.COPY_BOTH:
            message = result.get_error_message() if result else self._pgconn.get_error_message()
            raise_for_replication_error(_text(message), during="START_REPLICATION")
        self._pgconn.nonblocking = 1
        self._streaming = True

    # -- streaming --------------------------------------------------------------------------
    def _on_notice(self, notice: pq.abc.PGresult) -> None:
        # PostgreSQL 18's pgoutput only WARNs about a publication missing at a point in the WAL
        # and then silently skips that WAL's changes (older versions fail with an ERROR).
        primary = notice.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b""
        if primary.startswith(b"skipped loading publication"):
            self._skipped_publication = _text(primary).partition('"')[2].rstrip('"')

    def _raise_publication_skipped(self) -> None:
        name = self._skipped_publication
        raise PublicationMissingError(
            f"publication '{name}' was dropped while capture streamed: PostgreSQL skips the changes "
            f"made while it did not exist (warning 'skipped loading publication \"{name}\"'), so they "
            "cannot be streamed; nothing after the last acknowledged position was acknowledged. "
            f"Recreate it (CREATE PUBLICATION \"{name}\" ..., or publication.autocreate.mode=filtered|"
            "all_tables recreates it at start) and re-snapshot once with snapshot.mode=always"
        )

    def read(self, timeout: float) -> XLogData | Keepalive | None:
        """The next message, waiting at most ``timeout`` seconds; None when nothing arrived."""
        pgconn = self._pgconn
        try:  # a try block costs (next to) nothing per message
            nbytes, data = pgconn.get_copy_data(1)
            if nbytes == 0:
                ready, _, _ = select.select([pgconn.socket], [], [], timeout)
                if not ready:
                    return None
                pgconn.consume_input()
                nbytes, data = pgconn.get_copy_data(1)
                if nbytes == 0:
                    return None
        except psycopg.OperationalError as exc:  # socket closed under us, or a broken message
            raise ReplicationConnectionLost(str(exc)) from exc
        if self._skipped_publication is not None:  # before handling anything decoded after it
            self._raise_publication_skipped()
        if nbytes < 0:
            self._raise_copy_end()
        kind = data[0]
        if kind == 0x77:  # 'w'
            start, end, _ = _XLOG_HEAD.unpack_from(data, 1)
            return XLogData(start, end, data[25:])
        if kind == 0x6B:  # 'k'
            end, _, reply = _KEEPALIVE.unpack_from(data, 1)
            return Keepalive(end, bool(reply))
        return None

    def send_status(self, received_lsn: int, flushed_lsn: int, reply: bool = False,
                    timeout: float | None = None) -> bool:
        """Standby status update: ``flushed_lsn`` is the position PostgreSQL may release.

        False when the message could not be written to the server within ``timeout`` seconds (the
        server does not read: ``lsn.flush.timeout.ms``); libpq keeps it and sends it with the next."""
        now_us = int(time.time() * 1_000_000) - PG_EPOCH_OFFSET_US
        message = _STATUS.pack(b"r", received_lsn, flushed_lsn, flushed_lsn, now_us, int(reply))
        pgconn = self._pgconn
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if pgconn.put_copy_data(message) != 1:
                raise ReplicationConnectionLost(_text(pgconn.get_error_message()))
            while pgconn.flush() == 1:
                wait = 1.0 if deadline is None else deadline - time.monotonic()
                if wait <= 0:
                    return False
                select.select([], [pgconn.socket], [], min(wait, 1.0))
        except psycopg.OperationalError as exc:
            raise ReplicationConnectionLost(str(exc)) from exc
        return True

    def _raise_copy_end(self) -> None:
        result = self._pgconn.get_result()
        message = ""
        if result is not None:
            message = _text(result.get_error_message())
        if not message:
            message = _text(self._pgconn.get_error_message())
        self._streaming = False
        if not message.strip() or message.strip() == "no error details available":
            # The walsender ends COPY without an error only when the server shuts down (a
            # restart, a switchover): reconnect and resume, like a dropped connection.
            raise ReplicationConnectionLost("the server ended the replication stream (shutting down or restarting)")
        raise_for_replication_error(message, during="streaming")

    def close(self) -> None:
        if not self._pgconn.status == pq.ConnStatus.BAD:
            try:
                if self._streaming:
                    self._pgconn.put_copy_end()
                    self._pgconn.flush()
            except psycopg.OperationalError:
                pass
        self._pgconn.finish()
