"""Failing rows go to ``<table>_quarantine`` beside the checked table, with the rule and the reason.

One schema for every rule (rules fail on differently shaped rows), one row per failing row::

    {"table_name": "silver.customers", "rule": "unique_keys",
     "reason": "2 silver rows share their key with another row",
     "row_key": "{\\"id\\": 7}", "row_json": "{\\"id\\": 7, \\"name\\": \\"x\\", ...}",
     "checked_at": "2026-11-22T11:00:00+00:00"}

Iceberg: appended through Spark SQL (created on first use); Delta: delta-rs ``write_deltalake``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from lakecdc.audit.tables import LakeTable, describe_value
from lakecdc.quality.report import QualityReport

QUARANTINE_COLUMNS = ("table_name", "rule", "reason", "row_key", "row_json", "checked_at")


def quarantine_name(table: LakeTable) -> str:
    return f"{table.name}_quarantine"


def _json(value: dict[str, Any]) -> str:
    def plain(v: Any) -> Any:
        v = describe_value(v)
        if isinstance(v, float) and v != v:
            return None
        return v
    return json.dumps({k: plain(v) for k, v in value.items()}, default=str, sort_keys=True)


def quarantine_rows(report: QualityReport, keys: tuple[str, ...],
                    checked_at: datetime | None = None) -> list[dict[str, Any]]:
    when = checked_at or datetime.now(timezone.utc)
    rows = []
    for result in report.failures:
        if result.failing is None:
            continue
        for record in result.failing.to_dict("records"):
            key = {k: record.get(k) for k in keys if k in record}
            rows.append({"table_name": report.table, "rule": result.rule,
                         "reason": record.get("_problem") or result.reason, "row_key": _json(key),
                         "row_json": _json(record), "checked_at": when})
    return rows


def quarantine(table: LakeTable, report: QualityReport, keys: tuple[str, ...]) -> int:
    """Append the report's failing rows (each rule's bounded sample) to ``<table>_quarantine``;
    returns how many were written."""
    return append_quarantine(table, quarantine_rows(report, keys))


def append_quarantine(table: LakeTable, rows: list[dict[str, Any]]) -> int:
    """Append ``rows`` (``QUARANTINE_COLUMNS``) to ``<table>_quarantine``, creating it on first use."""
    if not rows:
        return 0
    target = table.sibling(quarantine_name(table))
    if table.format == "iceberg":
        from pyspark.sql.types import StringType, StructField, StructType, TimestampType

        schema = StructType([*(StructField(c, StringType()) for c in QUARANTINE_COLUMNS[:-1]),
                             StructField("checked_at", TimestampType())])
        spark = table.session
        name = target.qualified
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")  # parts hold no dots
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} (table_name string, rule string, reason string, "
                  "row_key string, row_json string, checked_at timestamp) USING iceberg")
        spark.createDataFrame([tuple(r[c] for c in QUARANTINE_COLUMNS) for r in rows], schema).writeTo(name).append()
        return len(rows)
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema([*(pa.field(c, pa.string()) for c in QUARANTINE_COLUMNS[:-1]),
                        pa.field("checked_at", pa.timestamp("us", tz="UTC"))])
    data = pa.Table.from_pylist(rows, schema=schema)
    write_deltalake(target.uri, data, mode="append", storage_options=table.storage_options)
    return len(rows)
