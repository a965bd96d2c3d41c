"""SCD2 chains batch by batch (``HistoryBuilder``) against the whole-log model (``history_model``).

Random source histories are delivered shuffled, cut into batches and partly replayed; after every
batch the stored chain satisfies the chain invariants, and after the last it is exactly the model's
chain of all events, whatever the delivery. The MERGE is applied here in memory with
``history_plan``'s semantics; ``test_history_delta_rs`` runs the same through delta-rs' real MERGE.
"""

from __future__ import annotations

from typing import Any

from history_model import (
    COLUMNS,
    KEYS,
    check_chain,
    deliveries,
    event,
    model_history,
    model_silver,
    source_histories,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecdc.lake.history_chain import HistoryBuilder, Tracking, from_ms, normalize_version
from lakecdc.lake.history_plan import ACTION, DELETE

Row = dict[str, Any]


def apply_batch(table: dict[tuple[Any, ...], Row], batch: list[Row], bronze: list[Row],
                tracking: Tracking = Tracking(), keys: tuple[str, ...] = KEYS) -> int:
    """One history step in memory: the builder's rows MERGEd by (key, start), the truncate clause
    closing in-order open versions outside them. Returns how many rows the MERGE changed."""

    def key_of(row: Row) -> tuple[Any, ...]:
        return tuple(row[k] for k in keys)

    batch_keys = {key_of(e) for e in batch if e["_op"] != "t"}
    truncates = any(e["_op"] == "t" for e in batch)
    stored = [dict(v) for v in table.values() if key_of(v) in batch_keys]
    # the delete ledger holds the batch's removals too; its rows carry no Kafka position
    ledger = [{k: e[k] for k in (*keys, "_seq", "_op", "_source_ts_ms")} for e in bronze if e["_op"] in ("d", "t")]
    builder = HistoryBuilder(keys, COLUMNS, tracking, batch, stored, list(table.values()) if truncates else None,
                             ledger)
    late = set(builder.late_keys())
    read = [e for e in bronze if key_of(e) in late and e["_op"] != "t"]
    while True:
        changed = builder.rows(read)
        wanted = set(builder.more_key_json())
        if not wanted:
            break
        read += [e for e in bronze if e["_key_json"] in wanted]
    touched = set()
    for row in changed:
        at = (*key_of(row), tuple(row["_valid_from_seq"]))
        touched.add(at)
        if row[ACTION] == DELETE:
            del table[at]
        else:
            table[at] = {k: v for k, v in row.items() if k != ACTION}
    first = builder.oldest_truncate
    if first is not None:
        for at, version in table.items():
            if (at not in touched and version["_valid_to_seq"] is None
                    and tuple(version["_last_seq"]) < tuple(first["_seq"])):
                version.update(_valid_to_seq=list(first["_seq"]), _valid_to_ts=from_ms(first["_source_ts_ms"]),
                               _is_current=False)
    return len(changed)


def as_model(table: dict[tuple[Any, ...], Row]) -> list[Row]:
    rows = [normalize_version(v) for v in table.values()]
    return sorted(rows, key=lambda v: (v["id"], v["_valid_from_seq"]))


def run(batches: list[list[Row]], tracking: Tracking = Tracking(),
        keys: tuple[str, ...] = KEYS) -> dict[tuple[Any, ...], Row]:
    table: dict[tuple[Any, ...], Row] = {}
    bronze: dict[tuple[Any, ...], Row] = {}
    for batch in batches:
        for e in batch:  # bronze first, as the writer appends it before the history step
            bronze[(tuple(e["_seq"]), e["_offset"])] = e
        apply_batch(table, batch, list(bronze.values()), tracking, keys)
        check_chain([{**v, "id": tuple(v[k] for k in keys)} for v in table.values()])
    return table


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_delivery_folds_to_the_model(data: st.DataObject) -> None:
    events = data.draw(source_histories())
    batches = data.draw(deliveries(events))
    assert as_model(run(batches)) == model_history(events)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_untracked_columns_update_in_place(data: st.DataObject) -> None:
    events = data.draw(source_histories())
    batches = data.draw(deliveries(events))
    for tracking in (Tracking(only=("name",)), Tracking(ignored=("note",))):
        assert as_model(run(batches, tracking)) == model_history(events, tracked=("name",))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_current_versions_are_silver(data: st.DataObject) -> None:
    """In source order (silver's own guarantee), the open versions are exactly silver's rows."""
    events = data.draw(source_histories(moved_placeholders=True))
    batches = data.draw(deliveries(events, shuffle=False))
    current = {v["id"]: (v["name"], v["note"]) for v in run(batches).values() if v["_is_current"]}
    assert current == model_silver(events)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_replaying_a_batch_changes_nothing(data: st.DataObject) -> None:
    events = data.draw(source_histories())
    batches = data.draw(deliveries(events))
    table = run(batches)
    before = as_model(table)
    bronze = list({(tuple(e["_seq"]), e["_offset"]): e for b in batches for e in b}.values())
    for batch in batches:
        assert apply_batch(table, batch, bronze) == 0
    assert as_model(table) == before


def test_a_late_update_splits_the_version_it_falls_into() -> None:
    c1, u5 = event("c", 1, 0, 1, "a", "x"), event("u", 5, 2, 1, "b", "x")
    u3 = event("u", 3, 1, 1, "c", "y")
    table = run([[c1, u5], [u3]])
    spans = [(v["_valid_from_seq"][0], v["_valid_to_seq"] and v["_valid_to_seq"][0], v["name"])
             for v in as_model(table)]
    assert spans == [(1, 3, "a"), (3, 5, "c"), (5, None, "b")]


def test_a_delete_and_a_truncate_leave_no_open_version() -> None:
    events = [event("c", 1, 0, 1, "a", "x"), event("c", 2, 1, 2, "b", "y"), event("d", 3, 2, 1),
              event("t", 4, 3, None)]
    versions = as_model(run([events[:2], events[2:]]))
    assert [(v["id"], v["_valid_to_seq"][0]) for v in versions] == [(1, 3), (2, 4)]
    assert not any(v["_is_current"] for v in versions)


def test_a_late_truncate_closes_versions_it_falls_into_and_keeps_later_ones() -> None:
    # key 1 changed only an untracked column after the truncate: its version was updated in place
    c1, u9, t5 = event("c", 1, 0, 1, "a", "x"), event("u", 9, 2, 1, "a", "z"), event("t", 5, 1, None)
    versions = as_model(run([[c1, u9], [t5]], Tracking(ignored=("note",))))
    assert [(v["_valid_from_seq"][0], v["_valid_to_seq"] and v["_valid_to_seq"][0], v["note"]) for v in versions] == [
        (1, 5, "x"), (9, None, "z")]


def test_placeholders_carry_the_previous_versions_value() -> None:
    events = [event("c", 1, 0, 1, "a", "x"), event("u", 2, 1, 1, "b", None, ("note",))]
    versions = as_model(run([events]))
    assert [(v["name"], v["note"]) for v in versions] == [("a", "x"), ("b", "x")]


def test_a_key_change_takes_placeholders_from_the_old_key_in_an_earlier_batch() -> None:
    events = [event("c", 1, 0, 1, "a", "x"), event("d", 2, 1, 1),
              event("c", 2, 2, 7, "a", None, ("note",), old_key=1)]
    versions = as_model(run([events[:2], events[2:]]))
    assert [(v["id"], v["note"], v["_is_current"]) for v in versions] == [(1, "x", False), (7, "x", True)]
