"""SCD2 key changes with placeholders for every key type: the old key is found whatever its type.

The create of a primary-key change names its old key only as the JSON converter spells it
(``_old_key_json``, from header ``__debezium.oldkey``), and that spelling is not the typed value for
most key types: ``decimal.handling.mode=precise`` writes the unscaled value's bytes in base64,
``io.debezium.time.Date`` days, ``MicroTimestamp`` microseconds, ``ZonedTimestamp`` ISO text,
``binary.handling.mode=bytes`` base64. Random source histories (``history_model``) are relabelled
with random keys of random (composite) types, spelled as the converter does, delivered shuffled
and replayed; the history must be the model's, key for key. A lookup that parsed the JSON text as
the key (right only for integer and text keys) leaves the moved placeholders empty here.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from history_model import deliveries, model_history, source_histories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_history_chain import run

from lakecdc.lake.history_chain import normalize_version

Row = dict[str, Any]
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1)


def _unscaled_base64(value: Decimal, scale: int) -> str:
    """``org.apache.kafka.connect.data.Decimal``: the unscaled value's two's complement bytes
    (``BigInteger.toByteArray``: big-endian, shortest), base64 in JSON."""
    unscaled = int(value.scaleb(scale))
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


#: key type -> (typed values, the JSON converter's spelling of one)
KeyType = tuple[st.SearchStrategy[Any], Callable[[Any], Any]]
KEY_TYPES: dict[str, KeyType] = {
    "int64": (st.integers(-(2**63), 2**63 - 1), lambda v: v),
    "text": (st.text(max_size=8), lambda v: v),
    "uuid": (st.uuids().map(str), lambda v: v),  # io.debezium.data.Uuid: text
    "decimal_precise": (st.decimals(-10**6, 10**6, places=3).map(lambda d: d.quantize(Decimal("0.001"))),
                        lambda v: _unscaled_base64(v, 3)),
    "decimal_string": (st.decimals(-10**6, 10**6, places=2).map(lambda d: d.quantize(Decimal("0.01"))), str),
    "date": (st.dates(), lambda v: (v - dt.date(1970, 1, 1)).days),  # io.debezium.time.Date
    "micro_timestamp": (st.datetimes(), lambda v: (v - EPOCH) // dt.timedelta(microseconds=1)),
    "zoned_timestamp": (st.datetimes(timezones=st.just(UTC)),
                        lambda v: v.isoformat(timespec="microseconds").replace("+00:00", "Z")),
    "bytes": (st.binary(max_size=6), lambda v: base64.b64encode(v).decode()),
}


@st.composite
def key_shapes(draw: st.DrawFn) -> list[tuple[str, KeyType]]:
    """One to three key columns of random types (a composite key mixes them)."""
    types = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=3))
    return [(f"k{i}_{name}", KEY_TYPES[name]) for i, name in enumerate(types)]


def relabel(event: Row, shape: list[tuple[str, KeyType]], keys: dict[int, tuple[Any, ...]]) -> Row:
    """``event`` (integer ``id``) with the typed key ``keys[id]``, its key texts spelled as the converter does."""

    def spelled(key_id: int) -> str:
        values = keys[key_id]
        return json.dumps({name: encode(v) for (name, (_, encode)), v in zip(shape, values)}, separators=(",", ":"))

    out = {k: v for k, v in event.items() if k != "id"}
    typed = keys.get(event["id"], (None,) * len(shape)) if event["id"] is not None else (None,) * len(shape)
    out.update({name: v for (name, _), v in zip(shape, typed)})
    out["_key_json"] = None if event["id"] is None else spelled(event["id"])
    out["_old_key_json"] = None if event["_old_key_json"] is None else spelled(json.loads(event["_old_key_json"])["id"])
    return out


def history(batches: list[list[Row]], shape: list[tuple[str, KeyType]], keys: dict[int, tuple[Any, ...]]) -> list[Row]:
    """The history of ``batches`` relabelled with typed keys, in the model's form (integer ``id``)."""
    names = tuple(name for name, _ in shape)
    table = run([[relabel(e, shape, keys) for e in batch] for batch in batches], keys=names)
    ids = {v: k for k, v in keys.items()}
    got = [{"id": ids[tuple(v[n] for n in names)], **{k: x for k, x in normalize_version(v).items() if k not in names}}
           for v in table.values()]
    return sorted(got, key=lambda v: (v["id"], v["_valid_from_seq"]))


@st.composite
def typed_keys(draw: st.DrawFn) -> tuple[list[tuple[str, KeyType]], dict[int, tuple[Any, ...]]]:
    """A key shape and four distinct keys of it, for the model's keys 1-4."""
    shape = draw(key_shapes())
    typed = draw(st.lists(st.tuples(*[values for _, (values, _) in shape]), min_size=4, max_size=4, unique=True))
    return shape, dict(zip((1, 2, 3, 4), typed))


def split_key_changes(batches: list[list[Row]]) -> list[list[Row]]:
    """``batches`` with a cut before each key change's create: its old key's events (the change's
    own delete too) are then only in bronze, which is searched by the old key's text."""
    out: list[list[Row]] = []
    for batch in batches:
        out.append([])
        for e in batch:
            if e["_old_key_json"] is not None and out[-1]:
                out.append([])
            out[-1].append(e)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_key_changes_in_source_order_take_placeholders_from_the_old_key_of_any_type(data: st.DataObject) -> None:
    """Batches in source order (replays included): the old key's values reach the new key, whether
    its events are in the create's batch or only in bronze (an earlier batch)."""
    shape, keys = data.draw(typed_keys())
    events = data.draw(source_histories(moved_placeholders=True))
    batches = data.draw(deliveries(events, shuffle=False))
    if data.draw(st.booleans()):
        batches = split_key_changes(batches)
    assert history(batches, shape, keys) == model_history(events)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_delivery_folds_typed_keys_as_integer_keys(data: st.DataObject) -> None:
    """Shuffled and replayed: a typed key's history is the integer key's, version for version."""
    shape, keys = data.draw(typed_keys())
    events = data.draw(source_histories(moved_placeholders=True))
    batches = data.draw(deliveries(events))
    if data.draw(st.booleans()):
        batches = split_key_changes(batches)
    assert history(batches, shape, keys) == history(batches, [("id", KEY_TYPES["int64"])], {k: (k,) for k in keys})
