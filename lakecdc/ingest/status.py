"""Where an ingest job stands, per source table, from the tables' own commits (no Spark).

``ingest_status(config_path)`` reads the job's state file (which topics it has seen, the
consistency point) and, for every table, the newest lakecdc commit of its silver table (bronze for
keyless tables): batch id, Kafka offsets, source position and source time, lag behind the source,
and row counts. ``lakecdc status --json`` prints it as::

    {"kind": "ingest", "name": "demo-ingest", "warehouse": "/data/lake", "batch_id": 41,
     "connector": "postgres", "applied_through_seq": [24023200, 24023128, 1, 0],
     "consistent_through": "0/16E8F80", "applied_through_source_ts": "2026-11-22T...",
     "held_events": 0, "state_updated_at": "2026-11-22T09:41:13.1+00:00",
     "tables": [{"topic": "demo.public.customers", "format": "iceberg", "silver": "silver.customers",
                 "bronze": "bronze.customers", "batch_id": 41,
                 "kafka_offsets": {"demo.public.customers": {"0": 1210}},
                 "max_seq": [24023200, 24023128, 1, 0], "complete_through": "0/16E8F80",
                 "source_ts_ms": 1795336045083,
                 "committed_at_ms": 1795336046120, "lag_ms": 1873, "silver_rows": 200,
                 "bronze_rows": 1211, "error": null}]}

Positions are printed in the source's notation (``lakecdc.audit.notation``): PostgreSQL LSNs,
MySQL ``file:pos``, SQL Server LSNs, Oracle SCNs. ``consistent_through`` is the job's consistency
point: every table is complete through it (``lakecdc.ingest.consistency``).

``lag_ms`` is now minus the source commit time of the newest change in silver: while the source is
idle it grows although nothing is pending (the capture status tells whether anything is).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.audit.notation import format_position
from lakecdc.config.ingest import IngestConfig, load_ingest_config
from lakecdc.ingest.job_state import load_state
from lakecdc.lake.naming import TableNamer
from lakecdc.lake.progress import CommitProgress
from lakecdc.metrics.table_commits import TableCommit, read_commit


@dataclass
class TableStatus:
    topic: str
    format: str
    silver: str | None
    bronze: str
    batch_id: int | None = None
    kafka_offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    max_seq: list[int] | None = None
    complete_through: str | None = None  # in the source's notation
    source_ts_ms: int | None = None
    committed_at_ms: int | None = None
    lag_ms: int | None = None
    silver_rows: int | None = None
    bronze_rows: int | None = None
    error: str | None = None


@dataclass
class IngestStatus:
    kind: str
    name: str
    warehouse: str
    batch_id: int = 0
    connector: str | None = None
    applied_through_seq: list[int] | None = None
    consistent_through: str | None = None  # applied_through_seq in the source's notation
    applied_through_source_ts: str | None = None
    held_events: int = 0
    state_updated_at: str | None = None
    tables: list[TableStatus] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_ingest_config(properties: dict[str, str]) -> bool:
    return "kafka.bootstrap.servers" in properties and "topic.prefix" in properties


def ingest_status(config: str | Path | IngestConfig, now_ms: int | None = None) -> IngestStatus:
    """The status of the ingest job configured in ``config`` (see the module docstring)."""
    cfg = load_ingest_config(config)
    if cfg.catalog_type != "hadoop":
        # The JDBC catalog keeps metadata locations in its database; only the path layout is read here.
        raise NotImplementedError(f"lakecdc status reads Iceberg tables of a hadoop (path) catalog; "
                                  f"catalog.type={cfg.catalog_type} is not supported yet")
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    state = load_state(cfg.progress_dir)
    status = IngestStatus("ingest", cfg.name, str(cfg.warehouse), state.batch_id, state.connector,
                          state.applied_through_seq,
                          format_position(state.connector, state.applied_through_seq)
                          if state.applied_through_seq else None,
                          _iso_ms(state.applied_through_source_ts_ms), state.held_events, state.updated_at)
    namer = TableNamer(cfg)
    for topic, keys in sorted(state.table_keys.items()):
        target = namer.target(topic, key_columns=tuple(keys))
        status.tables.append(_table_status(cfg, target, now_ms))
    return status


def _table_status(cfg: IngestConfig, target: Any, now_ms: int) -> TableStatus:
    table = TableStatus(target.topic, target.format, target.silver_table if target.has_key else None,
                        target.bronze_table)
    try:
        bronze = read_commit(target.format, cfg.warehouse, target.bronze_table, cfg.catalog)
        silver = read_commit(target.format, cfg.warehouse, target.silver_table, cfg.catalog) \
            if target.has_key else None
    except Exception as exc:  # noqa: BLE001 - one unreadable table must not hide the others
        table.error = f"{type(exc).__name__}: {exc}"
        return table
    table.bronze_rows = bronze.rows
    table.silver_rows = silver.rows if silver else None
    _fill_progress(table, silver if silver is not None else bronze, now_ms)
    return table


def _fill_progress(table: TableStatus, commit: TableCommit, now_ms: int) -> None:
    progress = CommitProgress.from_properties(commit.properties)
    if progress is None:
        table.error = None if commit.exists else "table not created yet"
        return
    table.batch_id = progress.batch_id
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(progress.offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    table.kafka_offsets = nested
    table.max_seq = list(progress.max_seq) if progress.max_seq else None
    through = progress.complete_through or progress.max_seq
    table.complete_through = format_position(progress.connector, through) if through else None
    table.source_ts_ms = progress.max_source_ts_ms
    table.committed_at_ms = commit.committed_at_ms
    if progress.max_source_ts_ms is not None:
        table.lag_ms = max(0, now_ms - progress.max_source_ts_ms)


def _iso_ms(ms: int | None) -> str | None:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat() if ms is not None else None
