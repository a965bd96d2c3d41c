"""TableFilter decides exactly like Debezium's Selectors for the same lists (one JVM start)."""

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


def debezium_decisions(cases: list[dict[str, Any]]) -> list[list[bool]]:
    result = subprocess.run([sys.executable, str(HERE / "debezium_selectors.py")], input=json.dumps(cases),
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_table_filter_matches_debezium_selectors() -> None:
    cases = [{**lists, "tables": TABLES} for lists in LISTS]
    expected = debezium_decisions(cases)
    mismatches = []
    for lists, decisions in zip(LISTS, expected):
        table_filter = CommonConnectorConfig.from_properties({"topic.prefix": "p", **lists}).table_filter
        for (schema, table), debezium in zip(TABLES, decisions):
            if table_filter.matches(schema, table) != debezium:
                mismatches.append(f"{lists} {schema}.{table}: debezium={debezium}")
    assert mismatches == []
    assert any(not all(d) for d in expected) and any(any(d) for d in expected)  # the cases discriminate
