"""Table versions and the source position each one reflects (DESIGN.md 2.9).

Every commit lakecdc makes carries ``lakecdc.progress``, ``lakecdc.batch-id``, ``lakecdc.max-seq`` and
``lakecdc.max-source-ts-ms`` (``lakecdc.ingest.progress``). Read back, they map each Iceberg snapshot /
Delta version to the source position through which it is complete::

    {"version": 5, "committed_at": "2026-11-22T10:01:02.345+00:00", "operation": "merge",
     "source_position": [24023200, 24023208, 0, 0], "source_ts_ms": 1700000000123, "batch_id": 3,
     "kafka_progress": {"shop.public.customers": {"0": 41}}, "rows_written": 12, "rows_removed": 2}

Commits lakecdc did not make (table creation, compaction) have no position: they reflect the
position of the lakecdc commit before them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from lakecdc.audit.tables import AuditError, LakeTable
from lakecdc.ingest.progress import CommitProgress

Position = tuple[int, ...]
_PG_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


@dataclass(frozen=True)
class TableVersion:
    """One commit of a table, with what lakecdc recorded in it."""

    version: int  # Iceberg snapshot id or Delta version
    committed_at: datetime
    operation: str
    source_position: Position | None = None  # lakecdc.max-seq: complete through this position
    source_ts_ms: int | None = None
    batch_id: int | None = None
    kafka_progress: dict[tuple[str, int], int] = field(default_factory=dict)
    rows_written: int | None = None
    rows_removed: int | None = None
    total_rows: int | None = None  # Iceberg: from the summary; Delta: not known without a scan

    @property
    def source_time(self) -> datetime | None:
        if self.source_ts_ms is None:
            return None
        return datetime.fromtimestamp(self.source_ts_ms / 1000, tz=timezone.utc)

    @property
    def lag_seconds(self) -> float | None:
        """Commit time minus the newest source commit it holds: how far the table trailed the source."""
        if self.source_time is None:
            return None
        return (self.committed_at - self.source_time).total_seconds()

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version, "committed_at": self.committed_at.isoformat(), "operation": self.operation,
            "source_position": list(self.source_position) if self.source_position else None,
            "source_ts_ms": self.source_ts_ms, "batch_id": self.batch_id,
            "kafka_progress": {f"{t}[{p}]": o for (t, p), o in sorted(self.kafka_progress.items())},
            "rows_written": self.rows_written, "rows_removed": self.rows_removed, "total_rows": self.total_rows,
        }


def parse_position(position: Any) -> Position:
    """A source position as the numeric tuple ``_seq`` uses.

    Accepts a ``lakecdc.events.positions`` object (``.seq()``), a tuple/list of ints, an int
    (PostgreSQL LSN, or the first ``_seq`` component), a PostgreSQL LSN text ``"0/16B3748"``, or
    ``"a,b,c,d"`` text. A shorter tuple is a prefix: ``(x,)`` is covered by every ``(x, ...)``.
    """
    if hasattr(position, "seq"):
        return tuple(int(v) for v in position.seq())
    if isinstance(position, bool):
        raise AuditError(f"source position {position!r} is not a position")
    if isinstance(position, int):
        return (position,)
    if isinstance(position, (tuple, list)):
        return tuple(int(v) for v in position)
    if isinstance(position, str):
        text = position.strip()
        match = _PG_LSN.match(text)
        if match:
            return ((int(match.group(1), 16) << 32) + int(match.group(2), 16),)
        try:
            return tuple(int(v) for v in text.split(","))
        except ValueError:
            pass
    raise AuditError(f"source position {position!r}: expected an LSN like 0/16B3748, an int, or 'a,b,c,d'")


def _from_props(version: int, committed_at: datetime, operation: str, props: dict[str, str],
                written: int | None, removed: int | None, total: int | None) -> TableVersion:
    progress = CommitProgress.from_properties(props)
    if progress is None:
        return TableVersion(version, committed_at, operation, rows_written=written, rows_removed=removed,
                            total_rows=total)
    return TableVersion(version, committed_at, operation, progress.max_seq, progress.max_source_ts_ms,
                        progress.batch_id, dict(progress.offsets), written, removed, total)


def _iceberg_versions(table: LakeTable) -> list[TableVersion]:
    if not table.exists():
        raise AuditError(f"{table} does not exist")
    rows = table.session.sql(
        f"SELECT snapshot_id, committed_at, operation, summary FROM {table.qualified}.snapshots "
        "ORDER BY committed_at, snapshot_id").collect()
    versions = []
    for row in rows:
        summary = dict(row["summary"] or {})
        committed = row["committed_at"]
        if committed.tzinfo is None:  # the session time zone is UTC (devstack); make it explicit
            committed = committed.replace(tzinfo=timezone.utc)
        deletes = int(summary.get("added-position-deletes", 0)) + int(summary.get("deleted-records", 0))
        total = None
        if "total-records" in summary:
            total = (int(summary["total-records"]) - int(summary.get("total-position-deletes", 0))
                     - int(summary.get("total-equality-deletes", 0)))
        versions.append(_from_props(int(row["snapshot_id"]), committed, row["operation"] or "", summary,
                                    int(summary.get("added-records", 0)), deletes, total))
    return versions


def _metric(metrics: dict[str, Any], *names: str) -> int:
    return sum(int(metrics.get(n) or 0) for n in names)


def _delta_versions(table: LakeTable) -> list[TableVersion]:
    history = table.delta_table().history()
    versions = []
    for commit in sorted(history, key=lambda c: c["version"]):
        metrics = commit.get("operationMetrics") or {}
        props = {k: v for k, v in commit.items() if isinstance(v, str)}
        committed = datetime.fromtimestamp(commit["timestamp"] / 1000, tz=timezone.utc)
        written = _metric(metrics, "num_added_rows", "num_target_rows_inserted", "num_target_rows_updated")
        removed = _metric(metrics, "num_target_rows_deleted", "num_deleted_rows")
        versions.append(_from_props(int(commit["version"]), committed, str(commit.get("operation", "")).lower(),
                                    props, written, removed, None))
    return versions


def table_versions(table: LakeTable) -> list[TableVersion]:
    """Every commit of ``table``, oldest first, with the source position each reflects.

    Example::

        for v in table_versions(LakeTable.iceberg(spark, "silver.customers")):
            print(v.version, v.committed_at, v.source_position, v.batch_id)
    """
    versions = _iceberg_versions(table) if table.format == "iceberg" else _delta_versions(table)
    # A commit lakecdc did not make (create, compaction) holds what the previous one held.
    carried: list[TableVersion] = []
    previous: TableVersion | None = None
    for v in versions:
        if v.source_position is None and previous is not None and previous.source_position is not None:
            v = TableVersion(v.version, v.committed_at, v.operation, previous.source_position,
                             previous.source_ts_ms, None, dict(previous.kafka_progress), v.rows_written,
                             v.rows_removed, v.total_rows)
        carried.append(v)
        previous = v
    return carried


def version_for_position(table: LakeTable, position: Any) -> TableVersion:
    """The first version whose recorded position covers ``position`` (``max-seq >= position``).

    That version holds every source change up to ``position``; it may also hold later changes of
    the same micro-batch (a commit is the finest grain the table has). Raises ``AuditError`` when
    no version has reached the position yet.
    """
    wanted = parse_position(position)
    for v in table_versions(table):
        if v.source_position is not None and tuple(v.source_position) >= wanted:
            return v
    newest = [v.source_position for v in table_versions(table) if v.source_position]
    reached = ",".join(map(str, newest[-1])) if newest else "nothing"
    raise AuditError(f"{table} has not reached source position {','.join(map(str, wanted))} yet "
                     f"(newest commit is complete through {reached})")


def version_at(table: LakeTable, when: datetime) -> TableVersion:
    """The version current at ``when`` (the newest committed at or before it)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    chosen = None
    for v in table_versions(table):
        if v.committed_at <= when:
            chosen = v
    if chosen is None:
        raise AuditError(f"{table} did not exist yet at {when.isoformat()}")
    return chosen
