"""PostgreSQL capture failures, each naming the object at fault and what fixes it.

Transient ones (lost connection, server restarting) are retried by the runner with backoff;
terminal ones stop the capture with the message shown to the user.
"""

from __future__ import annotations

import re
from typing import NoReturn

from lakecdc.errors import SourceTerminalError, SourceTransientError

_PASSWORD_IN_CONNINFO = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def scrub(message: str) -> str:
    """Remove any ``password=...`` a libpq message might echo back."""
    return _PASSWORD_IN_CONNINFO.sub(r"\1***", message)


class ReplicationConnectionLost(SourceTransientError):
    """The replication connection dropped (network, server restart); reconnect and resume."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"lost the PostgreSQL replication connection: {scrub(detail).strip()}")


class PostgresUnavailable(SourceTransientError):
    """PostgreSQL refused or dropped a connection; it may be restarting."""


class SlotMissingError(SourceTerminalError):
    """The replication slot holding our position no longer exists."""


class SlotInUseError(SourceTransientError):
    """Another process is streaming from the slot (e.g. a previous capture still shutting down)."""


class WalRemovedError(SourceTerminalError):
    """PostgreSQL already removed WAL the stored offset needs."""


class PublicationMissingError(SourceTerminalError):
    """The publication named by ``publication.name`` does not exist."""


class PrivilegeError(SourceTerminalError):
    """The capture user lacks privileges; the message lists the GRANTs that fix it."""


class LsnFlushTimeoutError(SourceTerminalError):
    """Confirming the flushed LSN to the slot took longer than ``lsn.flush.timeout.ms``
    (``lsn.flush.timeout.action=fail``)."""


class PostgresCaptureError(SourceTerminalError):
    """Any other PostgreSQL failure that retrying cannot fix."""


def raise_for_replication_error(message: str, during: str) -> NoReturn:
    """Map a libpq error text to the lakecdc error a user can act on."""
    text = scrub(message).strip()
    lowered = text.lower()
    if "replication slot" in lowered and "does not exist" in lowered:
        raise SlotMissingError(
            f"{during}: {text}. The slot was dropped while lakecdc was stopped; the changes it "
            "held are lost. Use snapshot.mode=when_needed (or always) to re-snapshot, or "
            "initial after deleting the stored offsets."
        )
    if "is active for pid" in lowered or "already active" in lowered:
        raise SlotInUseError(f"{during}: {text}")
    if "publication" in lowered and "does not exist" in lowered:
        raise PublicationMissingError(
            f"{during}: {text}. Create it (CREATE PUBLICATION ...) or set "
            "publication.autocreate.mode=filtered|all_tables so lakecdc creates it."
        )
    if "has already been removed" in lowered or "requested wal segment" in lowered:
        raise WalRemovedError(
            f"{during}: {text}. PostgreSQL no longer has the WAL after the stored offset; "
            "re-snapshot with snapshot.mode=when_needed or always."
        )
    if "permission denied" in lowered or "must be superuser or replication" in lowered or (
        "must have replication" in lowered
    ):
        raise PrivilegeError(
            f"{during}: {text}. Fix: ALTER ROLE <capture user> WITH REPLICATION;"
        )
    if "password authentication failed" in lowered or (
        "database" in lowered and "does not exist" in lowered
    ):
        raise PostgresCaptureError(f"{during}: {text}")
    if (
        "terminating connection" in lowered
        or "server closed the connection" in lowered
        or "connection refused" in lowered
        or "could not connect" in lowered
        or "the database system is" in lowered
        or "no connection to the server" in lowered
        or "ssl syscall" in lowered
        or "connection to server" in lowered
    ):
        raise PostgresUnavailable(f"{during}: {text}")
    raise PostgresCaptureError(f"{during}: {text}")
