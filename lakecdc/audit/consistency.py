"""Reading several tables at one source position: the consistency log and consistent reads.

The ingest job appends a row to ``lakecdc.consistency`` after every batch (``lakecdc.ingest.consistency``):
the position every table is complete through and the version of each table that holds exactly
that. Reading those versions together gives a state the source had across the tables -- also from
SQL, where ``consistent_sql`` writes the ``VERSION AS OF`` queries (or temporary views) for analysts::

    point = latest_point(LakeTable.delta("/lake", "lakecdc.consistency"))
    reads = read_consistent([accounts, ledger], log=log)                 # newest consistent state
    reads = read_consistent([accounts, ledger], position="0/5E80B40", log=log)  # any earlier one

A position at or below the newest point is read table by table (``lakecdc.audit.as_of``): each read
holds exactly the transactions committed at or before it, so they agree.

PostgreSQL without transaction metadata (Debezium's default): a point is the newest ``_seq``
released, and that ranks the newest transaction at the commit LSN of the one before it, so the
versions a point names hold a transaction whose commit is above the LSN the point prints (and not
known until the next transaction arrives). ``read_consistent`` checks the tables' bronze and then
reads the state at the printed LSN (without that transaction) instead of those versions. The point
itself, ``describe_point`` and ``consistent_sql`` (``VERSION AS OF`` for SQL) read only the log:
for such a source the versions they name may hold that transaction -- and, as the job holds nothing
back without END markers, only the part of it read so far.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lakecdc.audit.as_of import AsOfRead, read_as_of_with_version
from lakecdc.audit.changelog import bronze_of
from lakecdc.audit.notation import GTID, connector_kind, format_position
from lakecdc.audit.replay import uncommitted_at, uncommitted_without_metadata
from lakecdc.audit.tables import AuditError, LakeTable, to_pandas
from lakecdc.audit.versions import (
    Position,
    TableVersion,
    parse_position,
    positioned,
    reached_bound,
    recorded_connector,
    table_versions,
)
from lakecdc.lake.progress import just_below

LOG_TABLE = "lakecdc.consistency"


@dataclass(frozen=True)
class ConsistencyPoint:
    """One row of the consistency log."""

    batch_id: int
    job: str
    connector: str | None
    complete_through: Position
    position: str  # the same, in the source's notation
    published_at: datetime
    versions: dict[str, int] = field(default_factory=dict)
    stopped: tuple[str, ...] = ()

    @property
    def reached(self) -> Position:
        bound = reached_bound(self.connector, self.complete_through)
        assert bound is not None
        return bound


def consistency_points(log: LakeTable) -> list[ConsistencyPoint]:
    """Every published point, oldest first (empty when the job has published none yet)."""
    if not log.exists():
        return []
    frame = to_pandas(log.arrow())
    points = [ConsistencyPoint(int(r["batch_id"]), str(r["job"]), r["connector"],
                               tuple(int(v) for v in r["complete_through"]),
                               str(r["position"]), r["published_at"], {str(k): int(v) for k, v in
                                                                        json.loads(r["versions"] or "{}").items()},
                               tuple(json.loads(r["stopped"] or "[]")))
              for r in frame.to_dict("records")]
    return sorted(points, key=lambda p: (p.complete_through, p.published_at))


def latest_point(log: LakeTable, tables: list[str] | None = None) -> ConsistencyPoint | None:
    """The newest point, or with ``tables`` the newest one that vouches for all of them. Several
    jobs (and tests) may share one log: a point speaks only for the tables in its ``versions``, so
    another job's newer point says nothing about how far these tables are complete."""
    points = [p for p in consistency_points(log) if tables is None or all(t in p.versions for t in tables)]
    return points[-1] if points else None


def read_consistent(tables: list[LakeTable], position: Any = None, log: LakeTable | None = None,
                    bronze: dict[str, LakeTable] | None = None) -> dict[str, AsOfRead]:
    """The tables read together: at ``position`` (source notation), or at the newest published point.

    Raises ``AuditError`` when the position is past what every table is complete through, or --
    PostgreSQL without transaction metadata -- where the bronze change logs cannot tell whether a
    transaction had committed at it (``lakecdc.audit.replay.uncommitted_without_metadata``).
    """
    names = [t.name for t in tables]
    newest = latest_point(log) if log is not None else None
    if newest is not None:
        stopped = [n for n in names if n in newest.stopped]
        if stopped:
            raise AuditError(f"tables stopped by a schema error are not consistent with the others: {stopped}")
    point = latest_point(log, names) if log is not None else None
    found = {t.name: (bronze or {}).get(t.name) for t in tables}
    if position is None:
        if point is None:
            raise AuditError(f"no consistency point covering {', '.join(names)} published yet (the ingest job "
                             "writes one after each batch); give a source position")
        return _read_newest(tables, point, found)
    reached = point.reached if point is not None else None
    connector = point.connector if point else None
    if isinstance(position, str) and GTID.match(position.strip()):
        logs = [found[t.name] or bronze_of(t) for t in tables]  # raises naming a missing one
        position = list(position_of_gtid(logs, position.strip()))
    recorded, wanted = connector, None
    if connector is None:  # no point: the notation the first table's commits recorded
        versions, wanted, _ = positioned(tables[0], position, None, reached)
        recorded = recorded_connector(versions)
    uncommitted: set[str] = set()
    by_binlog = connector_kind(connector) in ("mysql", None)
    postgres = connector_kind(recorded) == "postgres"
    if by_binlog or postgres:
        # A transaction with changes on both sides of a binlog position is not committed there: none
        # of its changes, in any of the tables, belongs to the state at it (other sources rank every
        # change at its transaction's commit). Nor is a PostgreSQL transaction streamed without
        # transaction metadata whose commit the change logs do not place at or below the position.
        found = {t.name: found[t.name] or _bronze_if_found(t) for t in tables}
        wanted = wanted or parse_position(position, connector)
        frames = [to_pandas(log.arrow()) for log in found.values() if log]
        uncommitted = uncommitted_at(frames, wanted) if by_binlog else set()
        if postgres:
            uncommitted |= uncommitted_without_metadata(frames, wanted)
    return {t.name: read_as_of_with_version(t, source_position=position, reached=reached, connector=connector,
                                            bronze=found[t.name], uncommitted=uncommitted) for t in tables}


def _read_newest(tables: list[LakeTable], point: ConsistencyPoint,
                 found: dict[str, LakeTable | None]) -> dict[str, AsOfRead]:
    """The tables at ``point``: the versions it names -- unless, PostgreSQL without transaction
    metadata, they hold a transaction not committed at the point's position. The job releases
    events without END markers as they come, so the point is the newest ``_seq`` released: that of
    the newest transaction, whose events carry the commit LSN of the one before it. The versions
    then hold it (maybe only some of its tables) though its own commit is above the position the
    point names and not known yet; the state at that position is read instead (the versions before
    it plus bronze replayed, ``read_as_of_with_version``), without it. So PostgreSQL points cost a
    read of the tables' bronze; a table whose bronze is not found is taken as the point has it."""
    logs = {t.name: found[t.name] or _bronze_if_found(t) for t in tables}
    uncommitted = beyond_point(point, tables, logs)
    if uncommitted:
        return {t.name: read_as_of_with_version(t, source_position=point.reached, reached=point.reached,
                                                connector=point.connector, bronze=logs[t.name],
                                                uncommitted=uncommitted) for t in tables}
    return {t.name: _read_point(t, point) for t in tables}


def beyond_point(point: ConsistencyPoint, tables: list[LakeTable],
                 bronze: dict[str, LakeTable | None] | None = None) -> set[str]:
    """The transactions the versions ``point`` names of ``tables`` hold though they are not committed
    at its position (``_read_newest``): only PostgreSQL without transaction metadata has them, found
    in the tables' bronze change logs (``bronze``, else found by name; a table without one is skipped)."""
    if connector_kind(point.connector) != "postgres":
        return set()
    logs = [(bronze or {}).get(t.name) or _bronze_if_found(t) for t in tables]
    frames = [to_pandas(log.arrow()) for log in logs if log]
    return uncommitted_without_metadata(frames, point.reached) if frames else set()


def not_exact_reason(point: ConsistencyPoint) -> str:
    """Why the versions ``point`` names are not the state at its position (``beyond_point``)."""
    return (f"the table versions of this point also hold the PostgreSQL transaction after {point.position}, "
            "whose commit is not known yet: its events carry no transaction metadata, so the job cannot hold "
            "it back. `lakecdc audit as-of` reads the tables at the point without it (from bronze); set "
            "provide.transaction.metadata=true on the connector for versions that are exact")


def _bronze_if_found(table: LakeTable) -> LakeTable | None:
    try:
        return bronze_of(table)
    except AuditError:
        return None  # needed only to replay: that read names what is missing


def position_of_gtid(bronze: list[LakeTable], gtid: str) -> Position:
    """A MySQL (``uuid:N``) or MariaDB (``domain-server-N``) GTID -> a position between that transaction
    and the next one of its source, from the tables' bronze change logs (``_tx_id`` is the GTID): the
    highest ``_seq`` of their events up to N (transactions are in binlog order), or, when none of these
    tables changed that early, just below the first event after N. "As of GTID" is then the state
    after that transaction and every one before it."""
    source, number = _gtid_parts(gtid)
    upto: list[Position] = []
    after: list[Position] = []
    for table in bronze:
        frame = to_pandas(table.arrow())
        for tx_id, seq in zip(frame["_tx_id"], frame["_seq"]):
            if isinstance(tx_id, str) and GTID.match(tx_id) and _gtid_parts(tx_id)[0] == source:
                (upto if _gtid_parts(tx_id)[1] <= number else after).append(tuple(int(v) for v in seq))
    if upto:
        return max(upto)
    if after:
        return just_below(min(after))
    raise AuditError(f"GTID {gtid}: no change of these tables from that source's transactions; give a binlog "
                     "position file:pos instead")


def _gtid_parts(gtid: str) -> tuple[str, int]:
    """``uuid:23`` -> (uuid, 23); MariaDB ``0-1-100`` -> ("0", 100) (the domain orders its sequence numbers)."""
    if ":" in gtid:
        source, _, number = gtid.rpartition(":")
        return source.lower(), int(number)
    domain, _, number = gtid.split("-")
    return domain, int(number)


def _read_point(table: LakeTable, point: ConsistencyPoint) -> AsOfRead:
    version = point.versions[table.name]
    known: dict[int, TableVersion] = {v.version: v for v in table_versions(table)}
    return AsOfRead(to_pandas(table.arrow(version=version)), known.get(version), point.reached)


def consistent_sql(point: ConsistencyPoint, qualified: dict[str, str], views: bool = False) -> list[str]:
    """Spark / Databricks SQL reading the tables at ``point``: one ``SELECT ... VERSION AS OF`` per
    table (``qualified``: table name -> the name SQL knows it by), or ``CREATE OR REPLACE TEMP VIEW``
    statements (``<table>_consistent``) when ``views``. Delta and Iceberg both take ``VERSION AS OF``
    (a Delta version, an Iceberg snapshot id). PostgreSQL without transaction metadata: the versions
    may hold the transaction after the point's LSN (module docstring); ``read_consistent`` does not."""
    missing = [name for name in qualified if name not in point.versions]
    if missing:
        raise AuditError(f"the consistency point of batch {point.batch_id} names no version of {missing}; "
                         "read them with `lakecdc audit as-of --position " + point.position + "`")
    out = [f"-- consistent through {point.position} (batch {point.batch_id}, published "
           f"{point.published_at:%Y-%m-%d %H:%M:%S})"]
    for name, sql_name in qualified.items():
        select = f"SELECT * FROM {sql_name} VERSION AS OF {point.versions[name]}"
        if views:
            out.append(f"CREATE OR REPLACE TEMP VIEW {name.replace('.', '_')}_consistent AS {select};")
        else:
            out.append(select + ";")
    return out


def describe_point(point: ConsistencyPoint) -> str:
    return (f"consistent through {point.position or format_position(point.connector, point.complete_through)} "
            f"(batch {point.batch_id})")
