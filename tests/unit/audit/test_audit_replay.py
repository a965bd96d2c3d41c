"""Replaying bronze events on a stored silver version applies silver's rules (``lakecdc.audit.replay``)."""

from __future__ import annotations

import pandas as pd

from lakecdc.audit.replay import events_between, replay

SILVER = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", "c"], "notes": ["n1", "n2", "n3"],
                       "_seq": [[10, 10, 1, 0], [11, 11, 1, 0], [30, 30, 1, 0]], "_op": ["c", "c", "u"],
                       "_source_ts_ms": [1, 2, 3], "_tx_id": ["t1", "t1", "t3"]})


BRONZE_COLUMNS = ["id", "name", "notes", "_op", "_seq", "_unavailable", "_source_ts_ms", "_tx_id", "_tx_total_order",
                  "_kafka_partition", "_offset"]


def bronze(*events: tuple) -> pd.DataFrame:
    import numpy as np

    rows = [{"id": i, "name": n, "notes": notes, "_op": op, "_seq": list(seq),
             "_unavailable": None if unavailable is None else np.array(unavailable, dtype=object),  # as read back
             "_source_ts_ms": 9, "_tx_id": "tx", "_tx_total_order": k, "_kafka_partition": 0, "_offset": k}
            for k, (op, seq, i, n, notes, unavailable) in enumerate(events)]
    return pd.DataFrame(rows, columns=BRONZE_COLUMNS)


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


# -- as of any position, whatever commits the micro-batches made (issue 19's class of cases) ----------

from datetime import datetime, timezone  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lakecdc.audit.as_of import AsOfRead, read_between  # noqa: E402
from lakecdc.audit.replay import uncommitted_at, without  # noqa: E402
from lakecdc.audit.versions import TableVersion  # noqa: E402

EMPTY = SILVER.iloc[0:0]
KEYS = ("id",)


@st.composite
def change_logs(draw: st.DrawFn, tables: int = 1) -> list[tuple[pd.DataFrame, list[int]]]:
    """Binlog-like change logs of ``tables`` tables, each in Kafka order (``_seq`` non-decreasing),
    with the cuts of its commits: runs of one ``_seq`` -- every snapshot row of a MySQL/MariaDB table
    has the snapshot's binlog position, of a PostgreSQL one its LSN -- and transactions whose changes
    each have their own position (a MariaDB row event each) in any of the tables, in any order
    (a transfer updates one table, then the other). Each table's commits end anywhere in a run and
    between transactions, independently of the other tables': silver takes in whole transactions
    (the job holds one until its END), so one table can commit its whole part of a transaction
    while the rest of it, in another table, is at later positions."""
    events: list[list[tuple]] = [[] for _ in range(tables)]
    tx_ids: list[list[str | None]] = [[] for _ in range(tables)]
    cuts: list[set[int]] = [set() for _ in range(tables)]
    position = 10
    for number in range(draw(st.integers(1, 6))):
        position += draw(st.integers(1, 3))
        if draw(st.booleans()):  # a snapshot-like run: distinct keys, one _seq
            table = draw(st.integers(0, tables - 1))
            for key in draw(st.lists(st.integers(1, 6), min_size=1, max_size=5, unique=True)):
                events[table].append(("r", (position, 0, 0, 0), key, f"r{position}", None, None))
                tx_ids[table].append(None)
                if draw(st.booleans()):
                    cuts[table].add(len(events[table]))
        else:
            for index in range(draw(st.integers(1, 4))):
                table, op = draw(st.integers(0, tables - 1)), draw(st.sampled_from("cud"))
                position += 1
                events[table].append((op, (position, index, 1, 0), draw(st.integers(1, 6)), f"{op}{position}",
                                      None, None))
                tx_ids[table].append(f"0-1-{number}")
        for table in range(tables):
            if draw(st.booleans()):
                cuts[table].add(len(events[table]))
    return [(bronze(*events[t]).assign(_tx_id=tx_ids[t]), sorted((cuts[t] | {len(events[t])}) - {0}))
            for t in range(tables)]


def committed_through(frame: pd.DataFrame, wanted: tuple, logs: list[pd.DataFrame]) -> pd.DataFrame:
    """The changes of ``frame`` in the source's state at ``wanted``: every transaction whose changes,
    in all the ``logs``, are at or before it (its commit follows them)."""
    late = {t for log in logs for t, s in zip(log["_tx_id"], log["_seq"]) if t is not None and tuple(s) > wanted}
    keep = [tuple(s) <= wanted and t not in late for t, s in zip(frame["_tx_id"], frame["_seq"])]
    return frame[keep]


def committed(frame: pd.DataFrame, cuts: list[int]) -> tuple[list[TableVersion], dict[int, pd.DataFrame]]:
    """The versions the job commits at ``cuts`` (what each MERGE stores, and the positions it records)."""
    versions: list[TableVersion] = []
    stored: dict[int, pd.DataFrame] = {}
    start, rows = 0, EMPTY
    for number, end in enumerate(cuts):
        commit = frame.iloc[start:end]
        rows = replay(rows, events_between(commit, None, (2**63,)), KEYS)
        versions.append(TableVersion(number, datetime.now(timezone.utc), "merge",
                                     source_position=max(tuple(s) for s in frame["_seq"].iloc[:end]),
                                     first_seq=min(tuple(s) for s in commit["_seq"])))
        stored[number] = rows
        start = end
    return versions, stored


def read_at(frame: pd.DataFrame, cuts: list[int], wanted: tuple, uncommitted: set[str] | None) -> AsOfRead:
    """``frame``'s table as of ``wanted`` the way ``read_as_of`` reads it, from versions cut at ``cuts``."""
    versions, stored = committed(frame, cuts)
    reached = versions[-1].source_position if versions else None
    return read_between(versions, wanted, reached, lambda v: stored[v.version] if v is not None else EMPTY,
                        lambda: frame, lambda: KEYS, uncommitted)


@settings(max_examples=150, deadline=None)
@given(change_logs(), st.integers(0, 60))
def test_as_of_any_position_equals_the_change_log_applied_through_it(logs: list, pick: int) -> None:
    [(frame, cuts)] = logs
    positions = sorted({tuple(s) for s in frame["_seq"]})
    wanted = positions[pick % len(positions)]
    read = read_at(frame, cuts, wanted, None)
    # what the version held is not counted as replayed: exactly the events of later commits are
    held = cuts[read.version.version] if read.version else 0
    assert read.replayed == len(committed_through(frame, wanted, [frame])) - len(
        committed_through(frame.iloc[:held], wanted, [frame]))
    expected = replay(EMPTY, committed_through(frame, wanted, [frame]), KEYS)
    assert by_id(read.rows) == by_id(expected), (wanted, read.version)


@settings(max_examples=300, deadline=None)
@given(change_logs(tables=2), st.integers(0, 60))
def test_tables_read_together_show_no_transaction_open_at_the_position(logs: list, pick: int) -> None:
    frames = [frame for frame, _ in logs]
    positions = sorted({tuple(s) for frame in frames for s in frame["_seq"]})
    wanted = positions[pick % len(positions)]
    open_at = uncommitted_at(frames, wanted)
    for frame, cuts in logs:
        read = read_at(frame, cuts, wanted, open_at)
        expected = replay(EMPTY, committed_through(frame, wanted, frames), KEYS)
        assert by_id(read.rows) == by_id(expected), (wanted, open_at, read.version)


def test_a_table_holding_its_whole_part_of_an_open_transaction_shows_none_of_it() -> None:
    """The e2e failure of issue 19: a transfer updates checking at P1, then savings at P2. A checking
    commit that ends with the transfer records P1 as its highest ``_seq``; read at P1 it was taken
    as the state there, with the transfer applied in checking and not in savings."""
    checking = bronze(("u", (20, 0, 1, 0), 1, "a-5", None, None)).assign(_tx_id=["0-1-7"])
    savings = bronze(("u", (21, 0, 1, 0), 2, "b+5", None, None)).assign(_tx_id=["0-1-7"])
    start = bronze(("c", (10, 0, 1, 0), 1, "a", None, None)).assign(_tx_id=["0-1-6"])
    checking = pd.concat([start, checking], ignore_index=True)
    open_at = uncommitted_at([checking, savings], (20, 0, 1, 0))
    assert open_at == {"0-1-7"}
    read = read_at(checking, [1, 2], (20, 0, 1, 0), open_at)
    assert by_id(read.rows) == {1: ("a", None)} and read.version is not None and read.version.version == 0
    assert by_id(read_at(checking, [1, 2], (21, 0, 1, 0), set()).rows) == {1: ("a-5", None)}


def test_a_position_inside_a_transaction_shows_none_of_it() -> None:
    log = bronze(("u", (20, 0, 1, 0), 1, "a2", None, None), ("u", (21, 0, 1, 0), 2, "b2", None, None),
                 ("u", (22, 0, 1, 0), 3, "c2", None, None)).assign(_tx_id=["0-1-5", "0-1-5", "0-1-6"])
    assert uncommitted_at([log.iloc[:1], log.iloc[1:]], (20, 9, 9, 9)) == {"0-1-5"}  # across tables
    assert uncommitted_at([log], (21, 9, 9, 9)) == set()
    out = replay(SILVER, without(events_between(log, None, (21, 0, 1, 0)), uncommitted_at([log], (21, 0, 1, 0))),
                 ("id",))
    assert by_id(out) == by_id(replay(SILVER, log.iloc[:2], ("id",)))
    out = replay(SILVER, without(events_between(log, None, (20, 0, 1, 0)), uncommitted_at([log], (20, 0, 1, 0))),
                 ("id",))
    assert by_id(out) == by_id(SILVER)  # half of transaction 5 is none of it
