"""Table filters and message.key.columns decide exactly like Debezium's own classes.

One JVM start answers every case (``debezium_config_oracle.py``); the answers are computed once per
module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lakecdc.config import CommonConnectorConfig

pytestmark = pytest.mark.conformance

HERE = Path(__file__).resolve().parent
TABLES = [
    ["public", "orders"], ["public", "orders_2024"], ["PUBLIC", "Orders"], ["sales", "orders"],
    ["sales", "tmp_1"], ["hr", "people"], ["public", "t_12"], ["public", "t_1234"], ["x.y", "z"],
    ["public", "order$"], ["inventory", "customers"], ["Inventory", "CUSTOMERS"],
]
LISTS: list[dict[str, str]] = [
    {},
    {"table.include.list": "public.orders"},
    {"table.include.list": "public\\.orders.*"},
    {"table.include.list": "public\\.t_\\d{1\\,3}"},
    {"table.include.list": " public.orders , sales\\..* "},
    {"table.exclude.list": ".*\\.tmp_.*,hr\\..*"},
    {"schema.include.list": "sales,HR"},
    {"schema.exclude.list": "public"},
    {"schema.include.list": "public,sales", "table.exclude.list": "public\\.orders_.*"},
    {"schema.include.list": "public", "table.include.list": "sales\\.orders,public\\.t_.*"},
    {"table.include.list": "(inventory|public)\\.(customers|orders)"},
    {"table.include.list": "public\\.order\\$"},
    {"schema.include.list": "x\\.y"},
]


KEY_COLUMNS = ["id", "b", "a", "c", "Mixed"]
KEY_SPECS = [
    "public.orders:a,b", "public.orders:B", "public.orders:x", "public.ord.*:a;public.orders:c",
    "(.*).orders:a", "public.orders: a, b", "public.orders:[ab]", "public.orders:a;public.orders:[ab]",
    "public.orders:a,x", "PUBLIC.ORDERS:a", "public.orders:.*", "public.orders:a;;", "other.t:a",
    "public.orders:mixed", "public\\.orders:c,a",
]


COLUMNS = [["public", "t", "id"], ["public", "t", "NAME"], ["public", "t", "secret"], ["public", "users", "password"],
           ["sales", "t", "id"], ["public", "t2", "id"], ["Public", "T", "Id"]]
COLUMN_LISTS = [
    {"column.include.list": "public.t.(id|name)"}, {"column.include.list": "public\\.t\\..*,sales.t.id"},
    {"column.exclude.list": ".*\\.password"}, {"column.exclude.list": "public.t.secret, .*\\.id"},
    {"column.include.list": "public.t.*.id"},
]


TOPIC_PROPERTIES: list[dict[str, str]] = [
    {}, {"heartbeat.topics.prefix": "old"}, {"topic.heartbeat.prefix": "hb"},
    {"heartbeat.topics.prefix": "old", "topic.heartbeat.prefix": "hb"}, {"transaction.topic": "tx2"},
    {"topic.transaction": "tx3"}, {"topic.delimiter": "_"}, {"topic.delimiter": "_", "topic.transaction": "t"},
]
TOPIC_TABLES = [["public", "customers"], ["public", "odd$name"], ["sales", "my-table"], ["public", "über"]]


@pytest.fixture(scope="module")
def debezium() -> dict[str, Any]:
    cases = {
        "topics": [{"properties": {"topic.prefix": "dbz", **props}, "tables": TOPIC_TABLES}
                   for props in TOPIC_PROPERTIES],
        "selectors": [{**lists, "tables": TABLES} for lists in LISTS],
        "columns": [{**lists, "columns": COLUMNS} for lists in COLUMN_LISTS],
        "keys": [{"message.key.columns": spec, "table": ["public", "orders"], "columns": KEY_COLUMNS,
                  "primary_key": ["id"]} for spec in KEY_SPECS],
    }
    result = subprocess.run([sys.executable, str(HERE / "debezium_config_oracle.py")], input=json.dumps(cases),
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("ORACLE-RESULT "))
    return json.loads(line[len("ORACLE-RESULT "):])  # type: ignore[no-any-return]


def test_message_key_columns_match_debezium_key_mapper(debezium: dict[str, Any]) -> None:
    mismatches = []
    for spec, answer in zip(KEY_SPECS, debezium["keys"]):
        keys = CommonConnectorConfig.from_properties({"topic.prefix": "p", "message.key.columns": spec}).key_columns
        ours = keys.for_table("public", "orders", KEY_COLUMNS) or ["id"]  # None: the primary key, as Debezium
        # Debezium repeats a column two rules both name (a key schema with a duplicate field, which
        # Kafka Connect then rejects); lakecdc names it once.
        expected = list(dict.fromkeys(answer)) if isinstance(answer, list) else answer
        if ours != expected:
            mismatches.append(f"{spec!r}: ours={ours} debezium={answer}")
    assert mismatches == []


def test_topic_names_from_config_match_debezium_naming_strategy(debezium: dict[str, Any]) -> None:
    """Config fields, handed to TopicNamer the way the connectors do, name topics like Debezium."""
    from lakecdc.events.topics import TableId, TopicNamer

    mismatches = []
    for props, answer in zip(TOPIC_PROPERTIES, debezium["topics"]):
        cfg = CommonConnectorConfig.from_properties({"topic.prefix": "dbz", **props})
        namer = TopicNamer(cfg.topic_prefix, "postgresql", delimiter=cfg.topic_delimiter,
                           transaction_suffix=cfg.topic_transaction, heartbeat_prefix=cfg.topic_heartbeat_prefix,
                           schema_name_adjustment=cfg.schema_name_adjustment_mode)
        ours = {"heartbeat": namer.heartbeat_topic, "transaction": namer.transaction_topic,
                "data": [namer.data_topic(TableId(None, s, t)) for s, t in TOPIC_TABLES]}
        if ours != answer:
            mismatches.append(f"{props}: ours={ours} debezium={answer}")
    assert mismatches == []


def test_column_filter_matches_debezium(debezium: dict[str, Any]) -> None:
    mismatches = []
    for lists, decisions in zip(COLUMN_LISTS, debezium["columns"]):
        column_filter = CommonConnectorConfig.from_properties({"topic.prefix": "p", **lists}).column_filter
        for (schema, table, column), expected in zip(COLUMNS, decisions):
            if column_filter.matches(schema, table, column) != expected:
                mismatches.append(f"{lists} {schema}.{table}.{column}: debezium={expected}")
    assert mismatches == []
    assert any(not all(d) for d in debezium["columns"]) and any(any(d) for d in debezium["columns"])


def test_table_filter_matches_debezium_selectors(debezium: dict[str, Any]) -> None:
    expected = debezium["selectors"]
    mismatches = []
    for lists, decisions in zip(LISTS, expected):
        table_filter = CommonConnectorConfig.from_properties({"topic.prefix": "p", **lists}).table_filter
        for (schema, table), debezium in zip(TABLES, decisions):
            if table_filter.matches(schema, table) != debezium:
                mismatches.append(f"{lists} {schema}.{table}: debezium={debezium}")
    assert mismatches == []
    assert any(not all(d) for d in expected) and any(any(d) for d in expected)  # the cases discriminate
