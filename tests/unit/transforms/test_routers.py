"""RegexRouter and ByLogicalTableRouter against Kafka Connect's / Debezium's rules."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.errors import ConfigError
from lakecdc.events.schema import STRING
from lakecdc.transforms import build_chain
from lakecdc.transforms.java_regex import JavaRouter, compile_java, java_replacement

from .records import ENVELOPE, KEY, ROW, change, delete_pair, one, row

REGEX = "org.apache.kafka.connect.transforms.RegexRouter"
LOGICAL = "io.debezium.transforms.ByLogicalTableRouter"


def regex_chain(regex: str, replacement: str):  # noqa: ANN201
    return build_chain({"transforms": "r", "transforms.r.type": REGEX, "transforms.r.regex": regex,
                        "transforms.r.replacement": replacement})


def test_regex_router_routes_whole_matches_only() -> None:
    chain = regex_chain(r"dbz\.public\.(.*)", "shop.$1")
    routed = one(chain, change("c", None, row(1)))
    assert routed is not None and routed.topic == "shop.items"
    assert routed.value_schema is ENVELOPE and routed.key_schema is KEY  # nothing else changes
    other = change("c", None, row(1))
    other = replace(other, topic="xdbz.public.items")
    assert one(chain, other).topic == "xdbz.public.items"  # type: ignore[union-attr]


@pytest.mark.parametrize(("replacement", "expected"), [
    ("$1", "a"), ("$10", "a0"), ("${t}-x", "a-x"), (r"\$1", "$1"), ("lit", "lit"), ("$2$1", "ba"),
])
def test_java_replacement_syntax(replacement: str, expected: str) -> None:
    router = JavaRouter(r"(?<t>\w)\.(\w)", replacement)
    assert router.route("a.b") == expected


@pytest.mark.parametrize("replacement", ["$", "$3", "${nope}", "x\\", "$a"])
def test_invalid_java_replacements_are_refused_at_start(replacement: str) -> None:
    with pytest.raises(ConfigError, match=r"transforms\.r\.replacement"):
        regex_chain(r"(\w)\.(\w)", replacement)


def test_replace_first_uses_the_first_find_not_the_whole_match() -> None:
    # Java: matches() succeeds with "ab", then replaceFirst() replaces find()'s first match "a"
    assert JavaRouter("(a|ab)", "X").route("ab") == "Xb"


@given(st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.[a-z][a-z0-9_]{0,8}){0,3}", fullmatch=True))
def test_regex_router_prefixing_any_topic(topic: str) -> None:
    assert JavaRouter("(.*)", "p.$1").route(topic) == "p." + topic
    assert JavaRouter(re.escape(topic) + "x", "y").route(topic) is None


def test_java_replacement_reads_the_longest_existing_group_number() -> None:
    pattern = compile_java("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)")
    expand = java_replacement("$11-$12", pattern)
    assert expand(pattern.fullmatch("abcdefghijk")) == "k-a2"  # type: ignore[arg-type]


def logical_chain(**extra: str):  # noqa: ANN201
    return build_chain({"transforms": "l", "transforms.l.type": LOGICAL,
                        "transforms.l.topic.regex": r"dbz\.public\.(items|things)",
                        "transforms.l.topic.replacement": "dbz.all",
                        **{f"transforms.l.{k}": v for k, v in extra.items()}})


def test_by_logical_table_router_renames_schemas_and_adds_the_key_field() -> None:
    routed = one(logical_chain(), change("u", row(1), row(1, "b")))
    assert routed is not None and routed.topic == "dbz.all"
    assert routed.key == {"id": 1, "__dbz__physicalTableIdentifier": "dbz.public.items"}
    assert routed.key_schema is not None and routed.key_schema.name == "dbz.all.Key"
    assert routed.key_schema.fields[-1].schema == STRING and not routed.key_schema.optional
    assert routed.value_schema is not None and routed.value_schema.name == "dbz.all.Envelope"
    assert routed.value_schema.version == ENVELOPE.version
    before = routed.value_schema.field("before").schema
    assert before.name == "dbz.all.Value" and before.optional and before.fields == ROW.fields
    assert routed.value_schema.field("source").schema == ENVELOPE.field("source").schema
    assert routed.value["after"] == row(1, "b") and routed.value["op"] == "u"


def test_by_logical_table_router_key_field_regex_and_uniqueness_off() -> None:
    routed = one(logical_chain(**{"key.field.regex": r"dbz\.public\.(.*)", "key.field.replacement": "$1",
                                  "key.field.name": "tbl"}), change("c", None, row(2)))
    assert routed is not None and routed.key == {"id": 2, "tbl": "items"}
    plain = one(logical_chain(**{"key.enforce.uniqueness": "false"}), change("c", None, row(2)))
    assert plain is not None and plain.key == {"id": 2} and plain.key_schema.field_names == ("id",)  # type: ignore[union-attr]


def test_by_logical_table_router_tombstones_get_topic_and_key_only() -> None:
    _, tombstone = delete_pair(3)
    routed = one(logical_chain(), tombstone)
    assert routed is not None and routed.topic == "dbz.all" and routed.value is None and routed.value_schema is None
    assert routed.key == {"id": 3, "__dbz__physicalTableIdentifier": "dbz.public.items"}


def test_by_logical_table_router_needs_a_key_replacement_with_a_key_regex() -> None:
    with pytest.raises(ConfigError, match="key.field.replacement"):
        logical_chain(**{"key.field.regex": "(.*)"})
    with pytest.raises(ConfigError, match="topic.replacement"):
        build_chain({"transforms": "l", "transforms.l.type": LOGICAL, "transforms.l.topic.regex": "x"})
