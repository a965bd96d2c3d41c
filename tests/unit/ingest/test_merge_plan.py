"""The MERGE plan and its renderings: one set of clauses, spelled per engine.

The ``_seq`` comparison is checked by evaluating the rendered expression itself (with Python
operators standing in for SQL), against Python's tuple ordering over many random positions.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.lake.merge_plan import (
    DATAFUSION,
    SPARK,
    MergePlan,
    join_condition,
    merge_clauses,
    render_spark_sql,
    seq_components,
    seq_literal,
    seq_newer,
)

seqs = st.tuples(*[st.integers(min_value=0, max_value=2**40) for _ in range(4)])


def _evaluate(expr: str, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    python = expr.replace(" OR ", " or ").replace(" AND ", " and ").replace(" = ", " == ")
    python = re.sub(r"s\.`_seq`\[(\d)\]", r"a[\1]", python)
    python = re.sub(r"t\.`_seq`\[(\d)\]", r"b[\1]", python)
    return bool(eval(python, {"a": a, "b": b}))  # noqa: S307 - test-only evaluation of our own output


@given(seqs, seqs)
def test_seq_newer_is_numeric_lexicographic_order(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    expr = seq_newer(SPARK, seq_components(SPARK, "s"), seq_components(SPARK, "t"))
    assert _evaluate(expr, a, b) == (a > b)


def test_seq_newer_is_not_string_order() -> None:
    expr = seq_newer(SPARK, seq_components(SPARK, "s"), seq_components(SPARK, "t"))
    assert _evaluate(expr, (100, 0, 0, 0), (99, 0, 0, 0))  # "100" < "99" as strings
    assert not _evaluate(expr, (5, 1, 0, 0), (5, 1, 0, 0))  # equal is not newer: replays are no-ops
    assert _evaluate(expr, (5, 1, 0, 1), (5, 1, 0, 0))


def test_datafusion_indexes_seq_from_one() -> None:
    assert seq_components(DATAFUSION, "s") == [f's."_seq"[{i}]' for i in (1, 2, 3, 4)]
    assert seq_components(SPARK, "t") == [f"t.`_seq`[{i}]" for i in (0, 1, 2, 3)]
    assert seq_literal((1, 2, 3, 4)) == ["1", "2", "3", "4"]


def test_hard_delete_plan_clauses() -> None:
    plan = MergePlan(keys=("id",), columns=("id", "name"), placeholders=False)
    kinds = [c.kind for c in merge_clauses(plan, SPARK)]
    assert kinds == ["matched_delete", "matched_update", "not_matched_insert"]
    update = merge_clauses(plan, SPARK)[1]
    assert dict(update.assignments)["name"] == "s.`name`"
    assert "id" not in dict(update.assignments)  # keys never change on a matched row
    insert = merge_clauses(plan, SPARK)[2]
    assert "s.`_removed_seq` IS NULL" in (insert.condition or "")
    assert join_condition(plan, SPARK) == "t.`id` = s.`id`"


def test_placeholders_keep_stored_value_and_insert_null() -> None:
    plan = MergePlan(keys=("id",), columns=("id", "notes"), placeholders=True)
    update, insert = merge_clauses(plan, SPARK)[1:3]
    assert dict(update.assignments)["notes"] == (
        "CASE WHEN array_contains(s.`_unavailable`, 'notes') THEN t.`notes` ELSE s.`notes` END")
    assert dict(insert.assignments)["notes"].startswith("CASE WHEN array_contains(s.`_unavailable`, 'notes') THEN NULL")
    datafusion = dict(merge_clauses(plan, DATAFUSION)[1].assignments)["notes"]
    assert datafusion == 'CASE WHEN array_has(s."_unavailable", \'notes\') THEN t."notes" ELSE s."notes" END'


def test_soft_delete_plan_marks_rows() -> None:
    plan = MergePlan(keys=("id",), columns=("id", "name"), delete_mode="soft", placeholders=False)
    clauses = merge_clauses(plan, SPARK)
    assert [c.kind for c in clauses] == ["matched_update", "matched_update", "not_matched_insert"]
    mark = dict(clauses[0].assignments)
    assert mark["_is_deleted"] == "true" and mark["_deleted_at"] == "timestamp_millis(s.`_source_ts_ms`)"
    assert "name" not in mark  # a soft delete keeps the last values
    assert dict(clauses[1].assignments)["_is_deleted"] == "false"


def test_truncate_renders_not_matched_by_source() -> None:
    hard = MergePlan(keys=("id",), columns=("id",), truncate_seq=(7, 7, 0, 0), truncate_ts_ms=5,
                     truncated_through=(7, 7, 0, 0), placeholders=False)
    last = merge_clauses(hard, SPARK)[-1]
    assert last.kind == "not_matched_by_source_delete"
    assert (last.condition or "").startswith("(7 > t.`_seq`[0] OR (7 = t.`_seq`[0]")
    insert = merge_clauses(hard, SPARK)[-2]
    assert "s.`_seq`[0] > 7" in (insert.condition or "")  # nothing older than the truncate is inserted
    soft = MergePlan(keys=("id",), columns=("id",), delete_mode="soft", truncate_seq=(7, 7, 0, 0),
                     truncate_ts_ms=5, placeholders=False)
    last = merge_clauses(soft, DATAFUSION)[-1]
    assert last.kind == "not_matched_by_source_update"
    assert dict(last.assignments)["_seq"] == ("make_array(CAST(7 AS BIGINT), CAST(7 AS BIGINT), "
                                              "CAST(0 AS BIGINT), CAST(0 AS BIGINT))")
    assert dict(last.assignments)["_deleted_at"] == "to_timestamp_millis(CAST(5 AS BIGINT))"


def test_no_truncate_no_full_table_clause() -> None:
    plan = MergePlan(keys=("id",), columns=("id",), placeholders=False)
    assert all("by_source" not in c.kind for c in merge_clauses(plan, SPARK))


def test_spark_sql_rendering() -> None:
    plan = MergePlan(keys=("tenant", "id"), columns=("tenant", "id", "name"), placeholders=False)
    sql = render_spark_sql(plan, "lake.silver.customers", "src")
    lines = sql.splitlines()
    assert lines[:3] == ["MERGE INTO lake.silver.customers AS t", "USING src AS s",
                         "ON t.`tenant` = s.`tenant` AND t.`id` = s.`id`"]
    assert lines[3].startswith("WHEN MATCHED AND s.`_op` = 'd' AND (") and lines[3].endswith("THEN DELETE")
    assert lines[4].startswith("WHEN MATCHED AND s.`_op` <> 'd'") and "THEN UPDATE SET `name` = s.`name`" in lines[4]
    assert lines[5].startswith("WHEN NOT MATCHED AND s.`_op` <> 'd'")
    assert "THEN INSERT (`tenant`, `id`, `name`, `_seq`, `_op`, `_source_ts_ms`, `_tx_id`)" in lines[5]


def test_plan_validates_keys() -> None:
    with pytest.raises(ValueError, match="needs key columns"):
        MergePlan(keys=(), columns=("id",))
    with pytest.raises(ValueError, match=r"key columns \['pk'\]"):
        MergePlan(keys=("pk",), columns=("id",))


def test_column_names_are_quoted() -> None:
    plan = MergePlan(keys=("order",), columns=("order", "select"), placeholders=False)
    sql = render_spark_sql(plan, "lake.s.t", "src")
    assert "t.`order` = s.`order`" in sql and "`select` = s.`select`" in sql


def test_key_ranges_bound_the_target_unless_the_batch_truncates() -> None:
    ranges = ((1, 1), (950_000, 950_099))
    plan = MergePlan(keys=("id", "tenant"), columns=("id", "tenant"), placeholders=False, key_ranges=ranges)
    assert join_condition(plan, SPARK) == ("t.`id` = s.`id` AND t.`tenant` = s.`tenant` AND "
                                           "(t.`id` = 1 OR t.`id` BETWEEN 950000 AND 950099)")
    assert join_condition(plan, DATAFUSION).endswith('AND (t."id" = 1 OR t."id" BETWEEN 950000 AND 950099)')
    # NOT MATCHED BY SOURCE must see every stored row: no bound with a truncate in the batch
    truncating = MergePlan(keys=("id",), columns=("id",), placeholders=False, key_ranges=ranges,
                           truncate_seq=(5, 5, 0, 0), truncate_ts_ms=5)
    assert join_condition(truncating, SPARK) == "t.`id` = s.`id`"
