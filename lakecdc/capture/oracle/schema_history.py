"""The Oracle connector's schema history: each DDL statement LogMiner delivered for a table (and a
CREATE TABLE per captured table at each snapshot), with its SCN, replayed on restart so that the
redo mined after the restart SCN is decoded with the table structures of that SCN.

Record position (the store is shared with MySQL, ``lakecdc.transport.history_store``)::

    {"scn": "2122195"}                                          a DDL mined at SCN 2122195
    {"scn": "2122190", "snapshot": true, "snapshot_first": true}  the first table of a snapshot

``recover(restart_scn)`` applies the latest snapshot's records and every later DDL record whose SCN
is at or below the restart SCN; newer ones are left out because the mining after the restart
delivers their DDL again (recording it once more: a record seen twice is applied once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from lakecdc.capture.oracle.ddl.model import OracleTables
from lakecdc.capture.oracle.ddl.parser import OracleDdlParser
from lakecdc.capture.oracle.errors import OracleDdlParseError
from lakecdc.transport.history_store import HistoryRecord, HistoryStore, open_store

log = logging.getLogger(__name__)


class OracleSchemaHistory:
    def __init__(self, store: HistoryStore, skip_unparseable_ddl: bool = False) -> None:
        self.store = store
        self.skip_unparseable_ddl = skip_unparseable_ddl

    def record(self, scn: int, db: str, owner: str, ddl: str, table_changes: Iterable[dict[str, Any]],
               snapshot: bool = False, first: bool = False) -> None:
        position: dict[str, Any] = {"scn": str(scn)}
        if snapshot:
            position["snapshot"] = True
            if first:
                position["snapshot_first"] = True
        self.store.append(HistoryRecord(position, db, ddl, list(table_changes), time.time_ns() // 1_000_000,
                                        schema=owner))

    def exists(self) -> bool:
        return self.store.exists()

    def recover(self, restart_scn: int, tables: OracleTables) -> int:
        """Rebuild ``tables`` as of ``restart_scn``; returns how many statements were applied."""
        records = list(self.store.records())
        start = 0
        for i, rec in enumerate(records):
            if rec.is_snapshot and rec.position.get("snapshot_first"):
                start = i
        parser = OracleDdlParser(tables)
        seen: set[tuple[int, str]] = set()
        applied = 0
        for rec in records[start:]:
            scn = int(rec.position["scn"])
            if not rec.is_snapshot and scn > restart_scn:
                continue
            if (scn, rec.ddl) in seen:
                continue  # recorded twice: mined again after a restart before the offset moved past it
            seen.add((scn, rec.ddl))
            try:
                parser.parse(rec.ddl, rec.schema or "")
            except OracleDdlParseError as exc:
                if self.skip_unparseable_ddl:
                    log.warning("skipping unparseable DDL from the schema history: %s", exc.at(scn))
                    continue
                raise exc.at(scn) from None
            applied += 1
        return applied

    def close(self) -> None:
        self.store.close()


def open_history(config: Any) -> OracleSchemaHistory:
    """The store ``schema.history.internal.*`` names (a file, a Kafka topic, or memory)."""
    return OracleSchemaHistory(open_store(config), config.schema_history_internal_skip_unparseable_ddl)
