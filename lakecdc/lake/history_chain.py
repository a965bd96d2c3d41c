"""SCD2 version chains: the fold of a key's events into versions, and what a batch changes in them.

The chain of a key is a fold of its events and the table's truncates, in the order silver's MERGE
ranks events (``_seq`` lexicographically, then the Kafka offset):

- a create, snapshot read or update opens a version at its ``_seq`` and closes the open one there,
  unless it changes no tracked column (``track_history_columns`` / ``track_history_except_columns``):
  then it updates the open version in place (its values and ``_last_seq``);
- a delete, or a truncate of the table, closes the open version at its ``_seq`` (no open version
  after it until the key is created again);
- a column named in ``_unavailable`` (unchanged TOAST, LOB, minimal row image) carries the previous
  version's value; the create of a primary-key change (``_old_key_json``) carries the old key's
  version just before the change (when that key's events are in the same fold), as silver's
  ``lakecdc.lake.key_moves`` does. The old key is found by its ``_key_json`` text among the
  events at hand, else bronze's events of that text are read: exact for every key type. The ingest
  holds a create back until its old key's partition is read to the change
  (``lakecdc.ingest.key_move_holds``), so those events are there.

``HistoryBuilder`` applies one batch: a key whose batch events (and the batch's truncates) are all
newer than anything its stored chain holds continues the stored chain; any other key ("late": an
out-of-order or replayed event, a truncate older than its chain's newest event) is folded again
from every event bronze holds for it, which puts a late event in its place (splitting the version
it falls into) and makes a replay fold to the same chain. The result is the difference to the
stored chain: versions to upsert and versions to delete, which ``history_plan``'s MERGE applies.
The batch's keys are folded together in one pass in silver's order, so a key change reads its old
key's chain as it stood at the change, also when keys change back and forth (A -> B, then B -> A).
Pure Python over plain rows (``pyarrow`` ``to_pylist`` form): the same code for every engine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from lakecdc.lake.history_plan import ACTION, DELETE, UPSERT
from lakecdc.lake.layout import IS_CURRENT, LAST_SEQ, VALID_FROM_SEQ, VALID_FROM_TS, VALID_TO_SEQ, VALID_TO_TS

Seq = tuple[int, ...]
Key = tuple[Any, ...]
Row = dict[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Tracking:
    """Which columns make a new version: ``only`` (``track_history_columns``; empty: every
    column) minus ``ignored`` (``track_history_except_columns``)."""

    only: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def tracked(self, columns: Iterable[str]) -> tuple[str, ...]:
        return tuple(c for c in columns if (not self.only or c in self.only) and c not in self.ignored)


def order(event: Row) -> tuple[Seq, int]:
    """Silver's order of events: ``_seq``, then the Kafka offset."""
    return tuple(event["_seq"]), int(event.get("_offset") or 0)


def _close(version: Row, event: Row) -> bool:
    """Close ``version`` at ``event``; False when that leaves it empty (closed where it opened)."""
    seq = tuple(event["_seq"])
    if seq <= version[VALID_FROM_SEQ]:
        return False
    version.update({VALID_TO_SEQ: seq, VALID_TO_TS: event.get("_source_ts_ms"), IS_CURRENT: False})
    return True


def step(chain: list[Row], event: Row, keys: tuple[str, ...], columns: tuple[str, ...],
         tracked: tuple[str, ...], moved_from: Any = None) -> None:
    """``chain`` (a key's versions, oldest first) continued in place with one event (or truncate)
    no older than its newest (the module docstring's rules). ``columns``: the row columns besides
    the keys; ``tracked``: those that make a new version (``Tracking.tracked``);
    ``moved_from(old_key_json, seq)``: the old key's version just before a key change, or None."""
    seq = tuple(event["_seq"])
    current = chain[-1] if chain and chain[-1][VALID_TO_SEQ] is None else None
    if event["_op"] in ("d", "t"):
        if current is not None and not _close(current, event):
            chain.pop()
        return
    base = current
    unavailable = set(event.get("_unavailable") or ())
    if base is None and event.get("_old_key_json") and moved_from is not None and (
            unavailable or any(c not in event for c in columns)):  # only a create missing values asks
        base = moved_from(event["_old_key_json"], seq)
    values = {c: (base or {}).get(c) if c in unavailable or c not in event else event[c] for c in columns}
    if current is not None and (seq <= current[VALID_FROM_SEQ] or all(values[c] == current[c] for c in tracked)):
        current.update(values)  # no tracked change (or two events at one position): in place
        current[LAST_SEQ] = max(current[LAST_SEQ], seq)
        return
    if current is not None:
        _close(current, event)
    chain.append({**{k: event[k] for k in keys}, **values, VALID_FROM_SEQ: seq, VALID_TO_SEQ: None,
                  VALID_FROM_TS: event.get("_source_ts_ms"), VALID_TO_TS: None, LAST_SEQ: seq,
                  "_op": event["_op"], "_tx_id": event.get("_tx_id"), IS_CURRENT: True})


def newest_seq(chain: list[Row]) -> Seq | None:
    """The newest position a stored chain reflects (a version's start, last event or end)."""
    seqs = [s for v in chain for s in (v[VALID_FROM_SEQ], v[LAST_SEQ], v[VALID_TO_SEQ]) if s is not None]
    return max(seqs) if seqs else None


def normalize_version(row: Row) -> Row:
    """A stored history row in the fold's form: positions as tuples, times as epoch milliseconds."""
    out = dict(row)
    for name in (VALID_FROM_SEQ, VALID_TO_SEQ, LAST_SEQ):
        out[name] = tuple(int(v) for v in row[name]) if row.get(name) is not None else None
    for name in (VALID_FROM_TS, VALID_TO_TS):
        out[name] = to_ms(row.get(name))
    out.pop(ACTION, None)
    return out


def to_ms(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    when = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return (when - EPOCH) // timedelta(milliseconds=1)


def from_ms(value: int | None) -> datetime | None:
    return None if value is None else EPOCH + timedelta(milliseconds=int(value))


def stored_form(row: Row) -> Row:
    """A folded version as the table stores it (positions as lists, times as datetimes)."""
    out = dict(row)
    for name in (VALID_FROM_SEQ, VALID_TO_SEQ, LAST_SEQ):
        out[name] = list(row[name]) if row[name] is not None else None
    for name in (VALID_FROM_TS, VALID_TO_TS):
        out[name] = from_ms(row[name])
    return out


class HistoryBuilder:
    """The history rows one batch changes (module docstring).

    ``events``: the batch's events (truncates included) in ``ChangeBatch`` row form; ``stored``:
    the stored versions of the batch's keys; ``all_stored``: every stored version, needed (and read)
    only when the batch holds a truncate; ``removals``: the delete ledger's rows of the batch's keys
    and every truncate (a delete of a key without a version leaves no trace in the history, and an
    event older than it is late; a late key's fold takes the truncates from here). Call
    ``late_keys()``, read bronze for them, then ``rows``, then ``more_key_json`` until it is empty.
    """

    def __init__(self, keys: tuple[str, ...], columns: tuple[str, ...], tracking: Tracking,
                 events: list[Row], stored: list[Row], all_stored: list[Row] | None = None,
                 removals: Sequence[Row] = ()) -> None:
        self.keys, self.columns, self.tracking = keys, columns, tracking
        self.truncates = sorted((e for e in events if e["_op"] == "t"), key=order)
        self.events: dict[Key, list[Row]] = defaultdict(list)
        for event in sorted((e for e in events if e["_op"] != "t"), key=order):
            self.events[self._key(event)].append(event)
        self.stored: dict[Key, list[Row]] = defaultdict(list)
        for row in [*stored, *(all_stored or [])]:
            version = normalize_version(row)
            chain = self.stored[self._key(version)]
            if all(v[VALID_FROM_SEQ] != version[VALID_FROM_SEQ] for v in chain):
                chain.append(version)
        for chain in self.stored.values():
            chain.sort(key=lambda v: v[VALID_FROM_SEQ])
        own = {(self._key(e), tuple(e["_seq"]), e["_op"]) for e in events if e["_op"] in ("d", "t")}
        #: the newest removal recorded before this batch, per key (truncates under None)
        self.removed: dict[Key | None, Seq] = {}
        #: every truncate of the table (the ledger keeps them all: maintenance prunes deletes only)
        self.all_truncates = [r for r in removals if r["_op"] == "t"]
        for row in removals:
            seq = tuple(row["_seq"])
            key = None if row["_op"] == "t" else self._key(row)
            if (self._key(row), seq, row["_op"]) not in own and (key not in self.removed or seq > self.removed[key]):
                self.removed[key] = seq
        self._late = self._find_late()
        #: old keys (``_old_key_json``) of key changes whose events ``rows`` lacked (``more_key_json``)
        self.wanted: set[str] = set()
        self._asked: set[str] = set()
        self._lookup_only: set[Key] = set()

    def _key(self, row: Row) -> Key:
        return tuple(row[k] for k in self.keys)

    @property
    def oldest_truncate(self) -> Row | None:
        return self.truncates[0] if self.truncates else None

    def _find_late(self) -> set[Key]:
        late = set()
        first_truncate = tuple(self.truncates[0]["_seq"]) if self.truncates else None
        for key, events in self.events.items():
            known = [s for s in (newest_seq(self.stored.get(key, [])), self.removed.get(key), self.removed.get(None))
                     if s is not None]
            newest = max(known) if known else None
            oldest = min([tuple(events[0]["_seq"]), *([first_truncate] if first_truncate else [])])
            if newest is not None and oldest <= newest:
                late.add(key)
        for key, chain in self.stored.items():
            if key in self.events or first_truncate is None:
                continue
            for truncate in self.truncates:
                at = tuple(truncate["_seq"])
                for v in chain:
                    spans = v[VALID_FROM_SEQ] < at and (v[VALID_TO_SEQ] is None or v[VALID_TO_SEQ] > at)
                    # an open version whose newest event precedes every truncate: the MERGE's truncate
                    # clause closes it (``history_plan``); anything else is re-folded
                    closed_by_clause = v[VALID_TO_SEQ] is None and v[LAST_SEQ] < first_truncate
                    if spans and not closed_by_clause:
                        late.add(key)
        return late

    def late_keys(self) -> list[Key]:
        """Keys whose chain is folded again from bronze (give ``rows`` their events)."""
        return sorted(self._late, key=repr)

    def more_key_json(self) -> list[str]:
        """After ``rows``: the old keys (``_old_key_json`` texts) of key changes it needed and had
        no events of. Read their bronze events by ``_key_json`` and call ``rows`` again with them
        added (once per link of a chain of key changes A -> B -> C); [] when nothing is left to read.

        By text, never by parsing it: the JSON converter's spelling of a key is not its typed value
        for most key types (``decimal.handling.mode=precise`` gives base64 bytes, ``io.debezium.time.Date``
        days, ``MicroTimestamp`` microseconds, binary base64), while bronze stores every event's
        ``_key_json`` beside its typed key, so its events give the typed key exactly."""
        more = sorted(self.wanted - self._asked)
        self._asked |= self.wanted
        self.wanted = set()
        return more

    def rows(self, bronze: Sequence[Row] = ()) -> list[Row]:
        """Versions to upsert and delete (``ACTION``), stored form. ``bronze``: the bronze events of
        ``late_keys()`` (renamed to the batch's column names); truncates come from ``removals``."""
        by_key: dict[Key, list[Row]] = defaultdict(list)
        seen: set[tuple[Any, ...]] = set()
        truncates: dict[Seq, Row] = {}
        in_bronze = {self._key(e) for e in bronze if e["_op"] != "t"}
        # keys read for ``more_key_json`` join the late keys, folded for their values only
        self._lookup_only |= in_bronze - self._late - set(self.events)
        self._late |= in_bronze
        for event in [*self.all_truncates, *bronze, *(e for es in self.events.values() for e in es),
                      *self.truncates]:
            identity = (order(event), event.get("_partition"), event["_op"])
            if event["_op"] == "t":
                truncates[tuple(event["_seq"])] = event  # the ledger's copy has no offset: one per position
            elif (self._key(event), identity) not in seen:
                seen.add((self._key(event), identity))
                by_key[self._key(event)].append(event)
        all_truncates = sorted(truncates.values(), key=order)
        key_json = {e["_key_json"]: self._key(e) for es in by_key.values() for e in es if e.get("_key_json")}
        # Every key is folded in one pass over all their events in silver's order, so a key
        # change reads its old key's chain exactly as it stood at the change, even when the keys
        # change back and forth (A -> B, later B -> A) and both are folded here.
        chains: dict[Key, list[Row]] = {}
        pending: list[tuple[tuple[Seq, int], str, Key, Row]] = []
        for key in {*by_key, *self._late, *self.events}:
            stored = self.stored.get(key, [])
            if key in self._late and (key in in_bronze or not stored):
                chains[key], events = [], [*by_key.get(key, []), *all_truncates]
            else:
                # in order; or late but bronze lost the key's events (expired): continue the stored
                # chain with what is newer than it rather than lose the versions it holds
                newest = newest_seq(stored)
                chains[key] = [dict(v) for v in stored]
                events = [e for e in [*self.events.get(key, []), *self.truncates]
                          if newest is None or tuple(e["_seq"]) > newest]
            pending += [(order(e), repr(key), key, e) for e in events]

        def moved_from(old_key_json: str, seq: Seq) -> Row | None:
            old = key_json.get(old_key_json)
            if old is None:  # no event of the old key at hand: its events are in bronze (``more_key_json``)
                self.wanted.add(old_key_json)
                return None
            for version in chains.get(old, []):
                if version[VALID_FROM_SEQ] < seq and (version[VALID_TO_SEQ] is None or version[VALID_TO_SEQ] >= seq):
                    return version
            return None

        tracked = self.tracking.tracked(self.columns)
        for _, _, key, event in sorted(pending, key=lambda p: p[:2]):
            step(chains[key], event, self.keys, self.columns, tracked, moved_from)

        changed: list[Row] = []
        for key in sorted(set(self.events) | (self._late - self._lookup_only), key=repr):
            old = {v[VALID_FROM_SEQ]: v for v in self.stored.get(key, [])}
            new = {v[VALID_FROM_SEQ]: v for v in chains[key]}
            for start, version in old.items():
                if start not in new:
                    changed.append({**stored_form(version), ACTION: DELETE})
            for start, version in new.items():
                if old.get(start) != version:
                    changed.append({**stored_form(version), ACTION: UPSERT})
        return changed
