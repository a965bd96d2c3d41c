"""Kafka Connect's error handling for the transformation stage: ``errors.tolerance``,
``errors.log.enable`` and ``errors.log.include.messages`` (``ConnectorConfig``,
``RetryWithToleranceOperator``, ``LogReporter.Source``).

- ``errors.tolerance=none`` (the default): a transform (or its predicate) that fails on a record
  stops the capture before the record is sent, as the task fails with "Tolerance exceeded in error
  handler";
- ``errors.tolerance=all``: the record is skipped (nothing of it is sent, the rest of the batch
  goes on), as ``AbstractWorkerSourceTask`` drops a record whose transformation failed. Connect
  tolerates any exception in this stage, not only ``DataException``, so does lakecdc;
- ``errors.log.enable=true``: each failure is logged at ERROR, in both modes, as ``LogReporter``
  words it ("Error encountered in task <name>-0. Executing stage 'TRANSFORMATION' with class
  '<class>'...") plus the transform's alias and the error; ``errors.log.include.messages=true``
  adds the record (topic, position, key, value, header names) as ", where source record is = ...".
  Without ``errors.log.enable`` a skipped record is not logged, as in Connect (it is counted:
  :attr:`ErrorHandling.skipped`).

``errors.retry.timeout`` only retries Connect's ``RetriableException``, which no transform throws,
and the dead-letter queue (``errors.deadletterqueue.*``) is a sink connector's: neither changes
what a source connector's transforms do.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakecdc.errors import ConfigError
from lakecdc.events.envelope import ChangeRecord

log = logging.getLogger("lakecdc.transforms")

TOLERANCE = "errors.tolerance"
LOG_ENABLE = "errors.log.enable"
LOG_MESSAGES = "errors.log.include.messages"
NAMES = (TOLERANCE, LOG_ENABLE, LOG_MESSAGES)


@dataclass
class ErrorHandling:
    """What a connector's ``errors.*`` properties say about a record a transform fails on."""

    tolerate_all: bool = False
    log_enable: bool = False
    include_messages: bool = False
    task: str = "lakecdc-0"
    skipped: int = field(default=0, compare=False)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ErrorHandling:
        """Read as Connect's ``ConfigDef`` does: ``errors.tolerance`` is ``none`` or ``all`` (exactly,
        ``ValidString.in``), the two others booleans (any case)."""
        tolerance = properties.get(TOLERANCE, "none").strip()
        if tolerance not in ("none", "all"):
            raise ConfigError(f"Invalid value {tolerance} for configuration {TOLERANCE}: String must be one of: "
                              "none, all", TOLERANCE)
        # ConnectorTaskId's text: a source connector here runs its one task, number 0
        task = f"{(properties.get('name') or 'lakecdc').strip()}-0"
        return cls(tolerance == "all", _boolean(properties, LOG_ENABLE), _boolean(properties, LOG_MESSAGES), task)

    def failed(self, alias: str, class_name: str, record: ChangeRecord, error: BaseException) -> str:
        """Report a failure (logged when ``errors.log.enable``); returns the failure's text."""
        text = f"transform '{alias}' ({class_name}) failed on a record of topic '{record.topic}': {error}"
        if self.log_enable:
            where = f", where source record is = {describe(record)}" if self.include_messages else ""
            outcome = "the record is skipped (errors.tolerance=all)" if self.tolerate_all else \
                "the capture stops (errors.tolerance=none)"
            log.error("Error encountered in task %s. Executing stage 'TRANSFORMATION' with class '%s'%s. %s; %s",
                      self.task, class_name, where, text, outcome)
        if self.tolerate_all:
            self.skipped += 1
        return text


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
