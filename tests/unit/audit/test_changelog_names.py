"""The names a silver table's bronze change log may have without the ingest configuration."""

from __future__ import annotations

from lakecdc.audit.changelog import candidate_names


def test_silver_as_a_word_of_a_name_part_becomes_bronze() -> None:
    assert candidate_names("silver.shop_public_customers", set()) == ["bronze.shop_public_customers"]
    assert candidate_names("shop_silver.customers", set()) == ["shop_bronze.customers"]
    assert candidate_names("main.SILVER.orders", set()) == ["main.BRONZE.orders"]
    assert candidate_names("silverware.items", set()) == []  # not a word of its own


def test_the_default_bronze_name_of_each_topic_the_silver_table_consumed() -> None:
    assert candidate_names("sales.orders", {"shop.public.orders"}) == ["bronze.shop_public_orders"]
    assert candidate_names("main.sales.orders", {"shop.public.order-lines"}) == ["main.bronze.shop_public_order_lines"]
    assert candidate_names("silver.x", {"shop.public.x"}) == ["bronze.x", "bronze.shop_public_x"]
