"""Errors raised by the local development stack."""

from __future__ import annotations

from pathlib import Path


class DevStackError(RuntimeError):
    """Base class for every devstack failure."""


class PartStartError(DevStackError):
    """A devstack part (broker, postgres, mariadb, spark jars) failed to start.

    The message always names the part, the reason and where its log is, e.g.
    ``postgres failed to start: server exited with code 1 (log: /tmp/lakecdc-postgres-x1.log)``.
    """

    def __init__(self, part: str, reason: str, log_path: Path | None = None) -> None:
        self.part = part
        self.reason = reason
        self.log_path = log_path
        where = f" (log: {log_path})" if log_path is not None else ""
        super().__init__(f"{part} failed to start: {reason}{where}")
