"""Blocking snapshots (``execute-snapshot`` with ``"type": "blocking"``): streaming stops at the
signal, the named tables are read whole in one ``REPEATABLE READ`` transaction as ``op "r"``
records (the initial snapshot's markers: ``first``, ``true``, ``last`` ...), then streaming goes on
after the signal. As in Debezium, changes committed between the signal and the read are in the
snapshot and streamed again afterwards (at least once). Records carry the signal's position, so
the offset does not move backwards.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.snapshot import PostgresSnapshotSource
from lakecdc.capture.postgres.table_schema import TableSchemas
from lakecdc.capture.postgres.types import TypeModes
from lakecdc.capture.signals import parse_table_id
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


def blocking_snapshot(conn: Any, config: PostgresConnectorConfig, modes: TypeModes, namer: TopicNamer,
                      schemas: TableSchemas, headers: list[tuple[str, bytes]], tables: list[str],
                      position: PostgresPosition | None, selects: dict[str, str]) -> list[Any]:
    """The ``r`` records of ``tables`` as of now, read on ``conn`` (an autocommit connection);
    ``position`` is the signal's; ``selects`` the SELECT statements of its additional conditions
    (``capture/blocking.py``: a refused one raises BlockingSnapshotError, the transaction rolled back)."""
    records: list[Any] = []
    reader = PostgresSnapshotSource(config, modes, namer, show_progress=False, headers=headers, selects=selects)
    started = time.monotonic()
    lsn = position.lsn if position is not None else 0
    tx_id = position.tx_id if position is not None and position.tx_id is not None else 0
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = reader.read_tables(conn, schemas, [parse_table_id(t) for t in tables], records.extend, lsn, tx_id,
                                  time.time_ns() // 1000)
    log.info("blocking snapshot completed: %d rows from %d tables in %.1f s; streaming resumes", rows, len(tables),
             time.monotonic() - started)
    return records
