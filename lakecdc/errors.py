"""Every exception lakecdc raises, in one flat module.

Errors carry a *category* so retry code checks one attribute instead of matching types or
messages (the dlt convention):

- ``TransientError``: the operation may succeed if retried unchanged (broker unreachable, lost
  connection, database restarting). Callers retry with backoff.
- ``TerminalError``: retrying unchanged cannot help (bad configuration, missing privilege, WAL
  already removed, a record the sink rejected as too large). Callers stop and report.

Other areas subclass these for their own failures (``class SlotMissingError(TerminalError)``)
instead of defining parallel hierarchies, so ``except TransientError`` catches every retryable
failure in the project.

Messages name the thing at fault in the user's words ("property 'slot.name' ...", "topic
'shop.public.orders' ..."), and never contain a credential.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

ErrorCategory = Literal["transient", "terminal"]


class LakecdcError(Exception):
    """Base of every lakecdc exception; ``category`` tells retry logic what to do."""

    category: ErrorCategory = "terminal"

    @property
    def is_transient(self) -> bool:
        return self.category == "transient"


class TransientError(LakecdcError):
    """Retrying the same operation later may succeed."""

    category: ErrorCategory = "transient"


class TerminalError(LakecdcError):
    """Retrying the same operation cannot succeed; stop and report."""

    category: ErrorCategory = "terminal"


class ConfigError(TerminalError, ValueError):
    """A configuration property is unknown, missing or invalid.

    ``property_name`` is the Debezium dotted name at fault when there is a single one.
    """

    def __init__(self, message: str, property_name: str | None = None) -> None:
        super().__init__(message)
        self.property_name = property_name


class SecretResolutionError(ConfigError):
    """A secret reference (``env:NAME`` / ``file:PATH``) cannot be resolved."""


class MissingExtraError(TerminalError, ImportError):
    """An optional dependency is not installed; the message carries the pip command."""

    def __init__(self, feature: str, extra: str, cause: str | None = None) -> None:
        hint = f"{feature} needs the '{extra}' extra: pip install 'lakecdc[{extra}]'"
        super().__init__(f"{hint} ({cause})" if cause else hint)
        self.feature = feature
        self.extra = extra


class SinkError(LakecdcError):
    """Base for failures of a capture output (Kafka, JSON lines)."""


class SinkTransientError(SinkError, TransientError):
    """The sink could not accept records now (broker unreachable, timeout); retry later.

    Nothing since the last successful flush may be acknowledged; the capture re-sends from its
    last committed position. ``failures`` lists ``(topic, reason)`` pairs when records failed.
    """

    def __init__(self, message: str, failures: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []


class SinkDeliveryError(SinkError, TerminalError):
    """The sink rejected records; nothing after them may be acknowledged to the source.

    ``failures`` lists ``(topic, reason)`` pairs, one per distinct failure.
    """

    def __init__(self, message: str, failures: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []


class RecordConversionError(SinkDeliveryError):
    """The sink's converter cannot encode a record's key or value (Kafka Connect's ``KEY_CONVERTER`` /
    ``VALUE_CONVERTER`` stage failing). ``record`` is the record at fault; a sink's ``send`` raises it
    having accepted exactly the records before ``record`` in the batch, so the caller can skip it
    (``errors.tolerance=all``) and send the rest."""

    def __init__(self, message: str, record: object, part: str) -> None:
        super().__init__(message, [(getattr(record, "topic", "?"), message)])
        self.record = record
        self.part = part


class TopicCreationError(SinkError, TerminalError):
    """The broker refused to create a topic (authorization, invalid configuration, ...)."""


class SourceError(LakecdcError):
    """Base for failures talking to a source database; connectors subclass it."""


class SourceTransientError(SourceError, TransientError):
    """The source is temporarily unavailable (connection lost, restart); reconnect with backoff."""


class SourceTerminalError(SourceError, TerminalError):
    """The source cannot be captured as configured (privilege, missing slot, WAL removed, ...)."""


class IngestError(LakecdcError):
    """Base for failures of the lakehouse ingest job; ingest/writers subclass it."""


class SchemaEvolutionError(IngestError, TerminalError):
    """A table's schema changed incompatibly; only that table stops."""


class ConformanceError(TerminalError):
    """The conformance oracle (real Debezium) failed to run; carries the log excerpt."""


class SparkSetupError(TerminalError):
    """A local Spark session cannot be set up: the installed PySpark is not a supported line, or a jar it
    needs (Iceberg's runtime, a connector's, the SQLite JDBC driver) is missing or could not be built.

    The message names the jar or line and the step that provides it (usually ``scripts/bootstrap.sh``);
    ``log_path`` is the tool's log when one ran (jarjar).
    """

    def __init__(self, reason: str, log_path: Path | None = None) -> None:
        self.reason = reason
        self.log_path = log_path
        super().__init__(reason + (f" (log: {log_path})" if log_path is not None else ""))


def is_transient(error: BaseException) -> bool:
    """True when ``error`` is a lakecdc error that a retry may fix.

    Foreign exceptions are treated as terminal: a retry loop must not spin on a bug.
    """
    return isinstance(error, LakecdcError) and error.is_transient
