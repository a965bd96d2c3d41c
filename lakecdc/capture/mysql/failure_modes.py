"""What a binlog event the connector cannot use does: Debezium's ``inconsistent.schema.handling.mode``
(a row change of a captured table whose structure the schema history does not know) and
``event.deserialization.failure.handling.mode`` (an event the binlog client cannot decode).

Both follow Debezium's ``EventProcessingFailureHandlingMode``: ``fail`` (the default) stops the
capture with an error naming the event's binlog position; ``warn`` logs the event's position and
skips it; ``skip`` / ``ignore`` skip it silently (logged at debug). A lost connection or an error the
server reports is never an event failure: it is raised whatever the mode.
"""

from __future__ import annotations

import logging

from lakecdc.capture.mysql.errors import UnknownTableError
from lakecdc.errors import SourceTerminalError

log = logging.getLogger(__name__)


class BinlogDeserializationError(SourceTerminalError):
    """A binlog event could not be decoded (``event.deserialization.failure.handling.mode=fail``)."""


def is_source_error(error: BaseException) -> bool:
    """Connection and server errors (PyMySQL's MySQLError family, socket errors): not an event's fault."""
    import pymysql

    return isinstance(error, (pymysql.err.MySQLError, OSError, EOFError))


def on_unknown_table(mode: str, table: str, where: str) -> None:
    """A row change of captured ``table`` at ``where`` (``file:pos``) has no known structure."""
    what = (f"a row change of table '{table}' at {where} cannot be decoded: the schema history has no structure "
            "for it (created before the history began, or left out of it?)")
    if mode == "fail":
        raise UnknownTableError(f"{what}; set snapshot.mode=recovery or take a new snapshot "
                                "(inconsistent.schema.handling.mode=warn or skip go past it)")
    if mode == "warn":
        log.warning("%s; skipped (inconsistent.schema.handling.mode=warn). View it with: mysqlbinlog "
                    "--start-position=%s --verbose %s", what, where.rpartition(":")[2], where.rpartition(":")[0])
    else:
        log.debug("%s; skipped (inconsistent.schema.handling.mode=%s)", what, mode)


def on_undecodable_event(mode: str, error: BaseException, where: str) -> None:
    """The event at ``where`` could not be decoded (``error``, not a source error)."""
    what = f"the binlog event at {where} could not be decoded: {type(error).__name__}: {error}"
    if mode == "fail":
        raise BinlogDeserializationError(
            f"{what} (event.deserialization.failure.handling.mode=fail; warn or skip go past it)") from error
    if mode == "warn":
        log.warning("%s; skipped (event.deserialization.failure.handling.mode=warn)", what)
    else:
        log.debug("%s; skipped (event.deserialization.failure.handling.mode=%s)", what, mode)
