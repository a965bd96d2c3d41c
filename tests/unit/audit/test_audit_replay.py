"""Replaying bronze events on a stored silver version applies silver's rules (``lakecdc.audit.replay``)."""

from __future__ import annotations

import pandas as pd

from lakecdc.audit.replay import events_between, replay

SILVER = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", "c"], "notes": ["n1", "n2", "n3"],
                       "_seq": [[10, 10, 1, 0], [11, 11, 1, 0], [30, 30, 1, 0]], "_op": ["c", "c", "u"],
                       "_source_ts_ms": [1, 2, 3], "_tx_id": ["t1", "t1", "t3"]})


def bronze(*events: tuple) -> pd.DataFrame:
    import numpy as np

    rows = [{"id": i, "name": n, "notes": notes, "_op": op, "_seq": list(seq),
             "_unavailable": None if unavailable is None else np.array(unavailable, dtype=object),  # as read back
             "_source_ts_ms": 9, "_tx_id": "tx", "_tx_total_order": k, "_kafka_partition": 0, "_offset": k}
            for k, (op, seq, i, n, notes, unavailable) in enumerate(events)]
    return pd.DataFrame(rows)


def by_id(frame: pd.DataFrame) -> dict[int, tuple]:
    return {int(r["id"]): (r["name"], r["notes"]) for r in frame.to_dict("records")}


def test_events_up_to_the_position_are_applied_in_order_with_the_guards() -> None:
    log = bronze(("u", (20, 15, 1, 0), 1, "a2", None, ["notes"]),  # unchanged TOAST: notes kept
                 ("d", (20, 16, 1, 0), 2, "b", None, None),
                 ("u", (25, 21, 1, 0), 3, "stale", "x", None),  # older than the stored row (30): refused
                 ("c", (25, 22, 1, 0), 4, "d", "n4", []),  # an empty list as Arrow reads it back
                 ("u", (40, 35, 1, 0), 1, "a3", "late", None))  # after the position: not applied
    events = events_between(log, (12, 12, 1, 0), (25, 2**63 - 1, 2**63 - 1, 2**63 - 1))
    assert list(events["_seq"].map(tuple)) == [(20, 15, 1, 0), (20, 16, 1, 0), (25, 21, 1, 0), (25, 22, 1, 0)]
    out = replay(SILVER, events, ("id",))
    assert by_id(out) == {1: ("a2", "n1"), 3: ("c", "n3"), 4: ("d", "n4")}
    assert list(out.columns) == list(SILVER.columns)


def test_a_truncate_removes_every_older_row() -> None:
    log = bronze(("t", (20, 20, 1, 0), None, None, None, None), ("c", (21, 21, 1, 0), 5, "e", None, None))
    out = replay(SILVER, events_between(log, (11, 11, 1, 0), (21, 21, 1, 0)), ("id",))
    assert by_id(out) == {3: ("c", "n3"), 5: ("e", None)}  # 3 is newer than the truncate


def test_soft_delete_mode_marks_the_row() -> None:
    silver = SILVER.assign(_is_deleted=False, _deleted_at=None)
    out = replay(silver, bronze(("d", (20, 16, 1, 0), 2, "b", None, None)), ("id",))
    assert bool(out.set_index("id").loc[2, "_is_deleted"]) and not bool(out.set_index("id").loc[1, "_is_deleted"])
