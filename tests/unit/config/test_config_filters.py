"""Debezium regex-list semantics: anchored, case-insensitive, escaped commas, system schemas."""

from __future__ import annotations

import pytest

from lakecdc.config.filters import ColumnFilter, KeyColumns, TableFilter, compile_regex_list, split_list
from lakecdc.errors import ConfigError


def test_split_list_trims_and_keeps_escaped_commas() -> None:
    assert split_list(" a , b\\,c ,, d ") == ["a", "b,c", "d"]
    assert split_list(None) == []


def test_regex_with_escaped_comma_quantifier() -> None:
    patterns = compile_regex_list("public\\.t_\\d{1\\,3}", "table.include.list")
    flt = TableFilter(table_include=patterns)
    assert flt.matches("public", "t_12")
    assert not flt.matches("public", "t_1234")


def test_include_is_anchored_full_match() -> None:
    flt = TableFilter(table_include=compile_regex_list("public.orders", "table.include.list"))
    assert flt.matches("public", "orders")
    assert not flt.matches("public", "orders_archive")
    assert not flt.matches("xpublic", "orders")


def test_matching_is_case_insensitive_like_debezium() -> None:
    flt = TableFilter(table_include=compile_regex_list("Public.Orders", "table.include.list"))
    assert flt.matches("public", "ORDERS")


def test_exclude_list_and_schema_lists() -> None:
    flt = TableFilter(
        table_exclude=compile_regex_list(".*\\.tmp_.*", "table.exclude.list"),
        schema_include=compile_regex_list("sales,hr", "schema.include.list"),
        excluded_schemas=frozenset({"pg_catalog"}),
    )
    assert flt.matches("sales", "orders")
    assert not flt.matches("sales", "tmp_x")
    assert not flt.matches("public", "orders")
    assert flt.matches_schema("hr") and not flt.matches_schema("public") and not flt.matches_schema("pg_catalog")


def test_excluded_system_schemas_even_without_lists() -> None:
    flt = TableFilter(excluded_schemas=frozenset({"pg_catalog", "information_schema"}))
    assert flt.matches("public", "anything")
    assert not flt.matches("pg_catalog", "pg_class")


def test_column_filter_on_qualified_column() -> None:
    include = ColumnFilter(include=compile_regex_list("public.t.(id|name)", "column.include.list"))
    assert include.matches("public", "t", "id") and not include.matches("public", "t", "secret")
    exclude = ColumnFilter(exclude=compile_regex_list(".*\\.password", "column.exclude.list"))
    assert not exclude.matches("public", "users", "password") and exclude.matches("public", "users", "name")
    assert ColumnFilter().is_trivial and not exclude.is_trivial


def test_key_columns_every_matching_rule_contributes_in_rule_order() -> None:
    keys = KeyColumns.parse("public.t:a;public.*:b,c")
    assert keys.for_table("public", "t") == ["a", "b", "c"]
    assert keys.for_table("public", "u") == ["b", "c"]
    assert keys.for_table("public", "t", ["c", "b", "a", "d"]) == ["a", "b", "c"]
    assert not KeyColumns.parse(None) and keys


def test_key_columns_with_table_columns_are_regexes_in_table_order() -> None:
    keys = KeyColumns.parse("public.t:[AB]")
    assert keys.for_table("public", "t", ["id", "b", "a"]) == ["b", "a"]  # case-insensitive, table order
    assert keys.for_table("public", "t", ["id"]) is None  # nothing matches: the primary key


def test_key_columns_regex_with_comma_in_table_part() -> None:
    keys = KeyColumns.parse("public.t_\\d{1,2}:id")
    assert keys.for_table("public", "t_42") == ["id"]


def test_key_columns_rejects_missing_columns() -> None:
    with pytest.raises(ConfigError, match="'public.t:' is not"):
        KeyColumns.parse("public.t:")
