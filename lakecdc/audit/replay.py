"""Silver between two commits: a stored version plus the bronze events after it, applied as the MERGE does.

One table commit takes in every transaction a micro-batch released, so a source position P can fall
between two transactions of one commit: no stored version is the state at P. That state is the
version before the commit plus the commit's events at or below P -- bronze holds each of them
with the same ``_seq`` silver compares. ``replay`` applies them in ``_seq`` order with silver's
rules (``lakecdc.lake.merge_plan``): an event wins only over an older stored row; ``d`` removes
the key (soft delete mode: marks ``_is_deleted``); ``t`` removes every row older than it; a column
named in ``_unavailable`` (unchanged TOAST, LOB) keeps its stored value.

Which transactions are committed at P (``open_transactions``): MySQL/MariaDB changes are ranked at
their own binlog position and named by ``_tx_id`` (``uncommitted_at``). PostgreSQL without
transaction metadata (``provide.transaction.metadata=false``, Debezium's default; ``_tx_id`` null)
ranks a change at ``source.sequence[0]``: the commit LSN of the transaction received *before* its
own, so the transaction is known only by that number (``uncommitted_without_metadata``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakecdc.audit.notation import connector_kind, format_position
from lakecdc.audit.tables import AuditError

if TYPE_CHECKING:
    import pandas as pd

Seq = tuple[int, ...]
_ORDER = ("_seq", "_tx_total_order", "_kafka_partition", "_offset")
#: ``_seq[2]`` of PostgreSQL rows (``lakecdc.events.positions``; the first-transaction mark is
#: ``lakecdc.ingest.ordering.FIRST_TRANSACTION_PHASE``, which the audit may not import)
_SNAPSHOT, _STREAMED, _FIRST_TRANSACTION = 0, 1, 2
#: names a PostgreSQL transaction without ``_tx_id`` by its rows' phase and ``_seq[0]``; no ``tx_link``
#: starts so (PostgreSQL ``xid``, MySQL ``uuid:n``, MariaDB ``d-s-n``)
_UNTRACKED = "~seq0:"


def events_between(bronze: pd.DataFrame, after: Seq | None, through: Seq) -> pd.DataFrame:
    """Bronze rows with ``after <= _seq <= through``, in apply order.

    ``after`` (the stored version's highest ``_seq``) is included: events can share one ``_seq`` --
    every snapshot row of a MySQL/MariaDB table carries the snapshot's binlog position (Debezium's
    ``source.row`` is 0), every PostgreSQL snapshot row its LSN -- and a micro-batch may end inside
    such a run, leaving the rest to the next commit (``not_held`` tells which the version holds)."""
    seqs = [tuple(s) for s in bronze["_seq"]]
    keep = [(after is None or s >= after) and s <= through for s in seqs]
    chosen = bronze[keep].copy()
    chosen["__seq"] = [tuple(s) for s in chosen["_seq"]]
    by = ["__seq", *[c for c in _ORDER[1:] if c in chosen.columns]]
    return chosen.sort_values(by, kind="stable", na_position="first").drop(columns="__seq")


def not_held(events: pd.DataFrame, silver: pd.DataFrame, after: Seq | None, keys: tuple[str, ...]) -> pd.DataFrame:
    """``events`` (``events_between``) less those at ``after`` that the stored version ``silver``
    already holds: its row for the key carries that ``_seq`` (a delete: no row, or that ``_seq``;
    a truncate at the version's highest ``_seq`` was its own)."""
    if after is None or events.empty:
        return events
    stored = {tuple(r[k] for k in keys): tuple(r["_seq"]) for r in silver.to_dict("records")}
    keep = []
    for event in events.to_dict("records"):
        seq = tuple(event["_seq"])
        if seq > after:
            keep.append(True)
        elif event["_op"] == "t":
            keep.append(False)
        else:
            row_seq = stored.get(tuple(event[k] for k in keys))
            keep.append(not (row_seq == seq or (event["_op"] == "d" and row_seq is None)))
    return events[keep]


def uncommitted_at(bronze: list[pd.DataFrame], through: Seq) -> set[str]:
    """Transactions (``tx_link`` of ``_tx_id``) with changes on both sides of ``through`` across the
    given change logs: not committed at that position (a commit follows every change of its
    transaction), so "as of" it shows none of their changes.

    Only where ``_seq`` ranks a change at its own place in the log can that happen: MySQL/MariaDB
    binlog positions (``file:pos`` of each rows event). PostgreSQL with transaction metadata, SQL
    Server and Oracle rank every change at its transaction's commit. PostgreSQL without transaction
    metadata has ``_tx_id`` null: ``uncommitted_without_metadata``."""
    from lakecdc.events.transaction import tx_link

    before: set[str] = set()
    after: set[str] = set()
    for frame in bronze:
        for tx_id, seq in zip(frame["_tx_id"], frame["_seq"]):
            if isinstance(tx_id, str):
                (after if tuple(int(v) for v in seq) > through else before).add(tx_link(tx_id))
    return before & after


def uncommitted_without_metadata(bronze: list[pd.DataFrame], through: Seq) -> set[str]:
    """PostgreSQL transactions without ``_tx_id`` in the given change logs (read together) that are not
    committed at ``through``; raises ``AuditError`` where the logs cannot tell.

    Debezium's ``source.sequence[0]`` is the commit LSN of the last transaction received before the
    event's own (``PostgresOffsetContext`` ``lsn_commit``): every event of one transaction carries the
    same one, it grows from each transaction to the next, and a transaction's commit C lies after it
    and after the LSN of each of its changes, and at or before the ``sequence[0]`` of any later
    transaction. So a transaction whose rows carry ``s`` is, at LSN P (``through[0]``):

    - committed when a later transaction's ``sequence[0]`` is at or below P;
    - not committed when P is at or below ``s`` or one of its change LSNs (``_seq[1]``);
    - unknown otherwise: its commit is somewhere above its last change and at or below the next
      ``sequence[0]`` -- exactly that when these tables see every transaction, but other tables'
      transactions (or a non-transactional logical message) may commit between. The newest
      transaction is never known to be committed until the next one arrives.

    The first transaction streamed after a start without an offset (or from a snapshot's offset) has
    ``sequence[0]`` null: the ingest ranks its rows at their own LSN, raised to snapshot LSN + 1
    (``_seq[2]`` = 2, ``lakecdc.ingest.ordering.rank_after_snapshot``); its rows, up to the first
    ``sequence[0]`` above them, are one transaction. A restart from a stored offset resumes
    ``sequence[0]`` at its ``lsn_commit``, the last commit sent, so nothing changes there. Snapshot
    rows (``_seq[2]`` = 0) are at the snapshot's position and committed at it: left to ``_seq``.

    Returns names ``without`` and ``first_change`` understand; empty when every row has a ``_tx_id``.
    """
    import bisect

    at = through[0]
    later: set[int] = set()  # sequence[0] of streamed rows: each bounds the commits before it
    untracked: dict[tuple[int, int], int] = {}  # (phase, _seq[0]) -> the highest LSN its rows show
    for frame in bronze:
        for tx_id, seq in zip(frame["_tx_id"], frame["_seq"]):
            phase, first, lsn = int(seq[2]), int(seq[0]), int(seq[1])
            if phase == _STREAMED:
                later.add(first)
            if phase in (_STREAMED, _FIRST_TRANSACTION) and not isinstance(tx_id, str):
                untracked[(phase, first)] = max(untracked.get((phase, first), first), lsn)
    commits = sorted(later)
    # One transaction per streamed sequence[0]; first-transaction rows between two of them: one more.
    transactions: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for phase, first in untracked:
        group = (phase, first) if phase == _STREAMED else (phase, bisect.bisect_right(commits, first))
        transactions.setdefault(group, []).append((phase, first))
    out: set[str] = set()
    for keys in transactions.values():
        lowest = min(first for _, first in keys)
        if lowest > at:
            continue  # none of its rows is at or below P
        highest = max(untracked[k] for k in keys)
        following = bisect.bisect_right(commits, max(first for _, first in keys))
        bound = commits[following] if following < len(commits) else None
        if bound is not None and bound <= at:
            continue  # committed: a later transaction was sent after its commit
        if at <= highest:
            out.update(f"{_UNTRACKED}{phase}:{first}" for phase, first in keys)
            continue
        raise AuditError(_unknown_commit(at, lowest, highest, bound))
    return out


def _unknown_commit(at: int, lowest: int, highest: int, bound: int | None) -> str:
    def lsn(value: int) -> str:
        return format_position("postgres", (value,))

    where = (f"it is after {lsn(highest)} and at or before {lsn(bound)}" if bound is not None else
             f"it is after {lsn(highest)}, and this is the newest transaction of these tables: its commit "
             "LSN is known only once the next transaction arrives")
    answer = f"as of {lsn(highest)} or before, it is not committed"
    if bound is not None:
        answer += f"; as of {lsn(bound)} or after, it is"
    return (f"as of {lsn(at)}: the commit of the PostgreSQL transaction whose events follow {lsn(lowest)} is not "
            f"known without transaction metadata ({where}). {answer}; with provide.transaction.metadata=true "
            "every position is answered")


def open_transactions(connector: str | None, bronze: list[pd.DataFrame], through: Seq) -> set[str]:
    """The transactions not committed at ``through`` across the change logs read together, by
    connector: ``uncommitted_at``, and for PostgreSQL also ``uncommitted_without_metadata``."""
    found = uncommitted_at(bronze, through)
    if connector_kind(connector) == "postgres":
        found |= uncommitted_without_metadata(bronze, through)
    return found


def untracked_rows(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` (silver or bronze rows) holds a streamed PostgreSQL change without ``_tx_id``."""
    if "_tx_id" not in frame.columns or "_seq" not in frame.columns:
        return False
    return any(not isinstance(tx_id, str) and int(seq[2]) in (_STREAMED, _FIRST_TRANSACTION)
               for tx_id, seq in zip(frame["_tx_id"], frame["_seq"]))


def _transaction_of(tx_id: Any, seq: Any, untracked: bool) -> str | None:
    """The name ``uncommitted_at`` / ``uncommitted_without_metadata`` give a row's transaction."""
    from lakecdc.events.transaction import tx_link

    if isinstance(tx_id, str):
        return tx_link(tx_id)
    if untracked and int(seq[2]) != _SNAPSHOT:
        return f"{_UNTRACKED}{int(seq[2])}:{int(seq[0])}"
    return None


def first_change(bronze: pd.DataFrame, transactions: set[str]) -> Seq | None:
    """The lowest ``_seq`` of a change of ``transactions`` (``open_transactions``) in this change log."""
    untracked = any(t.startswith(_UNTRACKED) for t in transactions)
    seqs = [tuple(int(v) for v in seq) for tx_id, seq in zip(bronze["_tx_id"], bronze["_seq"])
            if _transaction_of(tx_id, seq, untracked) in transactions]
    return min(seqs) if seqs else None


def without(events: pd.DataFrame, transactions: set[str]) -> pd.DataFrame:
    """``events`` less the changes of ``transactions`` (``open_transactions``)."""
    if not transactions or events.empty:
        return events
    untracked = any(t.startswith(_UNTRACKED) for t in transactions)
    return events[[_transaction_of(t, s, untracked) not in transactions
                   for t, s in zip(events["_tx_id"], events["_seq"])]]


def replay(silver: pd.DataFrame, events: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """``silver`` (a stored version's rows) with ``events`` (``events_between``) applied."""
    import pandas as pd

    columns = list(silver.columns)
    soft = "_is_deleted" in columns
    rows: dict[tuple[Any, ...], dict[str, Any]] = {
        tuple(r[k] for k in keys): r for r in silver.to_dict("records")}
    for event in events.to_dict("records"):
        seq = tuple(event["_seq"])
        op = event["_op"]
        if op == "t":
            for key, row in list(rows.items()):
                if tuple(row["_seq"]) < seq:
                    _remove(rows, key, event, soft)
            continue
        key = tuple(event[k] for k in keys)
        stored = rows.get(key)
        if stored is not None and tuple(stored["_seq"]) >= seq:
            continue  # silver's guard: an older event never overwrites a newer row
        if op == "d":
            if stored is not None:
                _remove(rows, key, event, soft)
            continue
        listed = event.get("_unavailable")
        unavailable = set(listed) if isinstance(listed, (list, tuple)) or hasattr(listed, "tolist") else set()
        row = {c: (stored[c] if stored is not None and c in unavailable else event.get(c)) for c in columns}
        row.update({"_seq": list(seq), "_op": op, "_source_ts_ms": event.get("_source_ts_ms"),
                    "_tx_id": event.get("_tx_id")})
        if soft:
            row["_is_deleted"] = False
            row["_deleted_at"] = None
        rows[key] = row
    return pd.DataFrame(list(rows.values()), columns=columns)


def _remove(rows: dict[tuple[Any, ...], dict[str, Any]], key: tuple[Any, ...], event: dict[str, Any],
            soft: bool) -> None:
    if not soft:
        del rows[key]
        return
    row = dict(rows[key])
    row.update({"_seq": list(event["_seq"]), "_op": event["_op"], "_is_deleted": True})
    rows[key] = row
