"""Blocking snapshots on MySQL/MariaDB (``execute-snapshot`` with ``"type": "blocking"``): streaming
stops at the signal, the named tables are read whole in one ``START TRANSACTION WITH CONSISTENT
SNAPSHOT`` (no lock: the structures are the schema history's as of the signal) as ``op "r"``
records with the initial snapshot's markers (``first``, ``true``, ``last`` ...) and the signal's
binlog coordinates, then streaming goes on after the signal. As in Debezium, changes committed
between the signal and the read are in the snapshot and streamed again afterwards (at least once).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lakecdc.capture.mysql import connection as myconn
from lakecdc.capture.mysql.database_schema import DatabaseSchema
from lakecdc.capture.mysql.snapshot import MySqlSnapshotSource
from lakecdc.capture.signals import parse_table_id
from lakecdc.events.positions import MySqlPosition

log = logging.getLogger(__name__)


def blocking_snapshot(config: Any, schema: DatabaseSchema, tables: list[str], position: MySqlPosition,
                      selects: dict[str, str]) -> list[Any]:
    """The ``r`` records of ``tables`` (``db.table``) as of now, at the signal's ``position``;
    ``selects`` the SELECT statements of its additional conditions (``capture/blocking.py``)."""
    records: list[Any] = []
    captured = [(t.schema or "", t.table) for t in map(parse_table_id, tables)]
    started = time.monotonic()
    conn = myconn.connect(config, conv=myconn.row_decoders())
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        reader = MySqlSnapshotSource(config, schema, show_progress=False, selects=selects)
        rows = reader.scan(conn, records.extend, captured, position)
        conn.commit()
    finally:
        conn.close()
    log.info("blocking snapshot completed: %d rows from %d tables in %.1f s; streaming resumes", rows, len(tables),
             time.monotonic() - started)
    return records
