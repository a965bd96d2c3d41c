"""Errors of the SQL Server connector; each names the thing at fault and, for setup problems, the
T-SQL that fixes it."""

from __future__ import annotations

from lakecdc.errors import SourceTerminalError, SourceTransientError, TerminalError

__all__ = [
    "CdcNotEnabledError",
    "SqlServerConnectionLostError",
    "SqlServerSetupError",
    "SqlServerTypeError",
]


class SqlServerTypeError(TerminalError):
    """A column type cannot be mapped to a Connect schema."""


class SqlServerSetupError(SourceTerminalError):
    """The server is not ready for capture (no LSN yet: SQL Server Agent not running, ...)."""


class CdcNotEnabledError(SqlServerSetupError):
    """CDC is not enabled on the database, or on a table the configuration asks for."""


class SqlServerConnectionLostError(SourceTransientError):
    """The connection dropped; reconnect and resume from the last committed position."""
