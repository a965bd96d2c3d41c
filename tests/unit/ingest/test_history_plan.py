"""The history MERGE plan as each engine gets it, and the configuration that turns history on."""

from __future__ import annotations

import pytest

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import ConfigError
from lakecdc.lake.history_plan import HistoryPlan, history_clauses, history_join, render_history_spark_sql
from lakecdc.lake.layout import HISTORY_META_COLUMNS
from lakecdc.lake.merge_plan import DATAFUSION, SPARK
from lakecdc.lake.naming import TableNamer

COLUMNS = ("id", "we`ird", *HISTORY_META_COLUMNS)


def test_spark_merge_matches_versions_by_key_and_start_and_closes_in_order_versions_at_a_truncate() -> None:
    sql = render_history_spark_sql(HistoryPlan(("id",), COLUMNS, (9, 9, 0, 0), 1_700_000_000_009),
                                   "`lake`.`silver`.`t__history`", "src")
    assert "ON t.`id` = s.`id` AND t.`_valid_from_seq`[0] = s.`_valid_from_seq`[0]" in sql
    assert "t.`_valid_from_seq`[3] = s.`_valid_from_seq`[3]" in sql
    assert "WHEN MATCHED AND s.`__action` = 'delete' THEN DELETE" in sql
    assert "WHEN NOT MATCHED AND s.`__action` = 'upsert' THEN INSERT (`id`, `we``ird`, `_valid_from_seq`" in sql
    assert "WHEN NOT MATCHED BY SOURCE AND t.`_valid_to_seq` IS NULL AND (9 > t.`_last_seq`[0]" in sql
    assert ("`_valid_to_seq` = array(CAST(9 AS BIGINT), CAST(9 AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT))"
            in sql)
    assert "timestamp_millis(CAST(1700000000009 AS BIGINT))" in sql and "`_is_current` = false" in sql


def test_without_a_truncate_no_clause_reaches_rows_outside_the_source() -> None:
    for dialect in (SPARK, DATAFUSION):
        kinds = [c.kind for c in history_clauses(HistoryPlan(("id",), COLUMNS), dialect)]
        assert kinds == ["matched_delete", "matched_update", "not_matched_insert"]


def test_datafusion_counts_positions_from_one() -> None:
    on = history_join(HistoryPlan(("id",), COLUMNS), DATAFUSION)
    assert 't."_valid_from_seq"[1] = s."_valid_from_seq"[1]' in on and "[0]" not in on
    update = history_clauses(HistoryPlan(("id",), COLUMNS, (9, 9, 0, 0), 5), DATAFUSION)[-1]
    assert dict(update.assignments)["_valid_to_seq"].startswith("make_array(")


def test_a_plan_without_history_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="_valid_from_seq"):
        HistoryPlan(("id",), ("id", "name"))


BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic.prefix": "shop"}


def test_mapping_turns_history_on_with_its_tracked_columns() -> None:
    config = IngestConfig.from_properties({
        **BASE, "table.mapping.shop.public.customers.history": "scd2",
        "table.mapping.shop.public.customers.track_history_except_columns": "last_login, visits"})
    target = TableNamer(config).target("shop.public.customers")
    assert target.history == "scd2" and target.history_table == "silver.shop_public_customers__history"
    assert target.track_history_except_columns == ("last_login", "visits") and target.track_history_columns == ()
    assert TableNamer(config).target("shop.public.orders").history is None


def test_tracked_columns_without_history_are_an_error_naming_the_setting() -> None:
    config = IngestConfig.from_properties({**BASE, "table.mapping.shop.public.customers.track_history_columns": "a"})
    with pytest.raises(ConfigError, match="need history: scd2"):
        TableNamer(config).target("shop.public.customers")


def test_an_unknown_history_kind_is_refused() -> None:
    config = IngestConfig.from_properties({**BASE, "table.mapping.shop.public.customers.history": "scd3"})
    with pytest.raises(Exception, match="scd2"):
        TableNamer(config).target("shop.public.customers")
