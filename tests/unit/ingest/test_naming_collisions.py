"""Topic-to-table naming is injective or refuses: two topics never share a bronze/silver table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import ConfigError
from lakecdc.lake.naming import TableNamer

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic.prefix": "shop"}


def namer(**properties: str) -> TableNamer:
    return TableNamer(IngestConfig.from_properties({**BASE, **properties}))


@pytest.mark.parametrize("first, second", [
    ("shop.public.order-items", "shop.public.order_items"),
    ("shop.public.a_b", "shop.public_a.b"),
    ("shop.public.Orders", "shop.public.orders"),  # catalogs resolve names case-insensitively
])
def test_colliding_topics_are_refused_naming_both_and_the_setting(first: str, second: str) -> None:
    n = namer()
    n.target(first)
    with pytest.raises(ConfigError) as raised:
        n.target(second)
    message = str(raised.value)
    assert repr(first) in message and repr(second) in message
    assert f"table.mapping.{second}.bronze" in message and "table.name.format" in message
    assert raised.value.property_name == f"table.mapping.{second}.bronze"


def test_a_mapping_separates_colliding_topics() -> None:
    n = namer(**{"table.mapping.shop.public.order_items.bronze": "bronze.order_items_2",
                 "table.mapping.shop.public.order_items.silver": "silver.order_items_2"})
    a = n.target("shop.public.order-items")
    b = n.target("shop.public.order_items")
    assert {a.bronze_table, a.silver_table}.isdisjoint({b.bronze_table, b.silver_table})


def test_the_same_topic_named_again_is_not_a_collision() -> None:
    n = namer()
    assert n.target("shop.public.orders") == n.target("shop.public.orders")
    n.target("shop.public.orders", key_columns=("id",))


def test_a_silver_name_equal_to_another_topics_delete_ledger_is_refused() -> None:
    n = namer()
    n.target("shop.public.orders")  # its delete ledger is silver.shop_public_orders__deletes
    with pytest.raises(ConfigError, match="silver.shop_public_orders__deletes"):
        n.target("shop.public.orders__deletes")


def test_a_mapping_onto_another_topics_table_is_refused() -> None:
    n = namer(**{"table.mapping.shop.public.b.silver": "silver.shop_public_a"})
    n.target("shop.public.a")
    with pytest.raises(ConfigError, match="table.mapping.shop.public.b.silver"):
        n.target("shop.public.b")


def test_one_topics_bronze_and_silver_in_one_table_is_refused() -> None:
    with pytest.raises(ConfigError, match="bronze and silver tables to one table"):
        namer(**{"table.mapping.shop.public.a.silver": "bronze.shop_public_a"}).target("shop.public.a")


PART = st.text(alphabet="aAb_-.", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.builds(lambda a, b: f"shop.{a}.{b}", PART, PART), min_size=2, max_size=8, unique=True))
def test_distinct_topics_map_to_distinct_tables_or_raise(topics: list[str]) -> None:
    n = namer()
    accepted: dict[str, str] = {}  # folded table name -> topic
    for topic in topics:
        alone = TableNamer(IngestConfig.from_properties(BASE)).target(topic)
        names = {alone.bronze_table.casefold(), alone.silver_table.casefold(),
                 f"{alone.silver_table}__deletes".casefold()}
        clash = sorted({accepted[name] for name in names if name in accepted})
        if clash:
            with pytest.raises(ConfigError) as raised:
                n.target(topic)
            assert repr(topic) in str(raised.value) and any(repr(c) in str(raised.value) for c in clash)
            continue
        target = n.target(topic)
        assert (target.bronze_table, target.silver_table) == (alone.bronze_table, alone.silver_table)
        for name in names:
            accepted[name] = topic
    # every accepted topic still has its own tables
    assert len(set(accepted.values())) * 3 == len(accepted)
