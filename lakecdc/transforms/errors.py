"""Kafka Connect's error handling of a source task's per-record stages (``RetryWithToleranceOperator``,
``ProcessingContext``, ``LogReporter.Source``), with its ``errors.*`` properties (``ConnectorConfig``).

Connect runs each record through stages: every transform (``TRANSFORMATION``), then the key and
value converters (``KEY_CONVERTER``, ``VALUE_CONVERTER``). lakecdc runs the same stages: the
transform chain (:mod:`.chain`), then the sink's JSON converter (``JsonConverter``'s format), whose
failures the capture coordinator hands to :meth:`ErrorHandling.failed`.

- ``errors.retry.timeout`` (default 0: no retry; -1, or any negative value: no limit) and
  ``errors.retry.delay.max.ms`` (default 60000): a stage that fails with a retriable error (Connect's
  ``RetriableException``; lakecdc's :class:`~lakecdc.errors.TransientError`) is run again, after
  waiting 300 ms, doubling each time; a wait longer than the maximum becomes a random wait below it,
  and no wait reaches past the timeout (counted from the first failure: Connect counts from the
  first attempt, which lakecdc does not time, to keep the clock off the path of every record). A
  retriable error that outlasts the timeout, and any other error, is the stage's failure.
  (Kafka 4.x, KAFKA-18073: the failure then goes by ``errors.tolerance``; older releases dropped
  the record even with ``none``, which lakecdc does not copy.) Other errors are never retried.
- ``errors.tolerance=none`` (the default): a failing stage stops the capture before the record is
  sent ("Tolerance exceeded in error handler"); ``all``: the record is skipped (nothing of it is
  sent, the rest of the batch goes on), as ``AbstractWorkerSourceTask.sendRecords`` drops it.
  Connect tolerates any exception of these stages, not only ``DataException``; so does lakecdc.
- ``errors.tolerance=all`` also covers a record the Kafka broker refuses after it was handed over
  (KIP-779: stage ``KAFKA_PRODUCE``), except with a transactional producer (Connect's exactly-once
  source tasks fail then) and except when the broker is only unreachable (lakecdc then re-sends
  after reconnecting, where Connect drops the records its producer timed out on).
- ``errors.log.enable=true``: each failure is logged at ERROR in both modes, in ``LogReporter``'s
  words ("Error encountered in task <name>-0. Executing stage '<STAGE>' with class '<class>'") plus
  the error; ``errors.log.include.messages=true`` adds the record as ", where source record is =
  ...". Without ``errors.log.enable`` a skipped record is not logged, as in Connect (it is counted:
  :attr:`ErrorHandling.skipped`).

The dead letter queue (``errors.deadletterqueue.*``) is a sink connector's (``SinkConnectorConfig``):
Connect gives a source task a log reporter only, so those properties change nothing here either
(:mod:`lakecdc.config.no_effect`).
"""

from __future__ import annotations

import decimal
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from lakecdc.errors import ConfigError, TerminalError, TransientError
from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.logical import DECIMAL

log = logging.getLogger("lakecdc.transforms")

TOLERANCE = "errors.tolerance"
LOG_ENABLE = "errors.log.enable"
LOG_MESSAGES = "errors.log.include.messages"
RETRY_TIMEOUT = "errors.retry.timeout"
RETRY_MAX_DELAY = "errors.retry.delay.max.ms"
NAMES = (TOLERANCE, LOG_ENABLE, LOG_MESSAGES, RETRY_TIMEOUT, RETRY_MAX_DELAY)

TRANSFORMATION = "TRANSFORMATION"
KEY_CONVERTER = "KEY_CONVERTER"
VALUE_CONVERTER = "VALUE_CONVERTER"
KAFKA_PRODUCE = "KAFKA_PRODUCE"
#: the class Connect names for a failed send (the task's own)
SOURCE_TASK = "org.apache.kafka.connect.runtime.WorkerSourceTask"
#: the class Connect names for lakecdc's converter: the sink writes JsonConverter's format
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
#: RetryWithToleranceOperator.RETRIES_DELAY_MIN_MS: the first wait before a retry
RETRY_DELAY_MIN_MS = 300

T = TypeVar("T")
A = TypeVar("A")


@dataclass
class ErrorHandling:
    """What a connector's ``errors.*`` properties say about a record a stage fails on."""

    tolerate_all: bool = False
    log_enable: bool = False
    include_messages: bool = False
    task: str = "lakecdc-0"
    #: errors.retry.timeout in ms; negative: no limit
    retry_timeout_ms: int = 0
    retry_max_delay_ms: int = 60_000
    skipped: int = field(default=0, compare=False)
    #: set when the capture stops: a retry wait ends and the record is not sent (Connect's triggerStop)
    stopping: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ErrorHandling:
        """Read as Connect's ``ConfigDef`` does: ``errors.tolerance`` is ``none`` or ``all`` (exactly,
        ``ValidString.in``), the log switches booleans (any case), the retry settings longs."""
        tolerance = properties.get(TOLERANCE, "none").strip()
        if tolerance not in ("none", "all"):
            raise ConfigError(f"Invalid value {tolerance} for configuration {TOLERANCE}: String must be one of: "
                              "none, all", TOLERANCE)
        max_delay = _long(properties, RETRY_MAX_DELAY, 60_000)
        if max_delay < 0:  # Connect's backoff cannot draw a random wait below a negative bound
            raise ConfigError(f"Invalid value {max_delay} for configuration {RETRY_MAX_DELAY}: must be at least 0",
                              RETRY_MAX_DELAY)
        # ConnectorTaskId's text: a source connector here runs its one task, number 0
        task = f"{(properties.get('name') or 'lakecdc').strip()}-0"
        return cls(tolerance == "all", _boolean(properties, LOG_ENABLE), _boolean(properties, LOG_MESSAGES), task,
                   _long(properties, RETRY_TIMEOUT, 0), max_delay)

    def execute(self, stage: str, class_name: str, operation: Callable[[A], T], argument: A,
                original: ChangeRecord, label: str = "", failure: Failure | None = None) -> T | None:
        """``operation(argument)``, retried while it raises a retriable error within the timeout;
        None when it fails and ``errors.tolerance=all``; raises the failure otherwise."""
        try:
            return operation(argument)
        except TransientError as exc:
            return self._retry(stage, class_name, operation, argument, original, label, failure, exc)
        except Exception as exc:  # Connect tolerates any exception of these stages (TOLERABLE_EXCEPTIONS)
            self.failed(stage, class_name, original, exc, label, failure)
            return None

    def failed(self, stage: str, class_name: str, record: ChangeRecord, error: BaseException,
               label: str = "", failure: Failure | None = None) -> None:
        """A stage failed on ``record``: logged when ``errors.log.enable``; counted and returns with
        ``errors.tolerance=all``; otherwise raises ``failure(text)`` (:class:`StageFailure`) from
        ``error``."""
        text = f"{label + ' ' if label else ''}failed on a record of topic '{record.topic}': {error}"
        if self.log_enable:
            where = f", where source record is = {describe(record)}" if self.include_messages else ""
            outcome = "the record is skipped (errors.tolerance=all)" if self.tolerate_all else \
                "the capture stops (errors.tolerance=none)"
            log.error("Error encountered in task %s. Executing stage '%s' with class '%s'%s. %s; %s",
                      self.task, stage, class_name, where, text, outcome)
        if not self.tolerate_all:
            make = failure or StageFailure
            # a lakecdc error's message is in the text already; anything else keeps its traceback
            raise make(text) from (None if isinstance(error, TerminalError) else error)
        self.skipped += 1

    def produce_failed(self, topic: str, reason: str) -> None:
        """The broker refused a record of ``topic`` after it was handed over (KIP-779, Connect 3.2+): with
        ``errors.tolerance=all`` a source task logs it and commits past it (``WorkerSourceTask.
        producerSendFailed``, stage ``KAFKA_PRODUCE``); the caller only asks when tolerating."""
        log.error("failed to send a record to topic '%s': %s; it is skipped (errors.tolerance=all)", topic, reason)
        if self.log_enable:
            log.error("Error encountered in task %s. Executing stage '%s' with class '%s'. %s", self.task,
                      KAFKA_PRODUCE, SOURCE_TASK, reason)

    def backoff_ms(self, attempt: int, deadline: float, now: float) -> float:
        """The wait before retry number ``attempt`` (``RetryWithToleranceOperator.backoff``)."""
        delay = float(RETRY_DELAY_MIN_MS << min(attempt - 1, 40))
        if delay > self.retry_max_delay_ms:
            delay = random.uniform(0, self.retry_max_delay_ms)  # noqa: S311 - jitter, not security
        return max(0.0, min(delay, (deadline - now) * 1000))

    def _retry(self, stage: str, class_name: str, operation: Callable[[A], T], argument: A,
               original: ChangeRecord, label: str, failure: Failure | None, error: TransientError) -> T | None:
        start = self.clock()
        deadline = start + self.retry_timeout_ms / 1000 if self.retry_timeout_ms >= 0 else float("inf")
        attempt = 1
        while True:
            now = self.clock()
            if now >= deadline:
                break  # a retriable error past the timeout is the stage's failure
            wait = self.backoff_ms(attempt, deadline, now)
            log.debug("stage %s (%s) failed with a retriable error (%s); attempt %d again in %.0f ms",
                      stage, class_name, error, attempt + 1, wait)
            if self.stopping.wait(wait / 1000):
                # stopping: the record is not sent and nothing after it is committed (Connect skips it
                # as its task is cancelled; lakecdc stops without skipping, so a restart sends it)
                raise (failure or StageFailure)(f"stopped while retrying stage {stage} ({class_name}): {error}") \
                    from error
            attempt += 1
            try:
                return operation(argument)
            except TransientError as exc:
                error = exc
            except Exception as exc:
                self.failed(stage, class_name, original, exc, label, failure)
                return None
        self.failed(stage, class_name, original, error, label, failure)
        return None


class StageFailure(TerminalError):
    """A record a stage failed on with ``errors.tolerance=none`` (Connect's "Tolerance exceeded in error
    handler"): the capture stops before the record is sent. The transform chain raises
    :class:`~lakecdc.transforms.base.TransformDataError` instead."""


Failure = Callable[[str], TerminalError]


def conversion_reason(record: ChangeRecord, part: str, error: BaseException) -> str:
    """Why the converter refused ``record``'s ``part``, in Connect's words where lakecdc knows them: a
    decimal of another scale than its field's (``MaskField``'s zero; ``Decimal.fromLogical``)."""
    schema, value = (record.key_schema, record.key) if part == "key" else (record.value_schema, record.value)
    if schema is not None and schema.type == "struct" and isinstance(value, dict):
        for f in schema.fields:
            number = value.get(f.name)
            if isinstance(number, decimal.Decimal) and number.is_finite() and f.schema.name == DECIMAL:
                scale = int(f.schema.parameter("scale") or 0)
                return (f"Decimal value has mismatching scale for given Decimal schema. Schema has scale {scale}, "
                        f"value has scale {-int(number.as_tuple().exponent)} (field '{f.name}')")
    return str(error)


def describe(record: ChangeRecord) -> str:
    """The record as ``errors.log.include.messages`` shows it (Connect prints ``SourceRecord.toString``)."""
    headers = ", ".join(name for name, _ in record.headers)
    return (f"ChangeRecord{{topic='{record.topic}', position={record.position!r}, key={record.key!r}, "
            f"value={record.value!r}, headers=[{headers}]}}")


def _boolean(properties: Mapping[str, str], name: str) -> bool:
    text = properties.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"Invalid value {properties[name]} for configuration {name}: Expected value to be either "
                          "true or false", name)
    return text == "true"


def _long(properties: Mapping[str, str], name: str, default: int) -> int:
    text = properties.get(name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type LONG", name) from None
    if not -(1 << 63) <= value < 1 << 63:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type LONG", name)
    return value
