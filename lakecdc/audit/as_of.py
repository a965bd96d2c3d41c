"""Read a table as it was: at a version, at a time, or at a source position.

``read_as_of(table, source_position="0/16B3748")`` answers "what did the source look like at LSN x":
exactly the rows after every source transaction committed at or before x
(``lakecdc.audit.versions.position_match``): the version holding those transactions and nothing
later, or -- when one commit took in transactions on both sides of x -- the version before it with
that commit's bronze events at or below x replayed on top (``lakecdc.audit.replay``). A bronze table
read at x is its change log filtered to ``_seq`` at or below x. Iceberg uses ``VERSION AS OF`` / ``TIMESTAMP AS OF``;
Delta uses delta-rs ``load_as_version`` with the
version whose commit time (from the log) is the newest at or before the time asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from lakecdc.audit.changelog import bronze_of
from lakecdc.audit.tables import AuditError, LakeTable, key_columns, to_pandas
from lakecdc.audit.versions import Position, TableVersion, position_match, version_at

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class AsOfRead:
    """The rows read and the version they came from."""

    rows: pd.DataFrame
    version: TableVersion | None  # None when read by time straight from the format (no lakecdc commit found)
    position: Position | None = None  # read as of a source position: the highest _seq included
    replayed: int = 0  # bronze events applied on top of ``version`` (the position fell inside a commit)


def _resolve(table: LakeTable, version: int | None, timestamp: datetime | str | None,
             source_position: Any) -> tuple[int | None, datetime | None]:
    """(version, time) asked for; both None when a source position is (read by ``_read_at_position``)."""
    chosen = [name for name, value in (("version", version), ("timestamp", timestamp),
                                        ("source_position", source_position)) if value is not None]
    if len(chosen) != 1:
        raise AuditError(f"{table}: give exactly one of version=, timestamp=, source_position= "
                         f"(got {chosen or 'none'})")
    if source_position is not None:
        return None, None
    if timestamp is not None:
        when = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
        return None, when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return int(version), None  # type: ignore[arg-type]


def read_as_of(table: LakeTable, version: int | None = None, timestamp: datetime | str | None = None,
               source_position: Any = None) -> pd.DataFrame:
    """The table's rows as of one version, time or source position, as a pandas DataFrame.

    Example::

        read_as_of(silver, version=3)
        read_as_of(silver, timestamp="2026-11-22T10:00:00+00:00")
        read_as_of(silver, source_position="0/16B3748")   # PostgreSQL LSN
    """
    return read_as_of_with_version(table, version, timestamp, source_position).rows


def read_as_of_with_version(table: LakeTable, version: int | None = None, timestamp: datetime | str | None = None,
                            source_position: Any = None, *, connector: str | None = None,
                            bronze: LakeTable | None = None, reached: Position | None = None,
                            uncommitted: set[str] | None = None) -> AsOfRead:
    """``read_as_of`` that also says which version was read (the CLI prints it). For a source
    position: ``connector`` names its notation (default: what the commits recorded), ``bronze`` the
    change log to replay from (default: ``lakecdc.audit.changelog.bronze_of``), ``reached`` a consistency point
    the table is known to be complete through (``lakecdc.audit.consistency``), ``uncommitted`` the
    transactions not committed at the position (``lakecdc.audit.replay.uncommitted_at`` over every
    table read together; default: from this table's bronze when it is replayed)."""
    from lakecdc.audit.versions import table_versions

    chosen_version, when = _resolve(table, version, timestamp, source_position)
    if source_position is not None:
        return _read_at_position(table, source_position, connector, bronze, reached, uncommitted)
    if when is not None:
        picked = version_at(table, when)  # raises when the table did not exist yet
        if table.format == "iceberg":
            # TIMESTAMP AS OF is Iceberg's own lookup; it agrees with version_at by construction.
            utc = when.astimezone(timezone.utc).replace(tzinfo=None)
            return AsOfRead(to_pandas(table.arrow(timestamp=utc)), picked)
        # delta-rs' own timestamp lookup reads file times; the commit times in the log are exact.
        return AsOfRead(to_pandas(table.delta_table(picked.version).to_pyarrow_table()), picked)
    known = {v.version: v for v in table_versions(table)}
    if chosen_version not in known:
        raise AuditError(f"{table} has no version {chosen_version} (versions: "
                         f"{', '.join(str(v) for v in list(known)[-10:])})")
    return AsOfRead(to_pandas(table.arrow(version=chosen_version)), known[chosen_version])


def _read_at_position(table: LakeTable, position: Any, connector: str | None, bronze: LakeTable | None,
                      reached: Position | None, uncommitted: set[str] | None) -> AsOfRead:
    from lakecdc.audit.replay import events_between, not_held, replay, uncommitted_at, without

    # Versions hold whole transactions (the job holds one until its END), so only the replay and
    # the change log can hold part of a transaction still open at P.
    match = position_match(table, position, connector, reached)
    wanted = match.wanted
    if match.version is not None:
        rows = to_pandas(table.arrow(version=match.version.version))
    else:
        rows = to_pandas(table.arrow()).iloc[0:0]
    if "_kafka_partition" in rows.columns or "_offset" in rows.columns:  # a bronze change log
        newest = to_pandas(table.arrow())
        keep = [tuple(s) <= wanted for s in newest["_seq"]]
        log = newest[keep]
        log = without(log, uncommitted if uncommitted is not None else uncommitted_at([newest], wanted))
        return AsOfRead(log.reset_index(drop=True), match.version, wanted)
    if match.exact:
        return AsOfRead(rows, match.version, wanted)
    source = to_pandas((bronze or bronze_of(table)).arrow())
    after = tuple(match.version.source_position) if match.version and match.version.source_position else None
    open_at = uncommitted if uncommitted is not None else uncommitted_at([source], wanted)
    keys = key_columns(table)
    events = not_held(without(events_between(source, after, wanted), open_at), rows, after, keys)
    return AsOfRead(replay(rows, events, keys), match.version, wanted, len(events))
