"""Reading the next micro-batch while the current one is applied (Python reader; drains and continuous jobs).

The driver alternates between reading a batch from Kafka (confluent-kafka's messages into Arrow),
decoding it (``BatchProcessor.decode``; both Python work) and applying it (mostly waiting on Spark's
JVM and on delta-rs, which release the GIL). ``ReadAhead`` runs the reader's generator, which the
job extends with the decoding, on a thread of its own, one batch ahead: batch N+1 is read (and, in
a drain, decoded) while batch N is applied.

- In an ``available-now`` drain batch N+1 is complete (full, or read to the end) as soon as it can
  be, so reading and decoding hide behind the apply.
- In a ``continuous`` job the records of batch N+1 arrive while N is applied. The thread reads them
  as they come, and the batch ends only once the job wants it (``wanted``, set while the job waits),
  as a batch the job started reading at that moment would: at the end of every partition as of
  then, or ``batch.max.wait.ms`` later. What arrived meanwhile is already read, so the next batch
  starts with its decoding; it holds every record that arrived before the job asked, as before.
  Interval triggers read as before (the job sleeps between batches).

What stays the same:

- the batches and their order: the thread runs the reader's own generator, which the job's loop
  would otherwise run between batches; batch N+1 starts where batch N ended in Kafka, whatever
  N's commits do (positions come from the tables only when a partition is first read);
- positions on a restart: nothing is committed to Kafka, so a batch read ahead and lost with the
  process is read again from the tables' offsets, as without read-ahead;
- the reader's state: only the thread touches the consumer. A partition seen for the first time
  asks the processor for the table's committed offset (``start_offset``), which reads tables the
  batch in progress may be committing: the caller passes a lock that it holds while processing,
  and ``locked`` wraps ``start_offset`` in it.

At most two batches are in the driver at once (the one applied and the one read ahead): the
thread starts reading a batch only once the previous one was taken, and a batch ends when it holds
``batch.max.records`` records whether or not the job wants it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_END = object()


def locked(lock: threading.Lock, fn: Callable[..., R]) -> Callable[..., R]:
    """``fn`` called under ``lock``."""
    def call(*args: object) -> R:
        with lock:
            return fn(*args)
    return call


class ReadAhead(Generic[T]):
    """Iterates ``source`` on a thread, one item ahead of the consumer; ``close`` stops it. ``wanted``
    (if given) is set while the consumer waits for an item, and cleared before the next is read.

    >>> ahead = ReadAhead(iter([1, 2, 3]))
    >>> list(ahead)
    [1, 2, 3]
    >>> ahead.close()
    """

    def __init__(self, source: Iterator[T], name: str = "lakecdc-read-ahead",
                 wanted: threading.Event | None = None) -> None:
        self._source = source
        self._wanted = wanted
        self._ready: queue.Queue[object] = queue.Queue(maxsize=1)
        self._permit = threading.Semaphore(1)  # the next item may be read
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while self._acquire():
                try:
                    item: object = next(self._source)
                except StopIteration:
                    break
                self._ready.put(item)
        except BaseException as exc:  # handed to the consumer, which raises it in its own thread
            self._ready.put(_Failure(exc))
            return
        finally:
            close = getattr(self._source, "close", None)
            if close is not None:
                close()
        self._ready.put(_END)

    def _acquire(self) -> bool:
        while not self._closing.is_set():
            if self._permit.acquire(timeout=0.1):
                return not self._closing.is_set()
        return False

    def __iter__(self) -> Iterator[T]:
        while True:
            if self._wanted is not None:
                self._wanted.set()
            item = self._ready.get()
            if self._wanted is not None:
                self._wanted.clear()  # before the permit: the next item is not wanted yet
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            self._permit.release()  # read the next one while this one is used
            yield item  # type: ignore[misc]

    def close(self, timeout: float = 60.0) -> None:
        """Stop reading ahead and wait for the thread (it finishes the read in progress)."""
        self._closing.set()
        while self._thread.is_alive():
            try:
                self._ready.get(timeout=0.1)  # a full queue must not keep the thread waiting
            except queue.Empty:
                pass
            self._thread.join(timeout=0.1)
            timeout -= 0.2
            if timeout <= 0:
                break


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error
