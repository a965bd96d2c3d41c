"""Time limits on LogMiner mining (Debezium's ``log.mining.window.max.ms``, ``log.mining.session.max.ms``
and ``log.mining.restart.connection``).

* ``log.mining.window.max.ms`` (0 = none): a mining window spans at most that much database time from
  its start SCN: the end SCN is capped at ``TIMESTAMP_TO_SCN(SCN_TO_TIMESTAMP(start) + max)``, so a
  connector far behind mines the backlog in time-bounded steps whatever the SCN rate. When Oracle
  cannot map the SCN to a time (older than its SCN-time mapping) or the limit lies in the future,
  the window keeps its SCN bound.
* ``log.mining.session.max.ms`` (0 = none): a LogMiner session is ended (``DBMS_LOGMNR.END_LOGMNR``,
  releasing the PGA it holds) and started again once it has been open that long. lakecdc starts a
  session per window, so the limit bites within a window (a large window, or one paused while a big
  transaction is handed over): the new session resumes after the last SCN whose rows were all read.
* ``log.mining.restart.connection``: at such a session restart, and at a log switch between windows,
  the mining connection is closed and opened again (Oracle frees the session's memory only then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lakecdc.capture.oracle.connection import OracleConnection
from lakecdc.capture.oracle.errors import OracleConnectionLostError

log = logging.getLogger(__name__)

SQL_SCN_AFTER = ("SELECT TIMESTAMP_TO_SCN(SCN_TO_TIMESTAMP(:start_scn) + NUMTODSINTERVAL(:window_seconds, 'SECOND')) "
                 "AS SCN FROM DUAL")


def window_end(conn: OracleConnection, start_scn: int, end_scn: int, window_max_ms: int) -> int:
    """``end_scn`` capped by ``log.mining.window.max.ms`` (at least one SCN past ``start_scn``)."""
    if not window_max_ms:
        return end_scn
    try:
        capped = conn.scalar(SQL_SCN_AFTER, {"start_scn": start_scn, "window_seconds": window_max_ms / 1000})
    except OracleConnectionLostError:
        raise
    except Exception as exc:  # noqa: BLE001 - ORA-08181/08180: no SCN-time mapping there; the SCN bound stays
        log.debug("log.mining.window.max.ms: no SCN for SCN %d + %d ms (%s)", start_scn, window_max_ms, exc)
        return end_scn
    if capped is None:
        return end_scn
    return max(start_scn + 1, min(end_scn, int(capped)))


class SessionTimer:
    """How long the current LogMiner session has been open, against ``log.mining.session.max.ms``."""

    def __init__(self, max_ms: int, clock: Callable[[], float]) -> None:
        self.max_ms = max_ms
        self._clock = clock
        self._started = clock()

    def started(self) -> None:
        self._started = self._clock()

    def expired(self) -> bool:
        return bool(self.max_ms) and (self._clock() - self._started) * 1000 >= self.max_ms
