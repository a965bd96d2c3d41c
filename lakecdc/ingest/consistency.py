"""The consistency log: after a batch's tables commit, where every table stands together, in the lake.

Each table commit records the source position it is complete through (``lakecdc.complete-through``,
``lakecdc.lake.progress``). A table the batch did not touch has no new commit, although it is
complete through the new position as well (no released transaction touched it). So after all tables
of a batch have committed, the job appends one row to ``lakecdc.consistency`` (the dead-letter
table's schema; Delta or Iceberg like the tables)::

    batch_id  job          connector  complete_through            position   published_at  versions
    41        shop-ingest  postgres   [99092032, 99091912, 1, 0]  0/5E80B40  2026-11-..    {"silver.accounts": 12,
                                                                                         "bronze.accounts": 30, ...}

It says: every table in ``versions`` holds, at that version, exactly the source transactions
committed at or before ``position`` -- reading those versions together gives a state the source had.
``stopped`` lists tables stopped by a schema error (not consistent; not in ``versions``). A version is
the Iceberg snapshot id or Delta version; a table not committed in this run yet is looked up from its
metadata (``lakecdc.metrics.table_commits``), or left out when that cannot be read (the audit then
reads it at an older point that lists it, or by its own commits' positions, ``lakecdc.audit.consistency``).
A point speaks only for the tables it lists: jobs sharing one log do not vouch for each other's tables.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampType

from lakecdc.audit.notation import format_position
from lakecdc.config.ingest import IngestConfig
from lakecdc.lake.batch import TableTarget

if TYPE_CHECKING:
    from lakecdc.writers.base import LakeWriter

log = logging.getLogger(__name__)

CONSISTENCY_TABLE = "consistency"
SCHEMA = StructType([
    StructField("batch_id", LongType()), StructField("job", StringType()), StructField("connector", StringType()),
    StructField("complete_through", ArrayType(LongType(), containsNull=False)),
    StructField("position", StringType()), StructField("published_at", TimestampType()),
    StructField("versions", StringType()), StructField("stopped", StringType()),
])


def consistency_table_name(dead_letter_table: str) -> str:
    """Beside the dead-letter table: ``lakecdc.dead_letters`` -> ``lakecdc.consistency``."""
    return dead_letter_table.rsplit(".", 1)[0] + "." + CONSISTENCY_TABLE


class ConsistencyLog:
    """Publishes the batch's consistency point (one row per batch whose point moved)."""

    def __init__(self, config: IngestConfig, writer: LakeWriter) -> None:
        self._config = config
        self._writer = writer
        self.table = consistency_table_name(writer.dead_letter_table)
        self._versions: dict[str, int] = {}
        self._published: tuple[int, ...] | None = None

    def record(self, target: TableTarget, bronze_version: int | None, silver_version: int | None) -> None:
        """A table commit of this batch (versions None: nothing committed)."""
        if bronze_version is not None:
            self._versions[target.bronze_table] = bronze_version
        if silver_version is not None:
            self._versions[target.silver_table] = silver_version

    def publish(self, batch_id: int, point: tuple[int, ...] | None, connector: str | None,
                targets: list[TableTarget], stopped: list[str]) -> bool:
        """Append the row for this batch when the point moved; returns whether a row was written."""
        if point is None or point == self._published:
            return False
        names = [n for t in targets for n in ((t.bronze_table, t.silver_table) if t.has_key else (t.bronze_table,))
                 if t.source_name not in stopped and t.topic not in stopped]
        formats = {n: t.format for t in targets for n in (t.bronze_table, t.silver_table)}
        for name in names:
            if name not in self._versions:
                version = self._stored_version(formats[name], name)
                if version is not None:
                    self._versions[name] = version
        versions = {n: self._versions[n] for n in sorted(names) if n in self._versions}
        row = (batch_id, self._config.name, connector, list(point), format_position(connector, point),
               datetime.now(timezone.utc), json.dumps(versions, sort_keys=True), json.dumps(sorted(stopped)))
        self._writer.append_log_rows(self.table, SCHEMA, [row])
        self._published = point
        log.info("consistent through %s (batch %d): %d table versions", row[4], batch_id, len(versions))
        return True

    def _stored_version(self, table_format: str, name: str) -> int | None:
        from lakecdc.metrics.table_commits import read_commit

        try:
            return read_commit(table_format, self._config.warehouse, name, self._config.catalog).version
        except Exception as exc:  # noqa: BLE001 - the audit falls back to finding the version by position
            log.debug("version of %s not readable from its metadata (%s)", name, exc)
            return None


def parse_versions(text: str | None) -> dict[str, int]:
    """The ``versions`` column -> {table: version}."""
    data: Any = json.loads(text) if text else {}
    return {str(k): int(v) for k, v in data.items()}
