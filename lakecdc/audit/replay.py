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
    such a run, leaving the rest to the next commit. The ones the version already holds are no-ops
    (``replay`` refuses an event not newer than the stored row)."""
    seqs = [tuple(s) for s in bronze["_seq"]]
    keep = [(after is None or s >= after) and s <= through for s in seqs]
    chosen = bronze[keep].copy()
    chosen["__seq"] = [tuple(s) for s in chosen["_seq"]]
    by = ["__seq", *[c for c in _ORDER[1:] if c in chosen.columns]]
    return chosen.sort_values(by, kind="stable", na_position="first").drop(columns="__seq")


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
