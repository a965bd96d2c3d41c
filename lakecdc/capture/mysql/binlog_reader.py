"""A background thread reading the binlog with ``mysql-replication`` into a bounded queue.

``BinLogStreamReader`` blocks while the server has nothing to send; the thread lets the streaming
source wait with a timeout (``poll``) and stop cleanly. The server is asked for a heartbeat every
second of silence so the thread sees a stop request within about a second (closing the socket
from another thread does not work: the library reconnects on its own). Each queue item is ``(binlog file, event)``
with the file the event was read from, or a ``ReaderFailure``. The queue bound
(``max.queue.size``) holds the reader back when the sink is slower than the server.

The queue is a ``deque`` (appends and pops need no lock in CPython); each side is woken through an
``Event`` only when it is actually waiting, so a busy stream costs no lock per event. A full queue
parks the reader until the consumer has drained it to half (not a sleep-and-retry loop: waking every
millisecond to re-check would take the GIL from the consumer about a thousand times a second).
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.mysql.failure_modes import is_source_error, on_undecodable_event

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReaderFailure:
    error: BaseException


class BinlogReader:
    def __init__(self, connection_settings: dict[str, Any], replica_server_id: int, file: str, pos: int,
                 is_mariadb: bool, annotate_rows: bool, queue_size: int, heartbeat_s: float = 1.0,
                 mariadb_gtid_state: str | None = None, deserialization_failure_mode: str = "fail") -> None:
        """MySQL is read from ``file:pos``. MariaDB is read from a GTID state (``mariadb_gtid_state``,
        the transactions already processed): mysql-replication's MariaDB dump ignores file/pos, and
        the GTID protocol is the one that also carries annotate (statement text) events. Without a
        GTID state a MariaDB server is read from ``file:pos`` with the plain MySQL protocol.
        ``deserialization_failure_mode``: ``event.deserialization.failure.handling.mode`` for an event
        the library cannot decode (see ``failure_modes``)."""
        from pymysqlreplication import BinLogStreamReader

        self._items: collections.deque[Any] = collections.deque()
        self._max_items = max(queue_size, 16)
        self._ready = threading.Event()
        self._consumer_waiting = False
        self._space = threading.Event()
        self._producer_waiting = False
        self._low_water = self._max_items // 2
        self._stop = threading.Event()
        self._failure_mode = deserialization_failure_mode
        kwargs: dict[str, Any] = {}
        use_gtid = is_mariadb and mariadb_gtid_state is not None
        if use_gtid:
            kwargs["auto_position"] = mariadb_gtid_state
        if heartbeat_s > 0:
            kwargs["slave_heartbeat"] = heartbeat_s
        self.stream = BinLogStreamReader(
            connection_settings=connection_settings,
            server_id=replica_server_id,
            log_file=file,
            log_pos=pos,
            resume_stream=True,
            blocking=True,
            is_mariadb=use_gtid,
            annotate_rows_event=annotate_rows and use_gtid,
            freeze_schema=True,  # never ask the server for today's columns: the schema history knows
            enable_logging=False,
            **kwargs,
        )
        self._thread = threading.Thread(target=self._run, name="lakecdc-binlog-reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _put(self, item: Any) -> bool:
        items = self._items
        while len(items) >= self._max_items:  # the consumer is behind: hold the server back
            if self._stop.is_set():
                return False
            self._space.clear()
            self._producer_waiting = True
            if len(items) >= self._max_items:  # re-checked: the consumer may have drained it meanwhile
                self._space.wait(0.1)  # bounded, so a stop request is seen
            self._producer_waiting = False
        items.append(item)
        if self._consumer_waiting:
            self._ready.set()
        return True

    def get(self, timeout: float) -> Any:
        """The next item, waiting at most ``timeout`` seconds; None when there is none."""
        items = self._items
        if items:
            return self._pop(items)
        self._consumer_waiting = True
        self._ready.clear()
        try:
            if not items:
                self._ready.wait(timeout)
        finally:
            self._consumer_waiting = False
        return self._pop(items) if items else None

    def get_nowait(self) -> Any:
        items = self._items
        return self._pop(items) if items else None

    def _pop(self, items: collections.deque[Any]) -> Any:
        item = items.popleft()
        if self._producer_waiting and len(items) <= self._low_water:
            self._space.set()
        return item

    def _run(self) -> None:
        stream = self.stream
        try:
            while not self._stop.is_set():
                try:
                    event = stream.fetchone()
                except Exception as exc:
                    if self._failure_mode == "fail" or is_source_error(exc):
                        raise
                    # the event's packet is consumed: the next fetch reads the event after it
                    on_undecodable_event(self._failure_mode, exc, f"{stream.log_file}:{stream.log_pos}")
                    continue
                if event is None:
                    if self._stop.is_set():
                        break
                    continue
                if not self._put((stream.log_file, event)):
                    break
        except BaseException as exc:  # handed to the consumer, which decides what it means
            if not self._stop.is_set():
                self._put(ReaderFailure(exc))
        finally:
            try:
                stream.close()
            except Exception:  # the connection may already be broken
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if self._thread.is_alive():
            log.warning("the binlog reader thread did not stop within 5 s; it will end with the process")
