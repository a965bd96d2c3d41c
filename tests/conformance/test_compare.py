"""The harness's comparison and SQL splitting (no Debezium needed: fast, always run)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from compare import MaskRules, assert_conformant, compare, compare_by_topic, format_report, mask_record
from harness import load_capture, split_sql
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_paths import SHARED_ROOT

SHARED = SHARED_ROOT / "conformance"
GOLDEN = SHARED / "postgres" / "workload.jsonl"
GOLDEN_NORMALIZED = SHARED / "postgres" / "workload.normalized.jsonl"


@pytest.fixture(scope="module")
def golden() -> list[dict[str, Any]]:
    return load_capture(GOLDEN)


def test_masking_reproduces_the_shared_normalized_file(golden: list[dict[str, Any]]) -> None:
    normalized = [{k: v for k, v in r.items() if k != "seq"} for r in load_capture(GOLDEN_NORMALIZED)]
    assert [mask_record(r, MaskRules()) for r in golden] == normalized


def test_identical_captures_have_no_difference(golden: list[dict[str, Any]]) -> None:
    assert compare(golden, copy.deepcopy(golden)) == []
    assert_conformant(golden, copy.deepcopy(golden), MaskRules.for_connector("postgres"))


def test_run_dependent_fields_are_masked(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    for record in actual:
        payload = (record["value"] or {}).get("payload") or {}
        if "source" in payload:
            payload["source"]["lsn"] += 1000
            payload["source"]["txId"] = (payload["source"]["txId"] or 0) + 7
            payload["ts_ms"] += 5
        if isinstance(payload.get("transaction"), dict):
            payload["transaction"]["id"] = "999:123456"
    assert compare(golden, actual, MaskRules.for_connector("postgres")) == []


def test_planted_difference_is_reported_at_its_path(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    index = next(i for i, r in enumerate(actual) if r["value"] and r["value"]["payload"].get("op") == "u"
                 and r["topic"] == "dbz.public.customers")
    after = actual[index]["value"]["payload"]["after"]
    expected_balance = after["balance"]
    after["balance"] = "AB=="
    differences = compare(golden, actual)
    assert [str(d) for d in differences] == [
        f"record {index} value.payload.after.balance: {expected_balance!r} != 'AB=='"
    ]
    assert differences[0].path == "value.payload.after.balance"


def test_schema_difference_path_includes_list_indexes(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    actual[0]["value"]["schema"]["fields"][1]["fields"][3]["parameters"]["scale"] = "3"
    (difference,) = compare(golden, actual)
    assert str(difference) == "record 0 value.schema.fields[1].fields[3].parameters.scale: '2' != '3'"


def test_types_are_compared_strictly() -> None:
    exp = [{"topic": "t", "key": None, "value": {"payload": {"after": {"a": 1, "b": True}}}, "headers": []}]
    act = [{"topic": "t", "key": None, "value": {"payload": {"after": {"a": 1.0, "b": 1}}}, "headers": []}]
    assert [d.path for d in compare(exp, act)] == ["value.payload.after.a", "value.payload.after.b"]


def test_missing_and_extra_records_do_not_shift_later_comparisons(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    removed = actual.pop(10)
    extra = copy.deepcopy(golden[3])
    extra["key"] = None
    actual.insert(20, extra)
    differences = compare(golden, actual)
    assert [(d.kind, d.expected_index, d.actual_index)
            for d in differences] == [("missing", 10, None), ("extra", None, 20)]
    assert removed["topic"] in str(differences[0])


def test_moved_record_is_an_order_difference(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    moved = actual.pop(2)
    actual.append(moved)
    differences = compare(golden, actual)
    assert [(d.kind, d.expected_index, d.actual_index) for d in differences] == [("order", 2, len(actual) - 1)]
    assert "order differs" in str(differences[0])


def test_missing_field_and_tombstone_difference() -> None:
    exp = [{"topic": "t", "key": {"payload": {"id": 1}}, "value": {"payload": {"op": "d", "x": 1}}, "headers": []},
           {"topic": "t", "key": {"payload": {"id": 1}}, "value": None, "headers": []}]
    act = [{"topic": "t", "key": {"payload": {"id": 1}}, "value": {"payload": {"op": "d"}}, "headers": []}]
    texts = [str(d) for d in compare(exp, act)]
    assert texts == ["record 0 value.payload.x: 1 != '<absent>'",
                     'record 1 missing from actual: t key={"id": 1} tombstone']


def test_headers_masks_and_switch() -> None:
    def rec(run_id: str, newkey: int) -> dict[str, Any]:
        return {"topic": "t", "key": None, "value": None, "headers": [
            {"key": "__debezium.newkey", "value": {"payload": {"id": newkey}}},
            {"key": "__debezium.context.runId", "value": {"payload": run_id}}]}
    assert compare([rec("a", 1)], [rec("b", 1)]) == []
    (difference,) = compare([rec("a", 1)], [rec("a", 2)])
    assert difference.path == "headers[0].value.payload.id"
    assert compare([rec("a", 1)], [rec("a", 2)], MaskRules(compare_headers=False)) == []


def test_connector_presets_mask_only_their_fields() -> None:
    record = {"topic": "t", "key": None, "headers": [],
              "value": {"payload": {"source": {"lsn": 5, "file": "binlog.1", "pos": 4}}}}
    masked_pg = mask_record(record, MaskRules.for_connector("postgres"))["value"]["payload"]["source"]
    masked_my = mask_record(record, MaskRules.for_connector("mysql"))["value"]["payload"]["source"]
    assert masked_pg == {"lsn": "<pos>", "file": "binlog.1", "pos": 4}
    assert masked_my == {"lsn": 5, "file": "<pos>", "pos": "<pos>"}
    with pytest.raises(ValueError, match="no mask preset for connector 'db2'"):
        MaskRules.for_connector("db2")


def test_extra_paths_are_masked() -> None:
    exp = [{"topic": "t", "key": None, "value": {"payload": {"source": {"version": "3.6.3.Final"}}}, "headers": []}]
    act = [{"topic": "t", "key": None, "value": {"payload": {"source": {"version": "0.1.0"}}}, "headers": []}]
    assert len(compare(exp, act)) == 1
    assert compare(exp, act, MaskRules(extra_paths=frozenset({"value.payload.source.version"}))) == []


def test_assert_conformant_report_is_readable(golden: list[dict[str, Any]]) -> None:
    actual = copy.deepcopy(golden)
    actual[5]["topic"] = "dbz.other"
    with pytest.raises(AssertionError) as info:
        assert_conformant(golden, actual)
    report = str(info.value)
    assert report.splitlines()[0] == (
        f"1 differences between {len(golden)} expected and {len(golden)} actual records "
        "(1 field, 0 missing, 0 extra, 0 order)"
    )
    assert f"record 5 topic: {golden[5]['topic']!r} != 'dbz.other'" in report


def test_report_is_limited() -> None:
    exp = [{"topic": "t", "key": None, "value": {"payload": {"n": i}}, "headers": []} for i in range(60)]
    act = [{"topic": "t", "key": None, "value": {"payload": {"n": -i - 1}}, "headers": []} for i in range(60)]
    report = format_report(compare(exp, act), 60, 60, limit=10)
    assert report.count("\n") == 11 and report.endswith("... and 50 more")


def test_split_sql_keeps_quoted_semicolons_and_drops_comments() -> None:
    script = """
    -- leading comment; with semicolon
    INSERT INTO t VALUES ('a;b', 'it''s; fine', E'x\\';y');
    /* block; comment */ UPDATE t SET "odd;name" = 1;
    CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
    BEGIN; COMMIT
    """
    assert split_sql(script) == [
        "INSERT INTO t VALUES ('a;b', 'it''s; fine', E'x\\';y')",
        'UPDATE t SET "odd;name" = 1',
        "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql",
        "BEGIN",
        "COMMIT",
    ]


def test_split_sql_on_the_shared_workload() -> None:
    statements = split_sql((SHARED / "postgres" / "pg_workload.sql").read_text())
    assert statements[0].startswith("INSERT INTO customers")
    assert statements.count("BEGIN") == 1 and statements.count("COMMIT") == 1
    assert statements[-1].startswith("INSERT INTO customers") and "'Frank'" in statements[-1]
    assert not any(s.startswith("--") for s in statements)
    assert json.dumps(statements)  # plain strings, ready for the runner's spec file


# --------------------------------------------------------------------------- properties

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=5),
                    st.floats(allow_nan=False, allow_infinity=False))
NAMES = st.sampled_from(["id", "name", "after", "before", "n", "x", "balance", "fields"])
TREES = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(NAMES, children, max_size=3)), max_leaves=12)
RECORDS = st.lists(st.fixed_dictionaries({
    "topic": st.sampled_from(["a", "b"]), "key": st.none(), "headers": st.just([]),
    "value": st.fixed_dictionaries({"payload": st.dictionaries(NAMES, TREES, min_size=1, max_size=3)}),
}), min_size=1, max_size=6)


def leaves(node: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in leaves(v, f"{path}.{k}")] if node else [(path, node)]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in leaves(v, f"{path}[{i}]")] if node else [(path, node)]
    return [(path, node)]


def set_leaf(record: dict[str, Any], path: str, value: Any) -> None:
    parts = re.findall(r"\.([^.\[]+)|\[(\d+)\]", "." + path)
    node: Any = record
    steps = [name if name else int(index) for name, index in parts]
    for step in steps[:-1]:
        node = node[step]
    node[steps[-1]] = value


@settings(max_examples=60, deadline=None)
@given(RECORDS)
def test_property_a_capture_equals_itself(records: list[dict[str, Any]]) -> None:
    assert compare(records, copy.deepcopy(records), MaskRules(ts_keys=frozenset(), txid_pattern=None)) == []


@settings(max_examples=60, deadline=None)
@given(RECORDS, st.data())
def test_property_one_changed_leaf_is_one_difference_at_its_path(records: list[dict[str, Any]], data: Any) -> None:
    index = data.draw(st.integers(0, len(records) - 1))
    path, old = data.draw(st.sampled_from(leaves(records[index]["value"], "value")))
    new = data.draw(SCALARS.filter(lambda v: type(v) is not type(old) or v != old))
    actual = copy.deepcopy(records)
    set_leaf(actual[index], path, new)
    rules = MaskRules(ts_keys=frozenset(), txid_pattern=None, mask_schema_change_position=False)
    differences = compare(records, actual, rules)
    assert [(d.kind, d.path, d.expected_index) for d in differences] == [("value", path, index)]


def test_compare_by_topic_ignores_cross_topic_order(golden: list[dict[str, Any]]) -> None:
    regrouped = sorted(copy.deepcopy(golden), key=lambda r: r["topic"])  # what reading topic by topic gives
    assert compare(golden, regrouped) != []
    assert compare_by_topic(golden, regrouped) == []
    regrouped[0]["value"]["payload"]["after"]["id"] = 999
    (difference,) = compare_by_topic(golden, regrouped)
    assert difference.path == f"[{regrouped[0]['topic']}] value.payload.after.id"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=20), st.lists(st.sampled_from("abc"), max_size=20))
def test_property_align_is_a_shortest_edit_script(a: list[str], b: list[str]) -> None:
    import difflib

    from compare import align

    ops = align(a, b)
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:  # contiguous, covering both sequences
        assert (i1, j1) == (i, j)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    matched = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    heuristic = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    assert matched >= heuristic  # at least as many records paired as difflib's heuristic pairs


def test_repetitive_long_captures_align_exactly(golden: list[dict[str, Any]]) -> None:
    expected = [json.loads(json.dumps(r)) for _ in range(40) for r in golden]
    actual = [json.loads(json.dumps(r)) for r in expected]
    actual[1000]["topic"] = "x"
    del actual[1500]
    differences = compare(expected, actual)
    assert [(d.kind, d.expected_index) for d in differences] == [("value", 1000), ("missing", 1500)]


@pytest.mark.parametrize(("connector", "tx_id"), [
    ("postgres", "571:53195832"),
    ("mysql", "0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10"),
    ("mysql", "0-1-5"),
    ("sqlserver", "00000025:00000d08:0025"),
    ("oracle", "02000a0037030000"),
])
def test_connector_presets_mask_their_transaction_ids(connector: str, tx_id: str) -> None:
    record = {"topic": "t", "key": None, "headers": [],
              "value": {"payload": {"transaction": {"id": tx_id, "total_order": 1}, "after": {"id": "kept"}}}}
    masked = mask_record(record, MaskRules.for_connector(connector))["value"]["payload"]
    assert masked["transaction"] == {"id": "<txid>", "total_order": 1}
    assert masked["after"] == {"id": "kept"}
