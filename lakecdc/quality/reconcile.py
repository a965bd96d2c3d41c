"""Source reconciliation: silver against the source database table it mirrors.

Compares row counts and a per-key checksum of the source columns. Values are normalised before
hashing so that the same value read through Spark/Arrow and through psycopg or pymysql hashes the
same (decimals without trailing zeros, timestamps in UTC, bytes as hex). Options (``CheckContext.options``):

- ``source_connection``: an open DB-API connection (psycopg 3 or pymysql);
- ``source_table``: the source table, ``schema.table`` (quoted for the dialect);
- ``source_columns``: columns to compare (default: silver's source columns).

Failing rows: ``{"id": 7, "_problem": "checksum differs"}`` (or "missing in silver" / "missing at the source").
"""

from __future__ import annotations

import hashlib
import math
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any

from lakecdc.audit.tables import describe_value, row_columns, to_pandas
from lakecdc.quality.rules import CheckContext, RuleResult, rule


def normalise(value: Any) -> str:
    """One text form per value, whichever driver produced it."""
    value = describe_value(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "\u2205"
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        value = value.to_pydatetime()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        d = Decimal(value)
        text = format(d.normalize(), "f") if d != 0 else "0"
        return text
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f") if value == value else "NaN"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(normalise(v) for v in value) + "]"
    return str(value)


def row_checksum(row: dict[str, Any], columns: list[str]) -> str:
    return hashlib.md5("\x1f".join(normalise(row.get(c)) for c in columns).encode()).hexdigest()


def _quote(connection: Any, name: str) -> str:
    mark = "`" if type(connection).__module__.startswith("pymysql") else '"'
    return ".".join(f"{mark}{part.replace(mark, mark * 2)}{mark}" for part in name.split("."))


def _source_rows(connection: Any, table: str, columns: list[str]) -> list[dict[str, Any]]:
    cursor = connection.cursor()
    try:
        cursor.execute(f"SELECT {', '.join(_quote(connection, c) for c in columns)} FROM {_quote(connection, table)}")
        return [dict(zip(columns, values)) for values in cursor.fetchall()]
    finally:
        cursor.close()


@rule("source_reconciliation")
def source_reconciliation(ctx: CheckContext) -> RuleResult:
    import pandas as pd

    connection, table = ctx.options.get("source_connection"), ctx.options.get("source_table")
    if connection is None or not table:
        return RuleResult("source_reconciliation", False,
                          "no source_connection / source_table given: nothing to reconcile against")
    silver = to_pandas(ctx.engine.sql(f"SELECT * FROM {ctx.live()} s"))  # replaced by key-range checksums
    columns = list(ctx.options.get("source_columns") or row_columns(list(silver.columns)))
    source = _source_rows(connection, table, columns)
    keys = list(ctx.keys)
    lake_rows, source_rows = silver.to_dict("records"), source
    # keys compared in normal form, reported with the values as the source (or silver) has them
    shown = {tuple(normalise(r[k]) for k in keys): tuple(r[k] for k in keys) for r in [*lake_rows, *source_rows]}
    lake = {tuple(normalise(r[k]) for k in keys): row_checksum(r, columns) for r in lake_rows}
    origin = {tuple(normalise(r[k]) for k in keys): row_checksum(r, columns) for r in source_rows}
    problems = []
    for key in sorted(set(lake) | set(origin)):
        if key not in lake:
            problem = "missing in silver"
        elif key not in origin:
            problem = "missing at the source"
        elif lake[key] != origin[key]:
            problem = "checksum differs"
        else:
            continue
        problems.append({**dict(zip(keys, shown[key])), "_problem": problem})
    failing = pd.DataFrame(problems, columns=[*keys, "_problem"])
    counts = f"{len(silver)} silver rows, {len(source)} source rows"
    if failing.empty:
        return RuleResult("source_reconciliation", True, f"{counts}; every key's checksum matches", None, len(silver))
    return RuleResult("source_reconciliation", False, f"{counts}; {len(failing)} keys differ", failing, len(silver))
