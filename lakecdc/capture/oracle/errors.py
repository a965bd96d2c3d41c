"""Errors of the Oracle connector; each names the thing at fault and, where one exists, the SQL
that fixes it."""

from __future__ import annotations

from lakecdc.errors import SourceTerminalError, SourceTransientError, TerminalError

__all__ = [
    "DmlParseError",
    "OracleConnectError",
    "OracleConnectionLostError",
    "OracleDdlParseError",
    "OraclePrerequisiteError",
    "OracleTypeError",
    "UnknownTableError",
]


class OracleTypeError(TerminalError):
    """A column type cannot be mapped to a Connect schema."""


class OraclePrerequisiteError(SourceTerminalError):
    """The database is not set up for LogMiner capture (ARCHIVELOG, supplemental logging,
    privileges); the message lists every missing item with the SQL that fixes it."""

    def __init__(self, missing: list[tuple[str, str]]) -> None:
        self.missing = missing
        lines = [f"  - {what}\n      fix: {fix}" for what, fix in missing]
        super().__init__("the Oracle database is not ready for LogMiner capture:\n" + "\n".join(lines))


class DmlParseError(TerminalError):
    """A SQL_REDO statement could not be parsed; the message quotes it (values are the user's data,
    never credentials)."""


class UnknownTableError(SourceTerminalError):
    """A LogMiner row names a captured table whose structure the connector does not know."""


class OracleConnectionLostError(SourceTransientError):
    """The connection dropped; reconnect and resume from the last committed offset."""


class OracleConnectError(SourceTerminalError):
    """Connecting failed for a reason retrying cannot fix (bad credentials, unknown service)."""


class OracleDdlParseError(TerminalError):
    """A DDL statement mined by LogMiner could not be parsed; names the statement and its SCN
    (``schema.history.internal.skip.unparseable.ddl=true`` skips it instead)."""

    def __init__(self, reason: str, statement: str, scn: int | None = None) -> None:
        self.reason = reason
        self.statement = statement
        self.scn = scn
        where = f" at SCN {scn}" if scn is not None else ""
        super().__init__(f"cannot parse Oracle DDL{where}: {reason}; statement: {statement}")

    def at(self, scn: int) -> OracleDdlParseError:
        return OracleDdlParseError(self.reason, self.statement, scn)
