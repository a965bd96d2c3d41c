"""Reconciliation against SQL Server and Oracle, executed: the checksum and bisection statements run
through pymssql-, pyodbc- and python-oracledb-shaped connections whose answers an evaluator computes from the
source rows with each vendor's documented function results (``recorded_sources``: recorded result
sets, not a server -- neither database runs here). The lake side is a real Delta table read by
DataFusion, written from the same rows."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from recorded_sources import (
    Evaluator,
    EvaluatorMismatch,
    oracle_connection,
    pyodbc_connection,
    sqlserver_connection,
)

from lakecdc.audit import LakeTable
from lakecdc.quality import check_table
from lakecdc.quality.range_checksums import Dialect

pytestmark = pytest.mark.integration

UTC = dt.timezone.utc
SCHEMAS = {
    "id": [("id", pa.int64())],
    "code+day": [("code", pa.string()), ("day", pa.date32())],
}
COLUMNS = [("amount", pa.decimal128(10, 2)), ("note", pa.string()), ("at", pa.timestamp("us", tz=UTC)),
           ("flag", pa.bool_()), ("blob", pa.binary()), ("ratio", pa.float64())]
#: connection shape -> (connect, source table, the source_dialect option: None when told by the driver)
CONNECT = {"sqlserver": (sqlserver_connection, "dbo.items", "sqlserver"),
           "oracle": (oracle_connection, "SHOP.ITEMS", "oracle"),
           "sqlserver-pyodbc": (pyodbc_connection, "dbo.items", None)}


def key_values(shape: str, i: int) -> dict[str, Any]:
    if shape == "id":
        return {"id": i * 7 - 300}
    # text keys whose code point order differs from a linguistic one, with a quote and non-ASCII
    # (and a "?": pyodbc's paramstyle is qmark, a marker outside a literal would be an error)
    return {"code": ["Zed", "apple", "Ärger", "o'neil?", "zoë", "éclair"][i % 6] + str(i // 6),
            "day": dt.date(2020, 1, 1) + dt.timedelta(days=i % 3)}


def rows(shape: str, n: int = 60) -> list[dict[str, Any]]:
    return [{**key_values(shape, i), "amount": decimal.Decimal(i * 37 % 2000 - 1000) / 100,
             "note": f"note {i} ünïcode" if i % 5 else None,
             "at": dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i * 3601, microseconds=i),
             "flag": i % 3 == 0, "blob": bytes([i, 255 - i]) if i % 4 else None,
             "ratio": i / 7 if i % 6 else -0.0} for i in range(n)]


def lake_table(tmp: Path, shape: str, data: list[dict[str, Any]]) -> LakeTable:
    from deltalake import write_deltalake

    table = LakeTable.delta(tmp, "silver.items")
    write_deltalake(table.uri, pa.Table.from_pylist(data, schema=pa.schema(SCHEMAS[shape] + COLUMNS)))
    return table


def reconcile(table: LakeTable, shape_of_driver: str, shape: str,
              source_rows: list[dict[str, Any]]) -> tuple[Any, Evaluator]:
    connect, name, dialect = CONNECT[shape_of_driver]
    evaluator = Evaluator(shape_of_driver.split("-")[0], name, SCHEMAS[shape], SCHEMAS[shape] + COLUMNS, source_rows)
    told = {"source_dialect": dialect} if dialect else {}
    result = check_table(table, rules=["source_reconciliation"], keys=[k for k, _ in SCHEMAS[shape]],
                         source_connection=connect(evaluator), source_table=name, **told,
                         source_position="recorded", buckets=4, leaf_rows=4).results[0]
    return result, evaluator


def key_of(shape: str, row: dict[str, Any]) -> Any:
    keys = [k for k, _ in SCHEMAS[shape]]
    return row[keys[0]] if len(keys) == 1 else tuple(row[k] for k in keys)


@pytest.mark.parametrize("shape", list(SCHEMAS))
@pytest.mark.parametrize("dialect", list(CONNECT))
def test_reconciliation_runs_on_the_recorded_source(dialect: str, shape: str, tmp_path: Path) -> None:
    data = rows(shape)
    table = lake_table(tmp_path, shape, data)
    same, evaluator = reconcile(table, dialect, shape, data)
    assert same.passed, same.reason
    assert "60 silver rows, 60 source rows" in same.reason and "not compared" not in same.reason
    assert any("buckets" in s for s in evaluator.statements)  # it bisected: bucket checksums were asked

    changed = [dict(r) for r in data]
    changed[11]["amount"] = changed[11]["amount"] + decimal.Decimal("0.01")
    changed[23]["ratio"] = changed[23]["ratio"] + 2 ** -40  # one bit of the double
    changed[30]["note"] = "note 30 ünïcodé"
    changed[41]["at"] = changed[41]["at"] + dt.timedelta(microseconds=1)
    gone = changed.pop(50)
    extra = {**changed[0], **key_values(shape, 99)}
    changed.append(extra)
    drift, _ = reconcile(table, dialect, shape, changed)
    names = [k for k, _ in SCHEMAS[shape]]
    found = {(row[0] if len(names) == 1 else tuple(row[:-1])): row[-1]
             for row in drift.failing[[*names, "_problem"]].itertuples(index=False)}
    assert found == {key_of(shape, data[11]): "differs", key_of(shape, data[23]): "differs",
                     key_of(shape, data[30]): "differs", key_of(shape, data[41]): "differs",
                     key_of(shape, gone): "missing at the source", key_of(shape, extra): "missing in silver"}


def test_a_fragment_whose_documented_result_differs_makes_the_test_fail(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The evaluator is not a mirror of the lake: Oracle's bare TO_CHAR of a decimal (what lakecdc rendered
    before) prints .5 and drops trailing zeros, so every amount with a fraction is reported as differing."""
    from recorded_sources import FRAGMENTS

    data = rows("id", 20)
    table = lake_table(tmp_path, "id", data)
    original = Dialect.text

    def bare(self: Dialect, c: str, type_: pa.DataType, depth: int = 0) -> str:
        if self.name == "oracle" and pa.types.is_decimal(type_):
            return f"TO_CHAR({c})"
        return original(self, c, type_, depth)

    monkeypatch.setattr(Dialect, "text", bare)
    assert ("oracle", "TO_CHAR({c})") in FRAGMENTS  # a known fragment: the evaluator answers, with Oracle's text
    result, _ = reconcile(table, "oracle", "id", data)
    # 1.50 is "1.5", 3.00 is "3", 0.25 is ".25" in Oracle's bare TO_CHAR
    misprinted = [r for r in data if f"{r['amount']:.2f}".endswith("0")
                  or f"{r['amount']:.2f}".lstrip("-").startswith("0.")]
    assert misprinted and not result.passed
    assert result.failed_rows == len(misprinted), result.reason


def test_an_unknown_fragment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Dialect.text
    monkeypatch.setattr(Dialect, "text", lambda self, c, t, depth=0: (
        f"CONVERT(NVARCHAR(MAX), {c})" if self.name == "sqlserver" else original(self, c, t, depth)))
    with pytest.raises(EvaluatorMismatch, match="no documented semantics for CONVERT"):
        Evaluator("sqlserver", "dbo.items", SCHEMAS["id"], SCHEMAS["id"] + COLUMNS, rows("id", 2))


@pytest.mark.parametrize("dialect", ["sqlserver", "oracle"])
def test_a_nested_silver_column_is_named_as_not_compared(dialect: str, tmp_path: Path) -> None:
    """SQL Server and Oracle have no nested values (nor does Debezium's mapping of them emit any): a
    nested silver column (a transform's) is left out, named with the reason; the rest is compared."""
    from deltalake import write_deltalake

    data = rows("id", 12)
    table = LakeTable.delta(tmp_path, "silver.items")
    tags = pa.list_(pa.string())
    write_deltalake(table.uri, pa.Table.from_pylist([{**r, "tags": ["a", str(r["id"])]} for r in data],
                                                    schema=pa.schema(SCHEMAS["id"] + COLUMNS + [("tags", tags)])))
    changed = [dict(r) for r in data]
    changed[3]["note"] = "changed"
    result, _ = reconcile(table, dialect, "id", changed)
    assert "not compared: tags: " + dialect + " has no array, struct or map values" in result.reason, result.reason
    assert list(result.failing["id"]) == [data[3]["id"]]
