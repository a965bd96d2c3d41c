"""A pure-Python model of SCD2 history and random source histories to check the implementation against.

``model_history(events)`` folds a whole table's events at once, in silver's order, straight from the
rules in ``docs/CONTRACTS.md`` (it shares no code with ``lakecdc.lake.history_chain``, which
folds key by key and batch by batch). ``source_histories`` draws event sequences a source could
produce (inserts, updates, deletes, truncates, primary-key changes, unchanged-TOAST placeholders,
changes in an untracked column only); ``deliveries`` cuts them into shuffled batches with replays.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

KEYS = ("id",)
COLUMNS = ("name", "note")
Row = dict[str, Any]


def key_json(key: int) -> str:
    return json.dumps({"id": key}, separators=(",", ":"))


def event(op: str, seq: int, offset: int, key: int | None, name: Any = None, note: Any = None,
          unavailable: tuple[str, ...] = (), old_key: int | None = None) -> Row:
    return {"id": key, "name": name, "note": note, "_op": op, "_seq": [seq, seq, 0, 0],
            "_source_ts_ms": 1_700_000_000_000 + seq, "_tx_id": f"tx{seq}", "_partition": 0, "_offset": offset,
            "_unavailable": list(unavailable), "_key_json": None if key is None else key_json(key),
            "_old_key_json": None if old_key is None else key_json(old_key)}


@st.composite
def source_histories(draw: st.DrawFn, max_steps: int = 14, moved_placeholders: bool = False) -> list[Row]:
    """Events in source order. Placeholders (``note`` unavailable) only in updates of live rows;
    key changes carry every value unless ``moved_placeholders``."""
    live: dict[int, tuple[Any, Any]] = {}
    events: list[Row] = []
    seq = 0
    for _ in range(draw(st.integers(1, max_steps))):
        seq += draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["write", "write", "write", "delete", "truncate", "move", "placeholder",
                                     "untracked"]))
        key = draw(st.integers(1, 3))
        name, note = draw(st.sampled_from("abc")), draw(st.sampled_from("xyz"))
        if kind == "truncate":
            events.append(event("t", seq, len(events), None))
            live.clear()
        elif kind == "delete" and key in live:
            events.append(event("d", seq, len(events), key))
            del live[key]
        elif kind == "move" and key in live and (free := [k for k in (1, 2, 3, 4) if k not in live]):
            new = draw(st.sampled_from(free))
            old_name, old_note = live.pop(key)
            events.append(event("d", seq, len(events), key))
            hidden = moved_placeholders and draw(st.booleans())
            events.append(event("c", seq, len(events), new, old_name, None if hidden else old_note,
                                ("note",) if hidden else (), old_key=key))
            live[new] = (old_name, old_note)
        elif kind == "placeholder" and key in live:
            events.append(event("u", seq, len(events), key, name, None, ("note",)))
            live[key] = (name, live[key][1])
        elif kind == "untracked" and key in live:
            events.append(event("u", seq, len(events), key, live[key][0], note))
            live[key] = (live[key][0], note)
        elif kind != "delete":
            events.append(event("u" if key in live else draw(st.sampled_from("cr")), seq, len(events), key, name, note))
            live[key] = (name, note)
    return events or [event("c", seq + 1, 0, 1, "a", "x")]


@st.composite
def deliveries(draw: st.DrawFn, events: list[Row], shuffle: bool = True) -> list[list[Row]]:
    """``events`` cut into batches, shuffled (when asked), some events delivered again later."""
    order = draw(st.permutations(range(len(events)))) if shuffle else list(range(len(events)))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(events) - 1)), max_size=4)))
    batches = [[events[i] for i in order[a:b]] for a, b in zip([0, *cuts], [*cuts, len(events)]) if a < b]
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.integers(0, len(batches) - 1))
        again = draw(st.integers(0, where))  # replay something already delivered
        batches[where] = batches[where] + [dict(e) for e in batches[again][: draw(st.integers(1, 3))]]
    return batches


def model_history(events: list[Row], tracked: tuple[str, ...] = COLUMNS) -> list[Row]:
    """Every version of every key from the whole change log (duplicates ignored), sorted by key and start."""
    unique = {(tuple(e["_seq"]), e["_offset"]): e for e in events}
    versions: list[Row] = []
    open_: dict[int, Row] = {}
    for _, e in sorted(unique.items(), key=lambda item: item[0]):
        seq = tuple(e["_seq"])

        def close(key: int) -> None:
            version = open_.pop(key)
            if version["_valid_from_seq"] == seq:
                versions.remove(version)
            else:
                version.update(_valid_to_seq=seq, _valid_to_ts=e["_source_ts_ms"], _is_current=False)

        if e["_op"] == "t":
            for key in list(open_):
                close(key)
            continue
        key = e["id"]
        if e["_op"] == "d":
            if key in open_:
                close(key)
            continue
        previous = open_.get(key)
        if previous is None and e["_old_key_json"]:
            old = json.loads(e["_old_key_json"])["id"]
            previous = next((v for v in reversed(versions) if v["id"] == old and v["_valid_from_seq"] < seq
                             and (v["_valid_to_seq"] is None or v["_valid_to_seq"] >= seq)), None)
        values = {c: (previous or {}).get(c) if c in e["_unavailable"] else e[c] for c in COLUMNS}
        current = open_.get(key)
        if current is not None and all(values[c] == current[c] for c in tracked):
            current.update(values, _last_seq=max(current["_last_seq"], seq))
            continue
        if current is not None:
            close(key)
        version = {"id": key, **values, "_valid_from_seq": seq, "_valid_to_seq": None,
                   "_valid_from_ts": e["_source_ts_ms"], "_valid_to_ts": None, "_last_seq": seq, "_op": e["_op"],
                   "_tx_id": e["_tx_id"], "_is_current": True}
        versions.append(version)
        open_[key] = version
    return sorted(versions, key=lambda v: (v["id"], v["_valid_from_seq"]))


def model_silver(events: list[Row]) -> dict[int, tuple[Any, Any]]:
    """The current state (name, note) of each live key, applying events in source order."""
    unique = {(tuple(e["_seq"]), e["_offset"]): e for e in events}
    rows: dict[int, tuple[Any, Any]] = {}
    for _, e in sorted(unique.items(), key=lambda item: item[0]):
        if e["_op"] == "t":
            rows.clear()
        elif e["_op"] == "d":
            rows.pop(e["id"], None)
        elif e["_old_key_json"] and e["id"] not in rows:
            old = json.loads(e["_old_key_json"])["id"]
            moved = rows.get(old) or rows_before_delete(events, old, tuple(e["_seq"]))
            rows[e["id"]] = (e["name"], moved[1] if "note" in e["_unavailable"] else e["note"])
        else:
            kept = rows.get(e["id"], (None, None))[1]
            rows[e["id"]] = (e["name"], kept if "note" in e["_unavailable"] else e["note"])
    return rows


def rows_before_delete(events: list[Row], key: int, seq: tuple[int, ...]) -> tuple[Any, Any]:
    """(name, note) of ``key`` just before ``seq``: every event before it replayed (not only the
    key's own: its row may have come from another key through a chain of key changes)."""
    return model_silver([e for e in events if tuple(e["_seq"]) < seq]).get(key, (None, None))


def check_chain(versions: list[Row]) -> None:
    """The chain invariants: versions of a key in order, never overlapping, non-empty; at most one
    open (and current) version per key, and it is the last."""
    by_key: dict[Any, list[Row]] = {}
    for v in versions:
        by_key.setdefault(v["id"], []).append(v)
    for key, chain in by_key.items():
        chain.sort(key=lambda v: tuple(v["_valid_from_seq"]))
        for i, v in enumerate(chain):
            start, end = tuple(v["_valid_from_seq"]), v["_valid_to_seq"]
            assert v["_is_current"] == (end is None), (key, v)
            assert end is None or start < tuple(end), (key, v)
            if i + 1 < len(chain):
                assert end is not None and tuple(end) <= tuple(chain[i + 1]["_valid_from_seq"]), (key, chain)
