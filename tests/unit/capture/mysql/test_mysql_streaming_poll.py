"""A poll of the MySQL/MariaDB binlog ends at its deadline, whatever the reader keeps handing over.

Between polls the coordinator emits heartbeats, commits offsets and checks for a stop. Binlog events
that add no record here (other tables' transactions) can keep coming faster than they are handled;
once a record was in the batch, the poll drained the reader without looking at the clock.
"""

from __future__ import annotations

import threading
from typing import Any

from lakecdc.capture.mysql.streaming import MySqlStreamingSource


class EndlessReader:
    """The binlog reader's queue, never empty."""

    def __init__(self) -> None:
        self.reads = 0

    def get(self, timeout: float) -> tuple[int, int]:
        return self.get_nowait()

    def get_nowait(self) -> tuple[int, int]:
        self.reads += 1
        return (self.reads, 0)


class NoHeartbeat:
    enabled = False


def test_a_poll_ends_at_its_deadline_while_events_keep_coming() -> None:
    reader = EndlessReader()
    # Only what poll touches: the constructor needs a server connection.
    source = object.__new__(MySqlStreamingSource)
    first = [True]

    def handle(event: Any, position: Any, out: list[Any]) -> None:
        if first[0]:  # one record, then events that add nothing
            out.append("record")
            first[0] = False

    for name, value in {"_pending": [], "_gtid_windows": None, "reader": reader, "_handle": handle,
                        "signaling": None, "heartbeat": NoHeartbeat()}.items():
        setattr(source, name, value)
    out: list[Any] = []
    poll = threading.Thread(target=source.poll, args=(out, 1000, 0.2), daemon=True)
    poll.start()
    poll.join(30)
    assert not poll.is_alive(), f"the poll went on past its deadline ({reader.reads} events)"
    assert out == ["record"] and reader.reads > 1
