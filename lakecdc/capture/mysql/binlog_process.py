"""The binlog read and ``mysql-replication``'s row decoding in a process of their own (the second core).

Profiled on a 100k-row binlog, the library's row decoding was half of the streaming capture's
samples and the packet reading another quarter, all under one GIL with lakecdc's own work. This
reader runs :class:`BinlogReader` (the same thread and bounded queue) in a forked child process,
decodes every rows event there (``RowsEvent.rows``), and sends the events to the capture process as
light copies that keep only what the streaming source reads (:func:`lighten`): instances of
subclasses of the library's event classes, so the source's ``isinstance`` dispatch is unchanged.
A rows event whose rows cannot be decoded carries the error, raised when the capture reads
``rows``, where ``event.deserialization.failure.handling.mode`` applies as before.

The child batches what is ready into one pickled message per send (a pipe holds the capture
process back when it is slower, as the queue bound does). The capture process keeps no state
here: stopping (or a crash of either process) ends the child and its binlog connection, and the
restart reads from the stored offset, skipping what was already emitted, as after any reconnect.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import pickle
import signal
import time
from collections import deque
from typing import Any

from pymysqlreplication import event as events
from pymysqlreplication import row_event

from lakecdc.capture.mysql.binlog_reader import BinlogReader, ReaderFailure

log = logging.getLogger(__name__)

#: a message holds at most this many events, decoded rows, and seconds of decoding: the capture
#: process waits for a whole message, so it is kept small enough to keep both processes busy
BATCH_EVENTS = 512
BATCH_ROWS = 1000
BATCH_SECONDS = 0.05


class _Packet:
    """What the source reads of an event's packet header."""

    __slots__ = ("log_pos", "server_id")

    def __init__(self, log_pos: int, server_id: int) -> None:
        self.log_pos, self.server_id = log_pos, server_id

    def __reduce__(self) -> tuple[Any, ...]:
        return _Packet, (self.log_pos, self.server_id)


class _OtherEvent:
    """Any other event (table maps, format descriptions, heartbeats): its position only."""


def _rows(self: Any) -> Any:
    error = self.__dict__.get("rows_error")
    if error is not None:
        raise error
    return self.__dict__["decoded_rows"]


#: the attributes the streaming source reads, by event class (with packet, event_size, timestamp)
_ATTRIBUTES: dict[type, tuple[str, ...]] = {
    events.RotateEvent: ("next_binlog",),
    events.GtidEvent: ("gtid",),
    events.MariadbGtidEvent: ("gtid",),
    events.XidEvent: (),
    events.QueryEvent: ("query", "slave_proxy_id", "schema"),
    events.MariadbAnnotateRowsEvent: ("sql_statement",),
    events.RowsQueryLogEvent: ("query",),
    row_event.WriteRowsEvent: ("schema", "table"),
    row_event.UpdateRowsEvent: ("schema", "table"),
    row_event.DeleteRowsEvent: ("schema", "table"),
}


def _light_class(cls: type) -> type:
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": f"Light{cls.__name__}"}
    if issubclass(cls, row_event.RowsEvent):
        namespace["rows"] = property(_rows)
    light = type(f"Light{cls.__name__}", (cls,), namespace)
    globals()[light.__name__] = light  # pickled by reference to this module
    return light


_LIGHT: dict[type, type] = {cls: _light_class(cls) for cls in _ATTRIBUTES}


def lighten(ev: Any) -> Any:
    """A picklable copy of ``ev`` with what the streaming source reads; rows decoded here."""
    cls = type(ev)
    light_cls = _LIGHT.get(cls, _OtherEvent)
    light = object.__new__(light_cls)
    state = light.__dict__
    packet = getattr(ev, "packet", None)
    state["packet"] = _Packet(getattr(packet, "log_pos", 0), getattr(packet, "server_id", 0))
    state["event_size"] = getattr(ev, "event_size", 0)
    state["timestamp"] = getattr(ev, "timestamp", 0)
    for name in _ATTRIBUTES.get(cls, ()):
        value = getattr(ev, name, None)
        state[name] = str(value) if name == "gtid" and value is not None else value
    if isinstance(ev, row_event.RowsEvent) and light_cls is not _OtherEvent:
        try:
            state["decoded_rows"] = ev.rows
        except Exception as exc:  # noqa: BLE001 - raised where the capture reads the rows
            state["rows_error"] = _picklable(exc)
    return light


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception type may fail to pickle
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _child(conn: Any, kwargs: dict[str, Any]) -> None:
    """The reader process: BinlogReader's thread reads; this thread lightens and sends batches."""
    # the capture process stops the child (SIGTERM); its own handlers (stop after the batch) were
    # inherited by the fork and must not keep the child running
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()
    reader = BinlogReader(**kwargs)
    reader.start()
    try:
        while True:
            item = reader.get(1.0)
            if item is None:
                if os.getppid() != parent:  # the capture process died (kill -9): nobody reads the pipe
                    return
                continue
            # decode what is ready into one message, up to a bound of rows and of time, so the
            # capture process works on one message while the next is decoded
            out: list[Any] = []
            rows = 0
            deadline = time.monotonic() + BATCH_SECONDS
            while item is not None:
                if isinstance(item, ReaderFailure):
                    out.append(ReaderFailure(_picklable(item.error)))
                    break
                light = lighten(item[1])
                out.append((item[0], light))
                rows += len(light.__dict__.get("decoded_rows") or ())
                if rows >= BATCH_ROWS or len(out) >= BATCH_EVENTS or time.monotonic() >= deadline:
                    break
                item = reader.get_nowait()
            conn.send_bytes(pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
            if isinstance(out[-1], ReaderFailure):
                return
    except (BrokenPipeError, EOFError, OSError):
        pass  # the capture process is gone or closed the pipe
    finally:
        reader.close()


class BinlogReaderProcess:
    """:class:`BinlogReader`'s interface (``start``, ``get``, ``get_nowait``, ``close``) over a
    child process that reads and decodes; takes BinlogReader's arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ("connection_settings", "replica_server_id", "file", "pos", "is_mariadb", "annotate_rows",
                 "queue_size")
        self._kwargs = {**dict(zip(names, args)), **kwargs}
        self._items: deque[Any] = deque()
        self._conn: Any = None
        self._process: Any = None

    def start(self) -> None:
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        # ``daemon``: the child ends with the capture process, and its binlog connection with it
        self._process = context.Process(target=_child, args=(sender, self._kwargs), name="lakecdc-binlog-reader",
                                        daemon=True)
        # the child must never collect the capture's objects (a Kafka producer destroyed in a forked
        # copy would wait for threads the fork did not copy): they stay out of its collector
        gc.freeze()
        try:
            self._process.start()
        finally:
            gc.unfreeze()
        sender.close()
        self._conn = receiver

    def get(self, timeout: float) -> Any:
        """The next item, waiting at most ``timeout`` seconds; None when there is none."""
        if not self._items and not self._receive(timeout):
            return None
        return self._items.popleft()

    def get_nowait(self) -> Any:
        if not self._items and not self._receive(0):
            return None
        return self._items.popleft()

    def _receive(self, timeout: float) -> bool:
        conn = self._conn
        if conn is None or not conn.poll(timeout):
            return False
        try:
            self._items.extend(pickle.loads(conn.recv_bytes()))
        except (EOFError, OSError) as exc:
            code = self._process.exitcode if self._process is not None else None
            self._items.append(ReaderFailure(ConnectionError(
                f"the binlog reader process ended (exit code {code}): {type(exc).__name__}")))
            conn.close()
            self._conn = None
        return True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        process = self._process
        if process is not None and process.is_alive():
            process.terminate()
            process.join(5)
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                process.join(5)
        self._process = None

