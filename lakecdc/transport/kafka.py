"""``KafkaSink``: an idempotent (optionally transactional) confluent-kafka producer.

Commit sequence (the capture coordinator acknowledges the source only after step 3):

1. ``send(records)``: topics are created on their first record; each record is encoded once
   (JsonConverter bytes) and queued in librdkafka; nothing here waits for the broker;
2. ``flush()``: waits until librdkafka has an acknowledgement (``acks=all``) for every queued
   record; with ``transactional.id`` it commits the open transaction instead, so data and any
   offset records written with :meth:`KafkaSink.send_raw` become visible together;
3. ``flush()`` returns: everything sent is durable. A delivery failure raises, naming each topic
   and broker error: ``SinkTransientError`` when the broker was unreachable or too slow (the
   capture reconnects and re-sends from its last committed position), ``SinkDeliveryError``
   when records were refused; an open transaction is aborted.

Between commits the capture does not wait for ``flush``: :meth:`KafkaSink.checkpoint` marks what was
sent so far and :meth:`KafkaSink.settled` says, without blocking, when all of it is acknowledged
(``lakecdc.transport.acks``, Kafka Connect's ``SubmittedRecords``); only then is the offset taken at
the checkpoint stored. Transactional producers commit at ``flush`` as above.

Idempotence keeps per-partition order and removes duplicates from producer retries; the source
position carried by every event makes re-delivery after a crash harmless downstream.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, Producer

from lakecdc.config.redact import redact
from lakecdc.errors import ConfigError, SinkDeliveryError, SinkTransientError
from lakecdc.transport.acks import AckTracker
from lakecdc.transport.kafka_config import connection_subset, producer_settings
from lakecdc.transport.sink import RecordSerializer
from lakecdc.transport.topics import TopicCreator

if TYPE_CHECKING:
    from confluent_kafka import Message

    from lakecdc.events.envelope import ChangeRecord

log = logging.getLogger(__name__)

# Delivery errors that mean "the broker is unreachable or slow", not "the record is refused";
# librdkafka does not flag all of them retriable (a message timeout is not).
_UNAVAILABLE = frozenset({
    KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
    KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NETWORK_EXCEPTION,
})


class KafkaSink:
    """Publishes capture records to Kafka; ``flush()`` returns only when all are acknowledged.

    >>> sink = KafkaSink("127.0.0.1:9092", producer_config={"compression.type": "zstd"})  # doctest: +SKIP
    >>> sink.send(records); sink.flush()                                                  # doctest: +SKIP
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        producer_config: Mapping[str, str] | None = None,
        key_schemas_enable: bool = True,
        value_schemas_enable: bool = True,
        create_topics: bool = True,
        topic_partitions: int = 1,
        topic_replication_factor: int = -1,
        topic_config: Mapping[str, str] | None = None,
        single_partition_topics: Iterable[str] = (),
        transactional_id: str | None = None,
        flush_timeout_s: float | None = None,
        admin_config: Mapping[str, Any] | None = None,
    ) -> None:
        settings = producer_settings(bootstrap_servers, producer_config, transactional_id=transactional_id)
        self.bootstrap_servers = bootstrap_servers
        self.transactional = bool(settings.get("transactional.id"))
        self._serializer = RecordSerializer(key_schemas_enable, value_schemas_enable)
        self._failures: list[tuple[str, str, bool]] = []  # (topic, error, transient)
        self._fatal: str | None = None
        self._last_error: tuple[str, float] = ("", 0.0)
        # re-entrant: a producer being destroyed reports its queued records from within whatever
        # Python code released it (a garbage collection can run inside a locked section)
        self._lock = threading.RLock()
        self._in_transaction = False
        self._closed = False
        timeout_ms = int(settings.get("message.timeout.ms", settings.get("delivery.timeout.ms", 300_000)))
        self.flush_timeout_s = flush_timeout_s if flush_timeout_s is not None else timeout_ms / 1000 + 5
        #: how long the broker lets a transaction stay open before aborting it (librdkafka's default
        #: 60 s): the capture commits well within it, also during a long snapshot
        self.transaction_timeout_s = int(settings.get("transaction.timeout.ms", 60_000)) / 1000
        settings["error_cb"] = self._on_error
        settings["on_delivery"] = self._on_delivery  # one default callback: no per-record closure
        # Every record's delivery report counts towards its epoch, unless the user asked librdkafka
        # for failure reports only: then commits wait in flush() for everything sent.
        # (confluent-kafka takes only a bool here; a .properties file gives text)
        only_errors = str(settings.get("delivery.report.only.error", False)).lower() in ("true", "1")
        settings["delivery.report.only.error"] = only_errors
        reports_all = not only_errors
        self._acks = AckTracker(self._on_delivery) if reports_all and not self.transactional else None
        settings["logger"] = _librdkafka_logger()
        self._settings = settings
        try:
            self._producer = Producer(settings)
        except KafkaException as exc:
            raise _config_error(exc.args[0].str()) from None
        except (ValueError, TypeError) as exc:
            raise _config_error(str(exc)) from None
        # topic creation: the producer's connection settings unless the caller built the admin's own
        admin = {**connection_subset(settings), **(admin_config or {})}
        self._topics = (
            TopicCreator(admin, partitions=topic_partitions, replication_factor=topic_replication_factor,
                         topic_config=topic_config, single_partition_topics=single_partition_topics)
            if create_topics else None
        )
        if self.transactional:
            self._call("initialise Kafka transactions", self._producer.init_transactions, self.flush_timeout_s)

    # ------------------------------------------------------------------ callbacks (librdkafka thread)

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            return
        try:
            reason = error.str()
            transient = error.code() in _UNAVAILABLE or error.retriable()
        except Exception:  # called while librdkafka is raising a fatal error: classify later
            reason, transient = str(error), False
        with self._lock:
            self._failures.append((message.topic() or "?", reason, transient))

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self._fatal = error.str()
        text = error.str()
        now = time.monotonic()
        # librdkafka repeats "connection refused" every few ms while a broker is down: say it once
        # per 30 s.
        if text != self._last_error[0] or now - self._last_error[1] > 30:
            log.warning("Kafka client error: %s", redact(text))
            self._last_error = (text, now)

    # ------------------------------------------------------------------ Sink

    def send(self, records: list[ChangeRecord]) -> None:
        """Queue records in order; topics are created on first use."""
        self._check_usable()
        if self._topics is not None:
            self._topics.ensure({r.topic for r in records})
        self._begin_if_needed()
        key_bytes, value_bytes = self._serializer.key_bytes, self._serializer.value_bytes
        produce = self._producer.produce
        report = self._report(len(records))
        for record in records:
            key, value, headers = key_bytes(record), value_bytes(record), record.headers or None
            if record.partition is not None:  # placed by a transform (outbox EventRouter)
                self._produce(record.topic, key, value, headers, record.partition, report)
                continue
            try:
                # confluent-kafka's stub wants list[tuple[str, str | bytes | None]]; a list is invariant
                # the common case, inlined
                produce(record.topic, value, key, headers=headers, on_delivery=report)  # type: ignore[arg-type]
            except (BufferError, KafkaException):
                self._produce(record.topic, key, value, headers, None, report)
        # serve the delivery reports that arrived meanwhile: librdkafka holds each record until its
        # report is served, and the reports are what settles a checkpoint
        self._producer.poll(0)

    def send_raw(self, topic: str, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes]] | None = None, partition: int | None = None) -> None:
        """Queue already-encoded bytes (offset records) in the same stream or transaction as data;
        ``partition`` when the caller places the key itself (the offsets topic: Kafka's partitioner)."""
        self._check_usable()
        if self._topics is not None:
            self._topics.ensure([topic])
        self._begin_if_needed()
        self._produce(topic, key, value, headers, partition, self._report(1))

    def checkpoint(self) -> int | None:
        """Mark everything sent so far, without waiting; None when this producer cannot tell
        (transactional, or ``delivery.report.only.error=true``): then only ``flush`` makes it durable."""
        return None if self._acks is None else self._acks.checkpoint()

    def settled(self, checkpoint: int) -> bool:
        """True once every record sent before ``checkpoint`` is acknowledged; does not block. Raises
        as :meth:`flush` does when a record failed (before any later checkpoint can settle)."""
        assert self._acks is not None, "settled() needs a checkpoint() that returned one"
        self._check_usable()
        self._producer.poll(0)
        if self._acks.failed_before(checkpoint):
            self._raise_failures()
        return self._acks.settled(checkpoint)

    def _report(self, count: int) -> Any:
        """The delivery callback for ``count`` records about to be produced (their epoch's)."""
        if self._acks is None:
            return self._on_delivery
        epoch = self._acks.current
        epoch.sent += count
        return epoch.delivered

    def _produce(self, topic: str, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes]] | None, partition: int | None = None,
                 report: Any = None) -> None:
        produce = self._producer.produce
        placed: dict[str, Any] = {} if partition is None else {"partition": partition}
        while True:
            try:
                produce(topic, value, key, headers=headers, on_delivery=report or self._on_delivery,  # type: ignore[arg-type]
                        **placed)
                return
            except BufferError:
                # librdkafka's queue is full: serve delivery reports until there is room.
                self._producer.poll(0.05)
                self._check_usable()
            except KafkaException as exc:  # refused before queueing (too large, bad topic name)
                if exc.args[0].fatal():
                    self._fatal = exc.args[0].str()
                    self._recover_from_fatal()
                error = exc.args[0].str()
                raise SinkDeliveryError(f"Kafka refused a record for topic '{topic}': {error}",
                                        [(topic, error)]) from None

    def flush(self) -> None:
        """Return when every record sent so far is acknowledged; raise on any failure."""
        if self._closed:
            return
        if self.transactional:
            self._commit()
        else:
            deadline = time.monotonic() + self.flush_timeout_s
            try:
                remaining = self._producer.flush(self.flush_timeout_s)
                while remaining and time.monotonic() < deadline:
                    remaining = self._producer.flush(max(0.1, deadline - time.monotonic()))
            except KafkaException as exc:
                self._fatal = self._fatal or exc.args[0].str()
                remaining = 0
            except SystemError as exc:
                # confluent-kafka raises this when a fatal error and delivery callbacks meet in one
                # flush; the producer's state is unknown, so it is treated as fatal.
                self._fatal = self._fatal or f"Kafka client failed during flush ({exc})"
                remaining = 0
            if self._fatal:
                self._recover_from_fatal()
            if remaining:
                raise SinkTransientError(
                    f"{remaining} Kafka records not acknowledged by {self.bootstrap_servers} within "
                    f"{self.flush_timeout_s:.0f}s"
                )
        self._raise_failures()

    def close(self) -> None:
        """Flush (committing any open transaction) and stop. Idempotent."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True

    def abort(self) -> None:
        """Abort the open transaction (transactional sinks): nothing sent since the last flush is kept."""
        if self.transactional and self._in_transaction:
            self._call("abort the Kafka transaction", self._producer.abort_transaction, self.flush_timeout_s)
            self._in_transaction = False
        with self._lock:
            self._failures.clear()

    def __enter__(self) -> KafkaSink:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None and self.transactional:
            self.abort()
        self.close()

    # ------------------------------------------------------------------ internals

    def _begin_if_needed(self) -> None:
        if self.transactional and not self._in_transaction:
            self._call("begin a Kafka transaction", self._producer.begin_transaction)
            self._in_transaction = True

    def _commit(self) -> None:
        if not self._in_transaction:
            return
        try:
            self._producer.commit_transaction(self.flush_timeout_s)
            self._in_transaction = False
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                self.abort()
                raise SinkTransientError(
                    f"Kafka transaction aborted, nothing since the last flush was kept: {error.str()}"
                ) from None
            if error.retriable():
                raise SinkTransientError(f"cannot commit the Kafka transaction yet: {error.str()}") from None
            raise SinkDeliveryError(f"Kafka transaction failed: {error.str()}", [("*", error.str())]) from None

    def _raise_failures(self) -> None:
        with self._lock:
            failures, self._failures = self._failures, []
        if not failures:
            return
        if self._acks is not None:
            self._acks.failures_handled()
        distinct = list(dict.fromkeys((topic, reason) for topic, reason, _ in failures))
        shown = "; ".join(f"topic '{t}': {e}" for t, e in distinct[:5])
        more = f" (and {len(distinct) - 5} more)" if len(distinct) > 5 else ""
        if all(transient for _, _, transient in failures):
            # Broker unreachable or too slow: nothing was acknowledged past the last flush, the
            # capture reconnects and re-sends from its last committed position.
            raise SinkTransientError(
                f"{len(failures)} Kafka records were not delivered, {self.bootstrap_servers} unavailable: "
                f"{shown}{more}", distinct)
        raise SinkDeliveryError(f"{len(failures)} Kafka records were not delivered: {shown}{more}", distinct)

    def _check_usable(self) -> None:
        if self._closed:
            raise SinkTransientError("Kafka sink is closed")
        if self._fatal:
            self._recover_from_fatal()

    def _recover_from_fatal(self) -> None:
        """A fatal producer error (lost producer state, fencing) makes the producer unusable.

        Idempotent producer: replace it and raise ``SinkTransientError``; the capture re-sends
        everything since its last commit, which the new producer delivers. Transactional producer:
        fatal means fenced (another capture with the same ``transactional.id``) or worse: terminal.
        """
        reason = self._fatal or "unknown fatal error"
        with self._lock:
            self._failures.clear()
        if self.transactional:
            raise SinkDeliveryError(f"Kafka transactional producer failed fatally: {reason}", [("*", reason)])
        log.warning("Kafka producer failed fatally (%s); starting a new producer", redact(reason))
        old, self._producer = self._producer, Producer(self._settings)
        if self._acks is not None:
            self._acks.forget()
        del old  # destroyed here: it reports its unsent records as failed, which the retry makes moot
        with self._lock:
            self._failures.clear()
        self._fatal = None
        raise SinkTransientError(
            f"Kafka producer failed ({reason}); a new producer is ready, records since the last commit "
            "must be sent again", [("*", reason)])

    def _call(self, what: str, function: Any, *args: Any) -> None:
        try:
            function(*args)
        except KafkaException as exc:
            error = exc.args[0]
            message = f"cannot {what} on {self.bootstrap_servers}: {error.str()}"
            if error.retriable():
                raise SinkTransientError(message) from None
            raise SinkDeliveryError(message, [("*", error.str())]) from None


def _config_error(detail: str) -> ConfigError:
    # librdkafka names the setting ("No such configuration property: \"x\""); users wrote producer.x.
    return ConfigError(f"invalid Kafka producer setting (producer.* properties): {redact(detail)}")


class _RepeatFilter(logging.Filter):
    """Lets a given message through once per ``interval_s`` (librdkafka repeats itself quickly)."""

    def __init__(self, interval_s: float = 30.0) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._seen: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = record.getMessage()
        now = time.monotonic()
        last = self._seen.get(key)
        if last is not None and now - last < self.interval_s:
            return False
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = now
        return True


def _librdkafka_logger() -> logging.Logger:
    logger = logging.getLogger("lakecdc.transport.librdkafka")
    if not any(isinstance(f, _RepeatFilter) for f in logger.filters):
        logger.addFilter(_RepeatFilter())
    return logger

