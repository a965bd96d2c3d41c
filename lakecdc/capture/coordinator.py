"""Runs one connector: snapshot (per ``snapshot.mode``), then streaming, committing in order.

The commit sequence (each step logged with its number at DEBUG, and a summary at INFO):

1. **events**: records are handed to ``sink.send`` in source order as the sources produce them;
2. **flush**: ``sink.flush()`` returns only when the sink holds every record durably;
3. **store offset**: the offset covering exactly those records goes to the offset store;
4. **acknowledge**: only now is the position acknowledged to the source (PostgreSQL: the slot's
   confirmed flush LSN), so the database never releases a change that is not durable downstream.

A crash between any two steps loses nothing: at worst records after the stored offset are sent
again on restart, and the connector skips events at or before the stored position.

Streaming into a sink that can tell without blocking which records are acknowledged (Kafka:
``checkpoint``/``settled``) does not stop at step 2: at each commit point the offset is put aside
with a checkpoint and capture goes on; steps 3 and 4 run for the newest offset whose checkpoint
has settled (Kafka Connect's ``WorkerSourceTask`` with ``SubmittedRecords``: offsets of
acknowledged records only, the task never waits for the producer). The end of streaming flushes.

With a transactional producer (``producer.transactional.id``, Kafka Connect's exactly-once source
support) and offsets in a Kafka topic of the same cluster, steps 2 and 3 are one step: the offset
record is written by the sink's producer into the transaction that holds the events it covers, and
the transaction's commit makes both visible at once (DESIGN.md §2.7). A crash before the commit
leaves neither to a ``read_committed`` reader; the restart resumes from the previous offset.

A snapshot is committed periodically too (every ``snapshot_commit_interval_s``, at most a quarter of
the producer's ``transaction.timeout.ms``, or ``max_unflushed_records``), so no Kafka transaction
outlives its timeout. Those commits store :data:`SNAPSHOT_IN_PROGRESS`: a restart then sees an
unfinished snapshot and snapshots again, as Debezium does when its offset says ``snapshot=true``
without the last snapshot record.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from lakecdc.capture.exporter import CaptureMetrics, capture_metrics
from lakecdc.capture.snapshot_modes import plan_start
from lakecdc.capture.spi import CaptureConnector
from lakecdc.errors import RecordConversionError, SinkDeliveryError, TransientError
from lakecdc.transforms.errors import JSON_CONVERTER, KEY_CONVERTER, VALUE_CONVERTER, ErrorHandling, conversion_reason
from lakecdc.transport.offsets import Offset, OffsetStore, offset_key

log = logging.getLogger(__name__)
T = TypeVar("T")

#: the offset stored by commits during a snapshot: every connector's ``snapshot_completed`` reads it
#: as an unfinished snapshot (PostgreSQL: no ``last_snapshot_record``; others: no ``snapshot_completed``)
SNAPSHOT_IN_PROGRESS: Offset = {"snapshot": True, "snapshot_completed": False, "last_snapshot_record": False}


@dataclass
class CoordinatorSettings:
    snapshot_mode: str = "initial"
    #: how often streamed records are made durable and the offset stored (Debezium's
    #: ``offset.flush.interval.ms``, default 60 s; lakecdc defaults lower so the slot advances)
    commit_interval_s: float = 1.0
    #: records per ``poll``
    max_batch_size: int = 20_000
    #: a commit is forced once this many records are unflushed, before ``commit_interval_s``:
    #: it bounds what a crash re-sends, not correctness. Commits are otherwise time-based, as
    #: Debezium's ``offset.flush.interval.ms``, not one per poll batch (MySQL polls 2048 records:
    #: an fsync of the sink and of the offset file every 2048 records).
    max_unflushed_records: int = 50_000
    #: how often a running snapshot is committed (bounded below the transaction timeout when the
    #: producer is transactional): a commit waits for the broker, so less often than streaming
    snapshot_commit_interval_s: float = 10.0
    poll_timeout_s: float = 0.2
    #: stop once streaming has produced nothing for this many seconds (None: run until stopped)
    stop_when_idle_s: float | None = None
    #: retries for transient source failures in a row before giving up (with exponential backoff);
    #: -1: no limit (``errors.max.retries``, registration.reconnect_retries)
    max_retries: int = 10
    retry_backoff_s: float = 1.0
    retry_backoff_max_s: float = 30.0


#: young-generation threshold while capturing (CPython's default is 700 allocations)
CAPTURE_GC_THRESHOLD0 = 100_000


@contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Run the cyclic garbage collector less often while capturing, restoring the settings after.

    Capture allocates millions of short-lived, acyclic containers (row images, payload dicts,
    records) while thousands of events wait in the binlog reader's queue and the poll batch; with
    CPython's defaults a collection runs every 700 allocations and the older generations are
    traversed over and over. Reference counting frees all of these; the collector only has cycles
    to find, which capture does not make. Measured on the MySQL stream (100k binlog rows, two
    paired runs on a loaded 2-core machine): 6 % and 28 % less CPU. A collector that is disabled
    or already set higher is left alone.
    """
    old = gc.get_threshold()
    change = gc.isenabled() and 0 < old[0] < CAPTURE_GC_THRESHOLD0
    if change:
        gc.set_threshold(CAPTURE_GC_THRESHOLD0, max(old[1], 50), max(old[2], 1000))
    try:
        yield
    finally:
        if change:
            gc.set_threshold(*old)


@dataclass
class CaptureStats:
    snapshot_rows: int = 0
    streamed_records: int = 0
    commits: int = 0


class CaptureCoordinator:
    def __init__(
        self,
        connector: CaptureConnector,
        sink: Any,
        offsets: OffsetStore,
        settings: CoordinatorSettings | None = None,
    ) -> None:
        self.connector = connector
        self.sink = sink
        self.offsets = offsets
        self.settings = settings or CoordinatorSettings()
        self.stats = CaptureStats()
        self._key = offset_key(connector.name, connector.partition)
        self._stop = threading.Event()
        self._streaming_started = False
        self.metrics = CaptureMetrics()  # no-op until run() opens the Prometheus endpoint (metrics.port)
        self._offsets_in_transaction = offsets_in_transaction(sink, offsets)
        # Kafka Connect's transformation chain runs between the source task and the converter: here,
        # once for every connector, on the records just before they go to the sink.
        config = getattr(connector, "config", None)
        chain = getattr(config, "transform_chain", None)
        self._transforms = chain or None
        # errors.*: Connect's error handler of the per-record stages (transforms, then converters)
        self._errors: ErrorHandling = getattr(chain, "errors", None) or ErrorHandling()

    # -- control ----------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stop.set()
        self._errors.stopping.set()  # a stage waiting to retry gives up (Connect's triggerStop)

    def install_signal_handlers(self) -> Callable[[], None]:
        """SIGINT/SIGTERM stop after the current batch is committed. Returns what puts the previous
        handlers back: once the capture has returned, a signal must not go to its dead stop flag
        (the CLI run in-process by a test left every process forked later unable to be terminated)."""
        previous = {sig: signal.signal(sig, lambda *_: self.request_stop()) for sig in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for sig, handler in previous.items():
                if handler is not None:  # None: not set from Python, nothing to put back
                    signal.signal(sig, handler)

        return restore

    # -- main -------------------------------------------------------------------------------
    def run(self) -> CaptureStats:
        self.metrics = capture_metrics(self.connector)
        if not self._stop.is_set():
            self._errors.stopping.clear()  # the configuration's handler may have served an earlier run
        with fewer_gc_passes():
            try:
                return self._run()
            finally:
                self.metrics.close()

    def _run(self) -> CaptureStats:
        stored = self.offsets.load(self._key)
        has_offset = stored is not None
        completed = bool(stored and self.connector.offset_has_completed_snapshot(stored))
        resumable = True
        if self.settings.snapshot_mode in ("when_needed",) and stored is not None and completed:
            resumable = self.connector.can_resume_streaming(stored)
        plan = plan_start(self.settings.snapshot_mode, has_offset, completed, resumable)
        log.info("start plan: %s", plan.reason)
        if plan.snapshot:
            self._run_snapshot(stored if (has_offset and completed) else None)
        if plan.stream and not self._stop.is_set():
            self._run_streaming_with_retries()
        return self.stats

    def _run_snapshot(self, stored: Offset | None) -> None:
        source = self.connector.snapshot_source(stored)
        interval = self.settings.snapshot_commit_interval_s
        timeout = getattr(self.sink, "transaction_timeout_s", None)
        if getattr(self.sink, "transactional", False) and timeout:
            interval = min(interval, timeout / 4)
        unflushed = 0
        last_commit = time.monotonic()

        def emit(records: list[Any]) -> None:
            nonlocal unflushed, last_commit
            if self._transforms is not None:
                records = self._transforms.apply(records)
            self._send(records)  # step 1
            unflushed += len(records)
            now = time.monotonic()
            if unflushed >= self.settings.max_unflushed_records or now - last_commit >= interval:
                # Snapshot rows carry no resumable position: the stored offset says "snapshot not
                # finished", so a crash from here on restarts the snapshot.
                self._commit(SNAPSHOT_IN_PROGRESS, acknowledge=None)
                unflushed, last_commit = 0, time.monotonic()

        self.metrics.snapshot_running(True)
        result = source.run(emit)
        self.stats.snapshot_rows += result.rows
        # The streaming offset is stored only once every row is durable.
        self._commit(result.offset, acknowledge=None)
        self.metrics.snapshot_running(False)
        log.info("snapshot completed: %d rows from %d tables", result.rows, result.tables)

    def _run_streaming_with_retries(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                self._run_streaming()
                return
            except TransientError as exc:
                if getattr(self.sink, "transactional", False):
                    self._abort_transaction()
                # retries count consecutive failures: a connection that streamed, then dropped
                # (a restart days later), starts a fresh series instead of using up the budget
                attempt = 1 if self._streaming_started else attempt + 1
                limit = self.settings.max_retries
                if 0 <= limit < attempt:  # -1: no limit (errors.max.retries)
                    raise
                delay = min(
                    self.settings.retry_backoff_s * 2 ** (min(attempt, 64) - 1), self.settings.retry_backoff_max_s
                )
                log.warning("%s; reconnecting in %.1f s (attempt %d of %s)", exc, delay, attempt,
                            limit if limit >= 0 else "unlimited")
                if self._stop.wait(delay):
                    return

    def _abort_transaction(self) -> None:
        """Nothing of a failed transaction may be committed with the records sent again after it."""
        try:
            self.sink.abort()
        except TransientError as exc:  # the broker aborts it at transaction.timeout.ms, or fences it
            log.warning("cannot abort the Kafka transaction yet (%s); the broker aborts it when it times out", exc)

    def _run_streaming(self) -> None:
        self._streaming_started = False
        source = self.connector.streaming_source()
        settings = self.settings
        try:
            stored = self.offsets.load(self._key)
            # an unfinished snapshot's marker has no position (snapshot.mode changed to never/no_data)
            source.start(None if stored == SNAPSHOT_IN_PROGRESS else stored)
            self._streaming_started = True
            batch: list[Any] = []
            unflushed = 0
            last_commit = time.monotonic()
            pending: deque[tuple[int, Offset, float]] = deque()  # (sink checkpoint, offset, taken at)
            while not self._stop.is_set():
                source.poll(batch, settings.max_batch_size, settings.poll_timeout_s)
                # idleness is read before a possibly slow send; heartbeats do not count as changes
                idle = source.idle_seconds()
                if batch:
                    # step 1; the transformed list is not held while the next batch is polled
                    self._send(batch if self._transforms is None else self._transforms.apply(batch))
                    unflushed += len(batch)
                    self.stats.streamed_records += len(batch)
                    batch = []
                now = time.monotonic()
                if unflushed >= settings.max_unflushed_records or now - last_commit >= settings.commit_interval_s:
                    offset = source.committable_offset()
                    if offset is not None:
                        checkpoint = self._checkpoint()
                        if checkpoint is None:
                            self._commit(offset, acknowledge=source)
                        else:
                            pending.append((checkpoint, offset, now))
                    unflushed = 0
                    last_commit = now
                if pending:
                    self._commit_settled(pending, source)
                if settings.stop_when_idle_s is not None and idle >= settings.stop_when_idle_s:
                    log.info("no changes for %.1f s; stopping (--stop-when-idle)", settings.stop_when_idle_s)
                    break
            offset = source.committable_offset()
            if offset is None and pending:
                offset = pending[-1][1]
            if offset is not None:
                self._commit(offset, acknowledge=source)
        finally:
            source.close()

    def _send(self, records: list[Any]) -> None:
        """Step 1, with the converter stage's error handling: a record the sink's converter cannot
        encode stops the capture (``errors.tolerance=none``) or is skipped (``all``), as Connect's
        ``convertTransformedRecord`` does; the sink has then accepted the records before it."""
        while True:
            try:
                self.sink.send(records)
                self.metrics.sent(records)
                return
            except RecordConversionError as exc:
                at = next((i for i, r in enumerate(records) if r is exc.record), None)
                if at is None:  # not one of these records: not a per-record failure
                    raise
                self.metrics.sent(records[:at])
                stage = KEY_CONVERTER if exc.part == "key" else VALUE_CONVERTER
                reason = conversion_reason(exc.record, exc.part, exc)  # type: ignore[arg-type]
                self._errors.failed(stage, JSON_CONVERTER, exc.record,  # type: ignore[arg-type]
                                    RecordConversionError(reason, exc.record, exc.part),
                                    f"{exc.part} converter ({JSON_CONVERTER})")
                records = records[at + 1:]

    def _flush(self) -> None:
        """``sink.flush()``, refused records tolerated as ``_delivered`` says."""
        self._delivered(self.sink.flush)

    def _delivered(self, check: Callable[[], T]) -> T:
        """``check()`` (the sink's flush or ``settled``); with ``errors.tolerance=all`` the records the
        broker refused are skipped (KIP-779: Connect's non-transactional source task commits past a
        failed send) and ``check`` asked again. A fatal producer error (topic ``*``) and an unreachable
        broker (``SinkTransientError``) are never skipped."""
        while True:
            try:
                return check()
            except SinkDeliveryError as exc:
                if not (self._errors.tolerate_all and exc.failures and not getattr(self.sink, "transactional", False)
                        and all(topic != "*" for topic, _ in exc.failures)):
                    raise
                for topic, reason in exc.failures:
                    self._errors.produce_failed(topic, reason)

    def _checkpoint(self) -> int | None:
        """A sink checkpoint to store the next offset at once it settles; None: commit by flushing."""
        checkpoint = getattr(self.sink, "checkpoint", None)
        if checkpoint is None or self._offsets_in_transaction:
            return None
        return checkpoint()

    def _commit_settled(self, pending: deque[tuple[int, Offset, float]], acknowledge: Any) -> None:
        """Steps 3 and 4 for the newest offset whose records the sink has all acknowledged -- also
        when a later record's failure is raised meanwhile (the offset before it still holds)."""
        settled = None
        try:
            while pending and self._delivered(lambda: self.sink.settled(pending[0][0])):
                settled = pending.popleft()
        finally:
            if settled is not None:
                self._store_settled(*settled, acknowledge)

    def _store_settled(self, checkpoint: int, offset: Offset, taken: float, acknowledge: Any) -> None:
        log.debug("commit step 3: storing offset %s (its records are acknowledged)", offset)
        self.offsets.save(self._key, offset)
        log.debug("commit step 4: acknowledging the source")
        acknowledge.acknowledge(offset)
        self.stats.commits += 1
        self.metrics.committed(offset, time.monotonic() - taken)

    def _commit(self, offset: Offset, acknowledge: Any | None) -> None:
        started = time.monotonic()
        if self._offsets_in_transaction:
            record = self.offsets.record(self._key, offset)  # type: ignore[attr-defined]
            log.debug("commit steps 2+3: offset %s in the Kafka transaction of its events", offset)
            self.sink.send_raw(record.topic, record.key, record.value, partition=record.partition)
            self.sink.flush()  # commits events and offset together, or raises having kept neither
            self.offsets.remember(self._key, offset)  # type: ignore[attr-defined]
        else:
            log.debug("commit step 2: flushing the sink")
            self._flush()  # step 2: durable when it returns
            log.debug("commit step 3: storing offset %s", offset)
            self.offsets.save(self._key, offset)  # step 3
        if acknowledge is not None:
            log.debug("commit step 4: acknowledging the source")
            acknowledge.acknowledge(offset)  # step 4: never before steps 2 and 3
        self.stats.commits += 1
        self.metrics.committed(offset, time.monotonic() - started)


def offsets_in_transaction(sink: Any, offsets: OffsetStore) -> bool:
    """True when the offset can be written in the sink's Kafka transaction: a transactional sink and
    an offsets topic on the same cluster (Kafka Connect's exactly-once source support needs both)."""
    if not getattr(sink, "transactional", False):
        return False
    if not hasattr(offsets, "record"):
        log.warning("the Kafka producer is transactional but offsets are kept in %s: each offset is stored "
                    "after its transaction commits, not in it; set offset.storage.topic for exactly-once",
                    type(offsets).__name__)
        return False
    if _servers(getattr(offsets, "bootstrap_servers", "")) != _servers(getattr(sink, "bootstrap_servers", "")):
        log.warning("the offsets topic is on other brokers than the events (%s, %s): offsets are stored after "
                    "each transaction commits, not in it", offsets.bootstrap_servers,  # type: ignore[attr-defined]
                    sink.bootstrap_servers)
        return False
    return True


def _servers(text: str) -> frozenset[str]:
    return frozenset(s.strip() for s in text.split(",") if s.strip())
