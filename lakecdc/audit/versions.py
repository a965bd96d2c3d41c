"""Table versions and the source position each one reflects (DESIGN.md 2.9).

Every commit lakecdc makes carries ``lakecdc.progress``, ``lakecdc.batch-id``, ``lakecdc.max-seq`` and
``lakecdc.max-source-ts-ms`` (``lakecdc.lake.progress``). Read back, they map each Iceberg snapshot /
Delta version to the source position through which it is complete::

    {"version": 5, "committed_at": "2026-11-22T10:01:02.345+00:00", "operation": "merge",
     "source_position": [24023200, 24023208, 0, 0], "source_ts_ms": 1700000000123, "batch_id": 3,
     "kafka_progress": {"shop.public.customers": {"0": 41}}, "rows_written": 12, "rows_removed": 2}

Commits lakecdc did not make (table creation, compaction) have no position: they reflect the
position of the lakecdc commit before them.

Positions: ``source_position`` is the highest ``_seq`` the version holds, ``complete_through`` the
position through which it holds every source transaction (``lakecdc.complete-through``) and
``first_seq`` the lowest ``_seq`` its commit added. ``position_match`` picks, for a source position
P, the version holding exactly the transactions committed at or before P -- or, when one commit
took in transactions on both sides of P, the version before it and the bronze events to replay on
top (``lakecdc.audit.replay``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from lakecdc.audit.notation import PositionError, format_position
from lakecdc.audit.notation import parse_position as parse_in_notation
from lakecdc.audit.tables import AuditError, LakeTable
from lakecdc.lake.progress import CommitProgress

Position = tuple[int, ...]


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
    complete_through: Position | None = None  # lakecdc.complete-through
    first_seq: Position | None = None  # lakecdc.first-seq: the lowest _seq this commit added
    connector: str | None = None  # lakecdc.connector: the notation of its positions

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
            "complete_through": list(self.complete_through) if self.complete_through else None,
            "complete_through_text": format_position(self.connector, self.complete_through or self.source_position),
            "connector": self.connector,
        }

    @property
    def reached(self) -> Position | None:
        """The highest source position this version answers for (its completeness bound)."""
        return reached_bound(self.connector, self.complete_through or self.source_position)


def parse_position(position: Any, connector: str | None = None) -> Position:
    """A source position in the source's notation (``lakecdc.audit.notation``) -> the highest
    ``_seq`` a change committed at or before it has: "as of P" reads every ``_seq`` <= this.

    Accepts a ``lakecdc.events.positions`` object (``.seq()``), a tuple/list of ints, an int (a
    PostgreSQL LSN, or the first ``_seq`` number), PostgreSQL LSN text ``"0/16B3748"``, MySQL
    ``file:pos``, a SQL Server LSN, an Oracle SCN, or ``"a,b,c,d"``; missing trailing numbers are
    the largest possible: ``(x,)`` covers every ``(x, ...)``.
    """
    try:
        return parse_in_notation(connector, position)
    except PositionError as exc:
        raise AuditError(str(exc)) from None


def reached_bound(connector: str | None, complete_through: Position | None) -> Position | None:
    """A recorded completeness position as the highest ``_seq`` it answers for: complete through
    the commit of a transaction is complete through every ``_seq`` that commit can have."""
    if complete_through is None:
        return None
    if connector is None:
        return tuple(complete_through)
    return max(tuple(complete_through), parse_in_notation(connector, format_position(connector, complete_through)))


def _from_props(version: int, committed_at: datetime, operation: str, props: dict[str, str],
                written: int | None, removed: int | None, total: int | None) -> TableVersion:
    progress = CommitProgress.from_properties(props)
    if progress is None:
        return TableVersion(version, committed_at, operation, rows_written=written, rows_removed=removed,
                            total_rows=total)
    return TableVersion(version, committed_at, operation, progress.max_seq, progress.max_source_ts_ms,
                        progress.batch_id, dict(progress.offsets), written, removed, total,
                        progress.complete_through, progress.first_seq, progress.connector)


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
            v = replace(previous, version=v.version, committed_at=v.committed_at, operation=v.operation,
                        batch_id=None, rows_written=v.rows_written, rows_removed=v.rows_removed,
                        total_rows=v.total_rows, first_seq=None)
        carried.append(v)
        previous = v
    return carried


@dataclass(frozen=True)
class PositionMatch:
    """Which version answers "as of P" (``position_match``).

    ``version`` holds every transaction committed at or before P that it can (None: the table held
    nothing yet at P). ``exact`` is false when the next commit took in transactions on both sides of
    P: then the events with ``_seq`` in ``[version.source_position, wanted]`` (from bronze) complete it.
    """

    wanted: Position
    version: TableVersion | None
    exact: bool
    reached: Position | None


def position_match(table: LakeTable, position: Any, connector: str | None = None,
                   reached: Position | None = None) -> PositionMatch:
    """The version of ``table`` for source position ``position`` (see ``PositionMatch``).

    ``reached``: a consistency point the table is known to be complete through beyond its own
    newest commit (``lakecdc.audit.consistency``). Raises ``AuditError`` when the table has not
    reached the position yet, naming the newest position it answers for.

    Positions only: PostgreSQL without transaction metadata ranks a transaction at the commit before
    it, so the version picked for a commit LSN P may hold the transaction after P; only the bronze
    change log tells (``lakecdc.audit.as_of.read_as_of``, ``lakecdc.audit.replay.open_transactions``).
    """
    versions, wanted, newest = positioned(table, position, connector, reached)
    return match_versions(versions, wanted, newest)


def positioned(table: LakeTable, position: Any, connector: str | None = None,
               reached: Position | None = None) -> tuple[list[TableVersion], Position, Position]:
    """``table``'s versions that carry a position (oldest first), the ``_seq`` bound of ``position``
    and the newest position the table answers for; raises as ``position_match`` does."""
    versions = [v for v in table_versions(table) if v.source_position is not None]
    connector = recorded_connector(versions, connector)
    wanted = parse_position(position, connector)
    newest = versions[-1].reached if versions else None
    if reached is not None and (newest is None or reached > newest):
        newest = reached
    if newest is None or wanted > newest:
        raise AuditError(f"{table} has not reached source position {format_position(connector, wanted)} yet "
                         f"(it is complete through {format_position(connector, newest) if newest else 'nothing'})")
    return versions, wanted, newest


def recorded_connector(versions: list[TableVersion], connector: str | None = None) -> str | None:
    """``connector`` when given, else the one the newest of ``versions`` that names one recorded."""
    return connector or next((v.connector for v in reversed(versions) if v.connector), None)


def match_versions(versions: list[TableVersion], wanted: Position, reached: Position | None,
                   open_from: Position | None = None) -> PositionMatch:
    """``position_match`` over a table's positioned versions (oldest first).

    ``open_from``: the lowest ``_seq`` of this table's changes in transactions still open at
    ``wanted`` (``lakecdc.audit.replay.open_transactions`` across the tables read together). A version
    whose highest ``_seq`` is at or above it holds part of such a transaction even when that
    ``_seq`` is at or below ``wanted`` -- a MySQL/MariaDB transfer's first table is complete at
    its own change, before the second table's; a PostgreSQL transaction without transaction
    metadata is ranked at the commit *before* it, so at that commit LSN it is at or below ``wanted``
    and not committed -- so the newest version below it answers, and the bronze events up to
    ``wanted`` less the open transactions complete it (never exact)."""
    chosen = None
    for i, v in enumerate(versions):
        held = tuple(v.source_position)  # type: ignore[arg-type]
        if held <= wanted and (open_from is None or held < open_from):
            chosen = i
    following = 0 if chosen is None else chosen + 1
    after = versions[following] if following < len(versions) else None
    # A commit without first-seq (an older lakecdc) may hold changes at or below P: replay to be sure.
    exact = after is None or (after.first_seq is not None and tuple(after.first_seq) > wanted)
    return PositionMatch(wanted, versions[chosen] if chosen is not None else None, exact, reached)


def version_for_position(table: LakeTable, position: Any, connector: str | None = None) -> TableVersion:
    """The newest version holding nothing after ``position`` (``position_match``); raises
    ``AuditError`` when the table held nothing yet or has not reached it."""
    match = position_match(table, position, connector)
    if match.version is None:
        raise AuditError(f"{table} held nothing yet at source position {position}")
    return match.version


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
