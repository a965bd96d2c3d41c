"""Read a table as it was: at a version, at a time, or at a source position.

``read_as_of(table, source_position="0/16B3748")`` answers "what did the source look like at LSN x":
exactly the rows after every source transaction committed at or before x
(``lakecdc.audit.versions.position_match``): the version holding those transactions and nothing
later, or -- when one commit took in transactions on both sides of x -- the version before it with
that commit's bronze events at or below x replayed on top (``lakecdc.audit.replay``; ``read_between``).
A MySQL/MariaDB transaction open at x (changes on both sides of it, across the tables read together)
is in none of it, also where one table already holds all of its part in a version. So is a
PostgreSQL transaction streamed without transaction metadata whose commit is above x: its events
carry the commit LSN of the transaction before it (Debezium's ``source.sequence[0]``), at or below
x, and it is committed only once a later transaction's ``sequence[0]`` is at or below x
(``lakecdc.audit.replay.uncommitted_without_metadata``). The cost: the bronze change log is read
for every PostgreSQL position, and an x after a transaction's last change but below the next
transaction's ``sequence[0]`` is refused (``AuditError``) rather than maybe answered wrongly -- always
so past the newest transaction, whose commit LSN no event names until the next one arrives. A bronze table
read at x is its change log filtered to ``_seq`` at or below x, less those transactions. Iceberg
uses ``VERSION AS OF`` / ``TIMESTAMP AS OF``; Delta uses delta-rs ``load_as_version`` with the
version whose commit time (from the log) is the newest at or before the time asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from lakecdc.audit.changelog import bronze_of
from lakecdc.audit.notation import connector_kind
from lakecdc.audit.tables import AuditError, LakeTable, key_columns, to_pandas
from lakecdc.audit.versions import (
    Position,
    TableVersion,
    match_versions,
    positioned,
    recorded_connector,
    version_at,
)

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
    transactions not committed at the position (``lakecdc.audit.replay.open_transactions`` over every
    table read together; default: from this table's bronze -- for PostgreSQL always read, else when
    it is replayed)."""
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
    from lakecdc.audit.replay import open_transactions, untracked_rows, without

    versions, wanted, newest = positioned(table, position, connector, reached)
    connector = recorded_connector(versions, connector)
    match = match_versions(versions, wanted, newest)
    if match.version is not None:
        rows = to_pandas(table.arrow(version=match.version.version))
    else:
        rows = to_pandas(table.arrow()).iloc[0:0]
    if "_kafka_partition" in rows.columns or "_offset" in rows.columns:  # a bronze change log
        newest_rows = to_pandas(table.arrow())
        log = newest_rows[[tuple(s) <= wanted for s in newest_rows["_seq"]]]
        if uncommitted is None:
            uncommitted = open_transactions(connector, [newest_rows], wanted)
        return AsOfRead(without(log, uncommitted).reset_index(drop=True), match.version, wanted)
    found: list[pd.DataFrame] = []

    def change_log() -> pd.DataFrame:  # read once, and only when needed
        if not found:
            found.append(to_pandas((bronze or bronze_of(table)).arrow()))
        return found[0]

    if uncommitted is None and connector_kind(connector) == "postgres":
        # Without transaction metadata the version found by position may hold the transaction after
        # P (ranked at the commit before it): only bronze tells. A table whose rows all carry
        # _tx_id (with metadata) needs no bronze unless a replay does.
        try:
            log = change_log()
        except AuditError as exc:  # no bronze found
            if untracked_rows(rows):
                raise AuditError(f"{exc}; without transaction metadata it also tells which PostgreSQL "
                                 "transactions had committed") from None
            log = None
        uncommitted = open_transactions(connector, [log], wanted) if log is not None else set()

    def rows_of(version: TableVersion | None) -> pd.DataFrame:
        if version is match.version:
            return rows
        return to_pandas(table.arrow(version=version.version)) if version is not None else rows.iloc[0:0]

    return read_between(versions, wanted, newest, rows_of, change_log, lambda: key_columns(table), uncommitted,
                        connector=connector)


def read_between(versions: list[TableVersion], wanted: Position, reached: Position | None,
                 rows_of: Callable[[TableVersion | None], pd.DataFrame], change_log: Callable[[], pd.DataFrame],
                 keys_of: Callable[[], tuple[str, ...]], uncommitted: set[str] | None = None, *,
                 connector: str | None = None) -> AsOfRead:
    """A silver table as of ``wanted`` from its positioned ``versions`` (oldest first; ``rows_of``
    reads one, None: no rows) and its bronze ``change_log``, read with ``keys_of`` only when a
    replay needs them. ``uncommitted``: the transactions open at ``wanted`` across the tables read
    together (``lakecdc.audit.replay.open_transactions``; default: those of this change log, when it
    is replayed; ``connector`` names the notation). For PostgreSQL pass them always: a transaction
    without metadata is ranked below its commit, so even an exact-looking version may hold one."""
    from lakecdc.audit.replay import events_between, first_change, not_held, open_transactions, replay, without

    # Versions hold whole transactions (the job holds one until its END), but one open at P can be
    # whole in this table and go on in another -- or, without transaction metadata, be ranked at the
    # commit before it: no version holding any of it answers.
    open_from = first_change(change_log(), uncommitted) if uncommitted else None
    match = match_versions(versions, wanted, reached, open_from)
    rows = rows_of(match.version)
    if match.exact:
        return AsOfRead(rows, match.version, wanted)
    source = change_log()
    after = tuple(match.version.source_position) if match.version and match.version.source_position else None
    open_at = uncommitted if uncommitted is not None else open_transactions(connector, [source], wanted)
    keys = keys_of()
    events = not_held(without(events_between(source, after, wanted), open_at), rows, after, keys)
    return AsOfRead(replay(rows, events, keys), match.version, wanted, len(events))
