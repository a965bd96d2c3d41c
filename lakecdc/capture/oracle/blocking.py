"""Blocking snapshots on Oracle (``execute-snapshot`` with ``"type": "blocking"``): streaming waits
while the named tables (``db.schema.table``) are read whole as the initial snapshot reads them
(``OracleSnapshotSource.blocking``), ``AS OF SCN`` the signal's commit (a Kafka signal: the restart
SCN), with the initial snapshot's markers; their rows go out after the signal's own event.
Transactions committed after that SCN are streamed next, so nothing is missed or read twice (except
changes of the signal's own transaction that follow the signal row).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.snapshot import OracleSnapshotSource
from lakecdc.capture.oracle.table_schema import TableSchemas
from lakecdc.capture.oracle.types import TypeModes
from lakecdc.capture.signals import parse_table_id
from lakecdc.events.topics import TopicNamer

log = logging.getLogger(__name__)


def blocking_snapshot(config: OracleConnectorConfig, modes: TypeModes, namer: TopicNamer,
                      schemas: TableSchemas, headers: list[tuple[str, bytes]], tables: list[str], scn: int,
                      selects: dict[str, str]) -> list[Any]:
    """The ``r`` records of ``tables`` as of ``scn``; ``selects`` the SELECT statements of the signal's
    additional conditions (``capture/blocking.py``)."""
    table_schemas = [schemas.get(t.schema or "", t.table) for t in map(parse_table_id, tables)]
    records: list[Any] = []
    started = time.monotonic()
    source = OracleSnapshotSource(config, modes, namer, show_progress=False, headers=headers, selects=selects)
    rows = source.blocking(records.extend, table_schemas, scn)
    log.info("blocking snapshot completed: %d rows from %d tables as of SCN %d in %.1f s; streaming resumes",
             rows, len(table_schemas), scn, time.monotonic() - started)
    return records
