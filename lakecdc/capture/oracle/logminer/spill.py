"""A local store for the LogMiner rows of large open transactions (``log.mining.buffer.type=sqlite``).

Debezium keeps its transaction buffer on the JVM heap (``memory``) or in an off-heap/persistent cache
(``ehcache``, ``infinispan_*``) so that a batch job's million-row transaction does not exhaust memory.
lakecdc's equivalent is one SQLite file: a transaction whose buffered rows pass
``log.mining.buffer.memory.threshold`` moves them here, and its later rows are appended here; at
COMMIT they are read back in redo order, a page at a time.

The file is scratch space, never a source of truth: a restart re-mines every open transaction from
its first change (the offset's SCN is before the oldest one), so nothing in it is read after a
restart. Writes are not synced (a crash loses nothing that matters). On a clean stop the file is
removed when ``log.mining.buffer.drop.on.stop=true``, and kept otherwise (to look at); a start
always begins with an empty file.
"""

from __future__ import annotations

import logging
import pickle
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: rows read back per query at COMMIT (what is held in memory while a spilled transaction is emitted)
PAGE = 1000


class SpillStore:
    def __init__(self, path: str | Path | None = None, *, name: str = "lakecdc-logminer") -> None:
        self.path = Path(path) if path is not None else Path(tempfile.gettempdir()) / f"{name}.sqlite"
        self.path.unlink(missing_ok=True)  # a previous run's rows are re-mined, never reused
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE rows (seq INTEGER PRIMARY KEY, xid TEXT NOT NULL, row_id TEXT, data BLOB NOT NULL);"
            "CREATE INDEX rows_by_xid ON rows (xid, seq);")
        log.info("LogMiner transactions larger than the memory threshold are buffered in %s", self.path)

    def append(self, xid: str, rows: Iterable[dict[str, Any]]) -> None:
        self._db.executemany("INSERT INTO rows (xid, row_id, data) VALUES (?, ?, ?)",
                             ((xid, row.get("ROW_ID"), pickle.dumps(row, pickle.HIGHEST_PROTOCOL)) for row in rows))

    def undo_last(self, xid: str, row_id: Any) -> bool:
        """Remove the newest row of ``xid`` with ``row_id`` (a rollback to savepoint undoes it)."""
        cursor = self._db.execute(
            "DELETE FROM rows WHERE seq = (SELECT max(seq) FROM rows WHERE xid = ? AND row_id IS ?)", (xid, row_id))
        return cursor.rowcount > 0

    def rows(self, xid: str) -> Iterator[dict[str, Any]]:
        """The rows of ``xid`` in the order they were added, read ``PAGE`` at a time."""
        last = -1
        while True:
            page = self._db.execute("SELECT seq, data FROM rows WHERE xid = ? AND seq > ? ORDER BY seq LIMIT ?",
                                    (xid, last, PAGE)).fetchall()
            if not page:
                return
            for seq, data in page:
                yield pickle.loads(data)
            last = page[-1][0]

    def discard(self, xid: str) -> None:
        self._db.execute("DELETE FROM rows WHERE xid = ?", (xid,))

    def count(self, xid: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM rows WHERE xid = ?", (xid,)).fetchone()[0])

    def close(self, drop: bool) -> None:
        self._db.close()
        if drop:
            self.path.unlink(missing_ok=True)
