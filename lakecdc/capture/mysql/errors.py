"""Errors of the MySQL/MariaDB connector; each names the thing at fault in the user's words."""

from __future__ import annotations

from lakecdc.capture.mysql.ddl.cursor import DdlParseError
from lakecdc.errors import SourceTerminalError, SourceTransientError, TerminalError

__all__ = [
    "BinlogPurgedError",
    "DdlParseError",
    "MySqlConnectionLostError",
    "MySqlPrivilegeError",
    "MySqlSetupError",
    "MySqlTypeError",
    "UnknownTableError",
]


class MySqlTypeError(TerminalError):
    """A column type or type-mapping property cannot be handled."""


class MySqlSetupError(SourceTerminalError):
    """The server is not configured for capture (binlog off, binlog_format not ROW, ...)."""


class MySqlPrivilegeError(SourceTerminalError):
    """The capture user lacks a privilege (REPLICATION SLAVE/CLIENT, RELOAD, LOCK TABLES, SELECT)."""


class BinlogPurgedError(SourceTerminalError):
    """The stored binlog position is no longer on the server (files purged while stopped)."""


class MySqlConnectionLostError(SourceTransientError):
    """The connection to the server dropped; reconnect and resume from the last committed position."""


class UnknownTableError(SourceTerminalError):
    """A row event names a table whose structure the schema history does not know."""
