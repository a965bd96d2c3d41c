"""Silver between two commits: a stored version plus the bronze events after it, applied as the MERGE does.

One table commit takes in every transaction a micro-batch released, so a source position P can fall
between two transactions of one commit: no stored version is the state at P. That state is the
version before the commit plus the commit's events at or below P -- bronze holds each of them
with the same ``_seq`` silver compares. ``replay`` applies them in ``_seq`` order with silver's
rules (``lakecdc.lake.merge_plan``): an event wins only over an older stored row; ``d`` removes
the key (soft delete mode: marks ``_is_deleted``); ``t`` removes every row older than it; a column
named in ``_unavailable`` (unchanged TOAST, LOB) keeps its stored value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Seq = tuple[int, ...]
_ORDER = ("_seq", "_tx_total_order", "_kafka_partition", "_offset")


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
    Server and Oracle rank every change at its transaction's commit. Without transaction metadata
    ``_tx_id`` is null and nothing is known."""
    from lakecdc.events.transaction import tx_link

    before: set[str] = set()
    after: set[str] = set()
    for frame in bronze:
        for tx_id, seq in zip(frame["_tx_id"], frame["_seq"]):
            if isinstance(tx_id, str):
                (after if tuple(int(v) for v in seq) > through else before).add(tx_link(tx_id))
    return before & after


def first_change(bronze: pd.DataFrame, transactions: set[str]) -> Seq | None:
    """The lowest ``_seq`` of a change of ``transactions`` (``uncommitted_at``) in this change log."""
    from lakecdc.events.transaction import tx_link

    seqs = [tuple(int(v) for v in seq) for tx_id, seq in zip(bronze["_tx_id"], bronze["_seq"])
            if isinstance(tx_id, str) and tx_link(tx_id) in transactions]
    return min(seqs) if seqs else None


def without(events: pd.DataFrame, transactions: set[str]) -> pd.DataFrame:
    """``events`` less the changes of ``transactions`` (``uncommitted_at``)."""
    if not transactions or events.empty:
        return events
    from lakecdc.events.transaction import tx_link

    return events[[not isinstance(t, str) or tx_link(t) not in transactions for t in events["_tx_id"]]]


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
