"""The LogMiner session's lifetime (Debezium's ``log.mining.session.max.ms`` and
``log.mining.restart.connection``).

* ``log.mining.session.max.ms`` (0 = none): a LogMiner session is ended (``DBMS_LOGMNR.END_LOGMNR``,
  releasing the PGA it holds) and started again once it has been open that long. lakecdc starts a
  session per window, so the limit bites within a window (a large window, or one paused while a big
  transaction is handed over): the new session resumes after the last SCN whose rows were all read.
* ``log.mining.restart.connection``: at such a session restart, and at a log switch between windows,
  the mining connection is closed and opened again (Oracle frees the session's memory only then).
"""

from __future__ import annotations

from collections.abc import Callable


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
