"""The chain: order, predicates with negate, drops, and the errors at start."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.errors import ConfigError
from lakecdc.transforms import build_chain

from .records import change, delete_pair, row

P = "org.apache.kafka.connect.transforms.predicates."
ROUTER = "org.apache.kafka.connect.transforms.RegexRouter"


def routed(predicate: dict[str, str], negate: bool | None) -> list[str]:
    props = {"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.regex": "(.*)",
             "transforms.r.replacement": "x.$1", "transforms.r.predicate": "p", "predicates": "p",
             **{f"predicates.p.{k}": v for k, v in predicate.items()}}
    if negate is not None:
        props["transforms.r.negate"] = str(negate).lower()
    records = [change("c", None, row(1)), *delete_pair(2)]
    return [r.topic for r in build_chain(props).apply(records)]


@pytest.mark.parametrize(("predicate", "negate", "expected"), [
    ({"type": P + "RecordIsTombstone"}, None, ["dbz.public.items", "dbz.public.items", "x.dbz.public.items"]),
    ({"type": P + "RecordIsTombstone"}, True, ["x.dbz.public.items", "x.dbz.public.items", "dbz.public.items"]),
    ({"type": P + "TopicNameMatches", "pattern": r"dbz\.public\..*"}, False, ["x.dbz.public.items"] * 3),
    ({"type": P + "TopicNameMatches", "pattern": "dbz"}, None, ["dbz.public.items"] * 3),  # whole topic only
    ({"type": P + "HasHeaderKey", "name": "__debezium.context.connectorLogicalName"}, True,
     ["dbz.public.items", "dbz.public.items", "x.dbz.public.items"]),  # the tombstone has no headers
])
def test_predicates_and_negate(predicate: dict[str, str], negate: bool | None, expected: list[str]) -> None:
    assert routed(predicate, negate) == expected


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4, unique=True))
def test_transforms_apply_in_listed_order(aliases: list[str]) -> None:
    props = {"transforms": ",".join(aliases)}
    for alias in aliases:
        props.update({f"transforms.{alias}.type": ROUTER, f"transforms.{alias}.regex": "(.*)",
                      f"transforms.{alias}.replacement": f"$1.{alias}"})
    [out] = build_chain(props).apply([change("c", None, row(1))])
    assert out.topic == "dbz.public.items." + ".".join(aliases)


def test_a_dropped_record_skips_the_rest_of_the_chain() -> None:
    chain = build_chain({"transforms": "u,r", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                         "transforms.r.type": ROUTER, "transforms.r.regex": "(.*)", "transforms.r.replacement": "y"})
    assert [r.topic for r in chain.apply(delete_pair(1))] == ["y"]  # the tombstone is dropped by unwrap


@pytest.mark.parametrize(("props", "message"), [
    ({"transforms": "x", "transforms.x.type": "com.acme.Custom"},
     r"transform 'x': class 'com.acme.Custom' is not supported"),
    ({"transforms": "x"}, r"transforms\.x\.type' is required"),
    ({"transforms": "x,x", "transforms.x.type": ROUTER}, "twice"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "b",
      "transforms.x.predicate": "nope"}, "predicate 'nope'"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "a", "transforms.x.replacement": "b",
      "transforms.x.negate": "true"}, r"needs 'transforms\.x\.predicate'"),
    ({"predicates": "p", "predicates.p.type": P + "Nope"}, "predicate 'p'"),
    ({"predicates": "p", "predicates.p.type": P + "TopicNameMatches"}, r"predicates\.p\.pattern"),
    ({"transforms": "x", "transforms.x.type": ROUTER, "transforms.x.regex": "(", "transforms.x.replacement": "b"},
     "invalid regular expression"),
])
def test_errors_at_start_name_the_alias_and_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_chain(props)


def test_unused_and_unlisted_settings_are_reported() -> None:
    chain = build_chain({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.regex": "a",
                         "transforms.r.replacement": "b", "transforms.r.bogus": "1", "transforms.old.type": ROUTER,
                         "predicates": "p", "predicates.p.type": P + "RecordIsTombstone"})
    assert set(chain.not_applied) == {"transforms.r.bogus", "transforms.old.type", "predicates.p.type"}
