"""Blocking snapshots on SQL Server (``execute-snapshot`` with ``"type": "blocking"``): streaming
waits while the named tables (``db.schema.table``) are read whole as the initial snapshot reads them
(``SqlServerSnapshotSource.blocking``), every row at the signal's commit LSN with the initial
snapshot's markers (``first``, ``true``, ``last`` ...), then streaming goes on after the signal. As
in Debezium, changes committed between the signal and the read are in the snapshot and streamed
again afterwards (at least once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from lakecdc.capture.signals import parse_table_id
from lakecdc.capture.sqlserver.database_schema import DatabaseSchema
from lakecdc.capture.sqlserver.snapshot import SqlServerSnapshotSource

log = logging.getLogger(__name__)


def blocking_snapshot(config: Any, schema: DatabaseSchema, connect: Callable[[], Any],
                      headers: list[tuple[str, bytes]], tables: list[str], lsn: int,
                      selects: dict[str, str]) -> list[Any]:
    """The ``r`` records of ``tables`` at commit LSN ``lsn``; ``selects`` the SELECT statements of the
    signal's additional conditions (``capture/blocking.py``: a refused one raises
    BlockingSnapshotError)."""
    keys = [(t.schema or "dbo", t.table) for t in map(parse_table_id, tables)]
    records: list[Any] = []
    started = time.monotonic()
    source = SqlServerSnapshotSource(config, schema, connect, show_progress=False, headers=headers, selects=selects)
    rows = source.blocking(records.extend, keys, lsn)
    log.info("blocking snapshot completed: %d rows from %d tables in %.1f s; streaming resumes", rows, len(keys),
             time.monotonic() - started)
    return records
