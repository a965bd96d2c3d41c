"""Keep credentials out of logs and error texts.

Every secret value lakecdc learns (a literal password in a config file, or the resolved value of
``env:``/``file:`` references) is registered here; :func:`redact` replaces each registered value,
plus any ``password=...`` conninfo pair or ``user:password@`` URL part, with ``******``.
:class:`SecretRedactingFilter` applies that to log records, including their arguments and
formatted tracebacks, so a driver exception that echoes a DSN cannot leak it.

Install once at process start (the capture runner does)::

    from lakecdc.config.redact import install_log_redaction
    install_log_redaction()   # every record scrubbed at creation, whatever handler writes it
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

MASK = "******"
# Masking one- to three-character values would shred every log line; such values are refused as
# secrets by nobody, but cannot be recognised reliably inside free text.
MIN_SECRET_LENGTH = 4

_lock = threading.Lock()
_known: set[str] = set()
_pattern: re.Pattern[str] | None = None

_CONNINFO_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)")
_URL_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^:/@\s]+:)([^@/\s]+)(@)")


def register_secret(value: str | None) -> None:
    """Remember ``value`` so :func:`redact` masks it from now on."""
    global _pattern
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    with _lock:
        if value in _known:
            return
        _known.add(value)
        ordered = sorted(_known, key=len, reverse=True)  # longest first: no partial leftovers
        _pattern = re.compile("|".join(re.escape(v) for v in ordered))


def forget_secrets() -> None:
    """Drop every registered value (for tests)."""
    global _pattern
    with _lock:
        _known.clear()
        _pattern = None


def redact(text: str) -> str:
    """``text`` with every known secret and DSN password replaced by ``******``.

    >>> register_secret("s3cr3t!")
    >>> redact("connect failed: host=db password=s3cr3t! for postgres://u:s3cr3t!@db/x")
    'connect failed: host=db password=****** for postgres://u:******@db/x'
    """
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    return _URL_USERINFO.sub(lambda m: m.group(1) + MASK + m.group(3), text)


class ConnectionString(str):
    """A DSN or URL that drivers read whole but whose ``repr`` hides the password, so tracebacks
    that print arguments (pytest, debuggers, ``logging.exception``) do not show it.

    >>> ConnectionString("host=db password=s3cr3t dbname=x")
    'host=db password=****** dbname=x'
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(redact(str.__str__(self)))


class SecretRedactingFilter(logging.Filter):
    """Rewrites each record's message (args merged in) and traceback text with secrets masked."""

    def __init__(self) -> None:
        super().__init__("lakecdc.redact")
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not hide the record
            message = f"{record.msg} {record.args}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact(self._formatter.formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_factory_lock = threading.Lock()
_factory_installed = False
_previous_factory: Callable[..., logging.LogRecord] | None = None


def install_log_redaction(logger: logging.Logger | None = None) -> SecretRedactingFilter:
    """Redact every log record from now on, whatever handler writes it. Idempotent.

    Two layers: the log record factory is wrapped so each record is scrubbed when it is created
    (this covers handlers added later, by the CLI or a library), and a
    :class:`SecretRedactingFilter` is attached to the existing handlers of ``logger`` (default
    root): handler filters also see records propagated from child loggers.
    """
    global _factory_installed, _previous_factory
    with _factory_lock:
        if not _factory_installed:
            previous = _previous_factory = logging.getLogRecordFactory()
            scrubber = SecretRedactingFilter()

            def redacting_factory(*args: object, **kwargs: object) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                scrubber.filter(record)
                return record

            logging.setLogRecordFactory(redacting_factory)
            _factory_installed = True
    target = logger or logging.getLogger()
    installed: SecretRedactingFilter | None = None
    for handler in target.handlers:
        existing = [f for f in handler.filters if isinstance(f, SecretRedactingFilter)]
        if existing:
            installed = existing[0]
            continue
        installed = installed or SecretRedactingFilter()
        handler.addFilter(installed)
    return installed or SecretRedactingFilter()


def uninstall_log_redaction() -> None:
    """Restore the log record factory that was in place before :func:`install_log_redaction`."""
    global _factory_installed, _previous_factory
    with _factory_lock:
        if _factory_installed and _previous_factory is not None:
            logging.setLogRecordFactory(_previous_factory)
        _factory_installed = False
        _previous_factory = None
