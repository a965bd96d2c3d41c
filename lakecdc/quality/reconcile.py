"""Source reconciliation without moving rows: silver against its source table by key-range checksums.

As cross-database diff tools do (data-diff's bisection): each side computes, for the buckets of a
key range, the row count and a sum of row hashes (``lakecdc.quality.range_checksums``) -- the source
in its own SQL, the lake in its engine. Only buckets whose figures differ are split again; a bucket
small enough (``leaf_rows``) is compared row by row through (key, hash) pairs. Rows themselves never
move, only a few numbers per bucket and the keys of the differences.

The source is read in one snapshot (PostgreSQL REPEATABLE READ, MySQL/MariaDB ``START TRANSACTION
WITH CONSISTENT SNAPSHOT``) whose position is read in the same transaction (``pg_current_wal_lsn()``,
MariaDB's ``binlog_snapshot_file``/``position``); silver is read as of that position
(``lakecdc.audit.versions.position_match``), so changes still in flight are not differences.

Options (``CheckContext.options``): ``source_connection`` (an open DB-API connection: psycopg 3,
pymysql, pymssql, oracledb), ``source_table`` (``schema.table``), ``source_position`` (skip reading
it), ``buckets`` (16), ``leaf_rows`` (256). Needs one integer key column.

Failing rows: ``{"id": 7, "_problem": "differs"}`` (or "missing in silver" / "missing at the source").
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lakecdc.audit.tables import AuditError, row_columns
from lakecdc.quality.range_checksums import DIALECTS, Dialect, Kind, bounds_sql, bucket_sql, rows_sql
from lakecdc.quality.rules import CheckContext, RuleResult, rule

MISSING_IN_SILVER, MISSING_AT_SOURCE, DIFFERS = "missing in silver", "missing at the source", "differs"


@dataclass
class Side:
    """One side of the comparison: a dialect, the table as SQL, and how to run a query on it."""

    dialect: Dialect
    source: str
    run: Callable[[str], list[tuple[Any, ...]]]
    queries: int = 0
    bytes_moved: int = 0  # the pickled size of every answer: what crossed to this process

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        rows = self.run(sql)
        self.queries += 1
        self.bytes_moved += len(pickle.dumps(rows))
        return rows


@dataclass
class Reconciliation:
    differences: dict[int, str] = field(default_factory=dict)  # key -> problem
    source_rows: int = 0
    silver_rows: int = 0
    queries: int = 0
    bytes_moved: int = 0


def column_kinds(schema: Any) -> tuple[list[tuple[str, Kind]], list[str]]:
    """(compared columns with their kind, columns left out: binary and nested values have no common text)."""
    import pyarrow as pa

    kinds: list[tuple[str, Kind]] = []
    skipped = []
    for f in schema:
        if f.name not in row_columns([f.name]):
            continue
        t = f.type
        if pa.types.is_integer(t):
            kinds.append((f.name, "int"))
        elif pa.types.is_decimal(t):
            kinds.append((f.name, "decimal"))
        elif pa.types.is_boolean(t):
            kinds.append((f.name, "bool"))
        elif pa.types.is_timestamp(t):
            kinds.append((f.name, "timestamp"))
        elif pa.types.is_date(t):
            kinds.append((f.name, "date"))
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or t == pa.string_view():
            kinds.append((f.name, "text"))
        else:
            skipped.append(f.name)
    return kinds, skipped


def bisect(source: Side, lake: Side, key: str, columns: list[tuple[str, Kind]], buckets: int = 16,
           leaf_rows: int = 256) -> Reconciliation:
    """Compare the two sides range by range (see the module doc)."""
    out = Reconciliation()
    bounds = [side.query(bounds_sql(side.dialect, side.source, key))[0] for side in (source, lake)]
    out.source_rows, out.silver_rows = int(bounds[0][2]), int(bounds[1][2])
    lows = [int(b[0]) for b in bounds if b[0] is not None]
    if not lows:
        out.queries, out.bytes_moved = source.queries + lake.queries, source.bytes_moved + lake.bytes_moved
        return out
    pending = [(min(lows), max(int(b[1]) for b in bounds if b[1] is not None) + 1, None)]
    while pending:
        lo, hi, count = pending.pop()
        if count is not None and count <= leaf_rows or hi - lo <= buckets:
            _compare_rows(source, lake, key, columns, lo, hi, out)
            continue
        figures = [{int(b): (int(n), int(s or 0)) for b, n, s in side.query(
            bucket_sql(side.dialect, side.source, key, columns, lo, hi, buckets))} for side in (source, lake)]
        width = -(-(hi - lo) // buckets)
        for b in sorted(set(figures[0]) | set(figures[1])):
            if figures[0].get(b) != figures[1].get(b):
                most = max(figures[0].get(b, (0, 0))[0], figures[1].get(b, (0, 0))[0])
                pending.append((lo + b * width, min(hi, lo + (b + 1) * width), most))
    out.queries, out.bytes_moved = source.queries + lake.queries, source.bytes_moved + lake.bytes_moved
    return out


def _compare_rows(source: Side, lake: Side, key: str, columns: list[tuple[str, Kind]], lo: int, hi: int,
                  out: Reconciliation) -> None:
    at_source = {int(k): h for k, h in source.query(rows_sql(source.dialect, source.source, key, columns, lo, hi))}
    in_silver = {int(k): h for k, h in lake.query(rows_sql(lake.dialect, lake.source, key, columns, lo, hi))}
    for k in at_source.keys() | in_silver.keys():
        if k not in in_silver:
            out.differences[k] = MISSING_IN_SILVER
        elif k not in at_source:
            out.differences[k] = MISSING_AT_SOURCE
        elif at_source[k] != in_silver[k]:
            out.differences[k] = DIFFERS


def dialect_of(connection: Any) -> Dialect:
    module = type(connection).__module__
    for prefix, name in (("psycopg", "postgres"), ("pymysql", "mysql"), ("MySQLdb", "mysql"), ("pymssql", "sqlserver"),
                         ("oracledb", "oracle")):
        if module.startswith(prefix):
            return DIALECTS[name]
    raise AuditError(f"source reconciliation: unknown DB-API connection type {module}")


def source_snapshot(connection: Any, dialect: Dialect) -> tuple[Callable[[str], list[tuple[Any, ...]]], str | None,
                                                                  Callable[[], None]]:
    """Open one consistent snapshot: (run a query in it, the source position it reflects, end it)."""
    cursor = connection.cursor()

    def run(sql: str) -> list[tuple[Any, ...]]:
        cursor.execute(sql)
        return list(cursor.fetchall())

    if dialect.name == "postgres":
        import psycopg

        connection.rollback()
        previous = (connection.autocommit, connection.isolation_level)
        connection.autocommit = False
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ

        def end() -> None:
            connection.rollback()
            connection.autocommit, connection.isolation_level = previous

        cursor.execute("SET LOCAL TIME ZONE 'UTC'")  # the first statement opens the snapshot
        return run, str(run("SELECT pg_current_wal_lsn()::text")[0][0]), end
    if dialect.name == "mysql":
        cursor.execute("SET time_zone = '+00:00'")
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = {str(k).lower(): v for k, v in run("SHOW STATUS LIKE 'binlog_snapshot_%'")}
        position = (f"{status['binlog_snapshot_file']}:{status['binlog_snapshot_position']}"
                    if status.get("binlog_snapshot_file") else None)
        return run, position, connection.rollback
    # SQL Server / Oracle: the caller passes ``source_position`` (the CDC LSN / SCN its read reflects)
    return run, None, connection.rollback


@rule("source_reconciliation")
def source_reconciliation(ctx: CheckContext) -> RuleResult:
    import pandas as pd

    from lakecdc.audit.versions import position_match

    connection, table = ctx.options.get("source_connection"), ctx.options.get("source_table")
    if connection is None or not table:
        return RuleResult("source_reconciliation", False,
                          "no source_connection / source_table given: nothing to reconcile against")
    if len(ctx.keys) != 1:
        raise AuditError(f"{ctx.table}: key-range reconciliation needs one integer key column, not {list(ctx.keys)}")
    dialect = dialect_of(connection)
    run, position, end = source_snapshot(connection, dialect)
    position = ctx.options.get("source_position") or position
    version, note = None, "silver's current version"
    positioned = ctx.silver_table is not None and any(v.source_position for v in ctx.versions)
    if position is not None and positioned:
        match = position_match(ctx.silver_table, position)
        version = match.version.version if match.version else None
        note = f"silver version {version} as of source position {position}" + (
            "" if match.exact else " (the next commit also holds earlier changes of that position: not replayed)")
    ctx.engine.register("silver_asof", ctx.silver_table, version) if ctx.silver_table is not None else None
    view = ctx.engine.view("silver_asof") if ctx.silver_table is not None else ctx.silver
    schema = ctx.engine.schema("silver_asof") if ctx.silver_table is not None else ctx.silver_schema
    lake_source = f"(SELECT * FROM {view} WHERE _is_deleted IS NOT TRUE)" if "_is_deleted" in schema.names else view
    columns, skipped = column_kinds(schema)
    lake = Side(DIALECTS[ctx.engine.name], f"{lake_source} lake_rows",
                lambda sql: [tuple(r.values()) for r in ctx.engine.sql(sql).to_pylist()])
    try:
        out = bisect(Side(dialect, dialect.quote(table), run), lake, ctx.keys[0], columns,
                     int(ctx.options.get("buckets", 16)), int(ctx.options.get("leaf_rows", 256)))
    finally:
        end()
    key = ctx.keys[0]
    failing = pd.DataFrame([{key: k, "_problem": p} for k, p in sorted(out.differences.items())],
                           columns=[key, "_problem"])
    counts = (f"{out.silver_rows} silver rows, {out.source_rows} source rows ({note}; {out.queries} queries, "
              f"{out.bytes_moved} bytes moved)" + (f"; not compared: {skipped}" if skipped else ""))
    if failing.empty:
        return RuleResult("source_reconciliation", True, f"{counts}; every key range's checksum matches", None,
                          out.silver_rows, 0)
    return RuleResult("source_reconciliation", False, f"{counts}; {len(failing)} keys differ",
                      failing.head(ctx.sample), out.silver_rows, len(failing))
