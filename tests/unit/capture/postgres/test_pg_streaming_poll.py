"""A poll of the PostgreSQL stream ends at its deadline, whatever the server keeps sending.

Between polls the coordinator emits heartbeats, commits offsets and checks for a stop. A busy table
outside the capture sends a message after every message (its changes are filtered here, so the
batch never fills): a poll that drained the socket until it ran dry never ended, and a capture with
heartbeats on an idle captured table wrote nothing at all (found under load in the suite).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lakecdc.capture.postgres.replication import Keepalive, XLogData
from lakecdc.capture.postgres.streaming import PostgresStreamingSource


class EndlessStream:
    """A replication connection that always has one more message buffered."""

    def __init__(self, keepalives: bool) -> None:
        self.keepalives = keepalives
        self.reads = 0

    def read(self, timeout: float) -> XLogData | Keepalive:
        self.reads += 1
        if self.keepalives and self.reads % 2:
            return Keepalive(wal_end=self.reads, reply_requested=False)
        return XLogData(data_start=self.reads, wal_end=self.reads, payload=memoryview(b"I"))


class NoBeat:
    def due(self, now: float) -> bool:
        return False


def _source(stream: EndlessStream) -> PostgresStreamingSource:
    # Only what _poll touches: the constructor needs a database connection.
    source = object.__new__(PostgresStreamingSource)
    attributes: dict[str, Any] = {
        "_repl": stream, "_handle": lambda lsn, data, out: None, "_on_keepalive": lambda message: None,
        "_signals": None, "_workers": None, "_heartbeat": NoBeat(), "_last_data": 0.0, "_last_status": time.monotonic(),
        "_status_interval": 3600.0,
    }
    for name, value in attributes.items():
        setattr(source, name, value)
    return source


def test_a_poll_ends_at_its_deadline_while_messages_keep_coming() -> None:
    for keepalives in (False, True):
        stream = EndlessStream(keepalives)
        source = _source(stream)
        out: list[Any] = []
        failures: list[BaseException] = []

        def run() -> None:
            try:
                source._poll(out, 1000, 0.2)
            except BaseException as exc:  # noqa: BLE001 - asserted below, in the test's thread
                failures.append(exc)

        poll = threading.Thread(target=run, daemon=True)
        started = time.monotonic()
        poll.start()
        poll.join(30)
        assert not poll.is_alive(), f"the poll went on past its deadline ({stream.reads} reads)"
        assert not failures, failures
        assert time.monotonic() - started < 30 and out == []
        assert stream.reads > 1  # it did drain what was buffered before the deadline
