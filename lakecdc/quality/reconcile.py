"""Source reconciliation without moving rows: silver against its source table by key-range checksums.

As cross-database diff tools do (data-diff's bisection): each side computes, for the buckets of a
key range, the row count and a sum of row hashes (``lakecdc.quality.range_checksums``) -- the source
in its own SQL, the lake in its engine. Only buckets whose figures differ are split again; a bucket
small enough (``leaf_rows``) is compared row by row through (key, hash) pairs. Rows themselves never
move, only a few numbers per bucket and the keys of the differences.

Keys may be composite and of integer, decimal, text (uuid) or date columns: ranges are ranges of key
tuples. A single integer key is cut arithmetically (equal widths between its min and max); any other
key is cut at every n-th key of the range in key order, asked of the side holding more rows there.
Compared columns: integers, decimals, booleans, text, dates, timestamps, binary, floats (exact bits)
and nested values (arrays, structs, maps) in their canonical text (``lakecdc.quality.canonical``);
MySQL's floats are bits computed in SQL and its nested values Debezium's geometry structs
(``lakecdc.quality.mysql_text``); a column a side cannot render (nested values on SQL Server and
Oracle, other structs on MySQL) is left out and named in the result. Rows with a null key are in
no range: ``not_null_keys`` reports them.

The source is read in one snapshot (PostgreSQL REPEATABLE READ, MySQL/MariaDB ``START TRANSACTION
WITH CONSISTENT SNAPSHOT``) whose position is read in the same transaction (``pg_current_wal_insert_lsn()``,
MariaDB's ``binlog_snapshot_file``/``position``); silver is read as of that position
(``lakecdc.audit.versions.position_match``), so changes still in flight are not differences.
PostgreSQL's position is the WAL *insert* position: an asynchronous commit (``synchronous_commit =
off``) is visible before its WAL is written, so the *write* position (``pg_current_wal_lsn()``) can
be below a commit the snapshot sees (``tests/integration/quality/test_reconcile_in_flight.py``).

Options (``CheckContext.options``): ``source_connection`` (an open DB-API connection: psycopg 3,
pymysql, pymssql or pyodbc to SQL Server, oracledb; ``lakecdc.quality.source_connect`` opens one
from a URL), ``source_dialect`` (for another driver: postgres, mysql, sqlserver, oracle),
``source_table`` (``schema.table``), ``source_position`` (skip reading it; SQL Server and Oracle
always need it), ``buckets`` (16), ``leaf_rows`` (256).

Failing rows: ``{"id": 7, "_problem": "differs"}`` (or "missing in silver" / "missing at the source"),
one column per key column.
"""

from __future__ import annotations

import datetime as dt
import decimal
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lakecdc.audit.tables import AuditError, row_columns
from lakecdc.quality.canonical import (
    is_binary,
    is_nested,
    is_text,
    register_datafusion_udfs,
)
from lakecdc.quality.engine import DataFusionEngine
from lakecdc.quality.range_checksums import (
    DIALECTS,
    Bound,
    Column,
    Dialect,
    Unsupported,
    bounds_sql,
    bucket_sql,
    count_sql,
    rows_sql,
    split_sql,
)
from lakecdc.quality.rules import CheckContext, RuleResult, rule

MISSING_IN_SILVER, MISSING_AT_SOURCE, DIFFERS = "missing in silver", "missing at the source", "differs"
SQL_DBMS_NAME = 17  # ODBC's SQLGetInfo code of the database product's name (pyodbc.SQL_DBMS_NAME)


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
    differences: dict[Any, str] = field(default_factory=dict)  # key (a tuple when composite) -> problem
    source_rows: int = 0
    silver_rows: int = 0
    queries: int = 0
    bytes_moved: int = 0


def _comparable(type_: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(type_) or pa.types.is_decimal(type_) or pa.types.is_boolean(type_)
            or pa.types.is_timestamp(type_) or pa.types.is_date(type_) or pa.types.is_floating(type_)
            or is_text(type_) or is_binary(type_) or is_nested(type_))


def compared_columns(schema: Any, dialects: list[Dialect]) -> tuple[list[Column], dict[str, str]]:
    """(the row columns every dialect can render, {left-out column: why})."""
    columns: list[Column] = []
    skipped: dict[str, str] = {}
    for f in schema:
        if f.name not in row_columns([f.name]):
            continue
        if not _comparable(f.type):
            skipped[f.name] = f"no canonical text for {f.type}"
            continue
        try:
            for d in dialects:
                d.text(d.quote(f.name), f.type)
        except Unsupported as error:
            skipped[f.name] = str(error)
            continue
        columns.append((f.name, f.type))
    return columns, skipped


def key_columns(schema: Any, keys: tuple[str, ...] | list[str]) -> list[Column]:
    import pyarrow as pa

    out = []
    for key in keys:
        type_ = schema.field(key).type
        if not (pa.types.is_integer(type_) or pa.types.is_decimal(type_) or pa.types.is_date(type_) or is_text(type_)):
            raise AuditError(f"key column {key} is {type_}: reconciliation keys are integers, decimals, "
                             "text (uuid) and dates")
        out.append((key, type_))
    return out


def _typed(texts: tuple[str, ...], keys: list[Column]) -> Any:
    """A key's canonical texts as the lake's Python values (a scalar for a single key column)."""
    import pyarrow as pa

    values: list[Any] = []
    for text, (_, type_) in zip(texts, keys):
        if pa.types.is_integer(type_):
            values.append(int(text))
        elif pa.types.is_decimal(type_):
            values.append(decimal.Decimal(text))
        elif pa.types.is_date(type_):
            values.append(dt.date.fromisoformat(text))
        else:
            values.append(text)
    return values[0] if len(values) == 1 else tuple(values)


def _int_key(keys: list[Column]) -> bool:
    import pyarrow as pa

    return len(keys) == 1 and pa.types.is_integer(keys[0][1])


def bisect(source: Side, lake: Side, keys: list[Column], columns: list[Column], buckets: int = 16,
           leaf_rows: int = 256) -> Reconciliation:
    """Compare the two sides range by range (see the module doc)."""
    out = Reconciliation()
    sides = (source, lake)
    span: tuple[int, int] | None = None  # an integer key's min and max + 1 on either side
    if _int_key(keys):
        bounds = [side.query(bounds_sql(side.dialect, side.source, keys[0][0]))[0] for side in sides]
        counts = [int(b[2]) for b in bounds]
        if any(b[0] is not None for b in bounds):
            span = (min(int(b[0]) for b in bounds if b[0] is not None),
                    max(int(b[1]) for b in bounds if b[1] is not None) + 1)
    else:
        counts = [int(side.query(count_sql(side.dialect, side.source, keys, None, None))[0][0]) for side in sides]
    out.source_rows, out.silver_rows = counts
    # the outer range stays open: min - 1 or max + 1 of a 64-bit key need not be a 64-bit literal
    pending: list[tuple[Bound, Bound, list[int]]] = [(None, None, counts)] if any(counts) else []
    while pending:
        lo, hi, counts = pending.pop()
        splits = [] if max(counts) <= leaf_rows else _splits(sides, keys, lo, hi, counts, buckets, span)
        if not splits:
            _compare_rows(source, lake, keys, columns, lo, hi, out)
            continue
        figures = [{int(b): (int(n), int(s or 0)) for b, n, s in side.query(
            bucket_sql(side.dialect, side.source, keys, columns, lo, hi, splits))} for side in sides]
        edges: list[Bound] = [lo, *splits, hi]
        for b in sorted(set(figures[0]) | set(figures[1])):
            if figures[0].get(b) != figures[1].get(b):
                pending.append((edges[b], edges[b + 1], [f.get(b, (0, 0))[0] for f in figures]))
    out.queries, out.bytes_moved = source.queries + lake.queries, source.bytes_moved + lake.bytes_moved
    return out


def _splits(sides: tuple[Side, Side], keys: list[Column], lo: Bound, hi: Bound, counts: list[int],
            buckets: int, span: tuple[int, int] | None) -> list[tuple[str, ...]]:
    """Where to cut ``[lo, hi)`` into about ``buckets`` parts; none: compare its rows."""
    if span is not None:
        low, high = int(lo[0]) if lo else span[0], int(hi[0]) if hi else span[1]
        if high - low <= buckets:
            return []
        width = -(-(high - low) // buckets)
        return [(str(low + i * width),) for i in range(1, buckets) if low + i * width < high]
    side = sides[1] if counts[1] >= counts[0] else sides[0]  # the lake when it can: cheaper than the source
    step = -(-max(counts) // buckets)
    found = side.query(split_sql(side.dialect, side.source, keys, lo, hi, step))
    cuts = dict.fromkeys(tuple(str(v) for v in row) for row in found if None not in row)
    return [c for c in cuts if c != lo]  # a cut at the range's start would split nothing off (duplicate keys)


def _compare_rows(source: Side, lake: Side, keys: list[Column], columns: list[Column], lo: Bound, hi: Bound,
                  out: Reconciliation) -> None:
    at_source, in_silver = ({tuple(str(v) for v in row[:-1]): row[-1] for row in side.query(
        rows_sql(side.dialect, side.source, keys, columns, lo, hi))} for side in (source, lake))
    for k in at_source.keys() | in_silver.keys():
        if k not in in_silver:
            out.differences[_typed(k, keys)] = MISSING_IN_SILVER
        elif k not in at_source:
            out.differences[_typed(k, keys)] = MISSING_AT_SOURCE
        elif at_source[k] != in_silver[k]:
            out.differences[_typed(k, keys)] = DIFFERS


def dialect_of(connection: Any, name: str | None = None) -> Dialect:
    """The SQL dialect of a DB-API connection, by its driver (or ``name``: postgres, mysql, sqlserver, oracle)."""
    if name is not None:
        if name not in DIALECTS or name in ("spark", "datafusion"):
            raise AuditError(f"source reconciliation: unknown source dialect {name!r}")
        return DIALECTS[name]
    module = type(connection).__module__
    if module.startswith("pyodbc"):  # ODBC reaches any database: ask the driver manager which
        dbms = str(connection.getinfo(SQL_DBMS_NAME))
        if "SQL Server" in dbms:
            return DIALECTS["sqlserver"]
        raise AuditError(f"source reconciliation over pyodbc to {dbms!r}: only SQL Server is read through ODBC; "
                         "use its own driver (psycopg, PyMySQL, python-oracledb)")
    for prefix, dialect in (("psycopg", "postgres"), ("pymysql", "mysql"), ("MySQLdb", "mysql"),
                            ("pymssql", "sqlserver"), ("oracledb", "oracle")):
        if module.startswith(prefix):
            return DIALECTS[dialect]
    raise AuditError(f"source reconciliation: unknown DB-API connection type {module}")


def source_snapshot(connection: Any, dialect: Dialect) -> tuple[Callable[[str], list[tuple[Any, ...]]], str | None,
                                                                  Callable[[], None]]:
    """Open one consistent snapshot: (run a query in it, the source position it reflects, end it)."""
    cursor = connection.cursor()

    def run(sql: str) -> list[tuple[Any, ...]]:
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]  # pyodbc's Row objects (and others') as tuples

    if dialect.name == "postgres":
        import psycopg

        connection.rollback()
        previous = (connection.autocommit, connection.isolation_level)
        connection.autocommit = False
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ

        def end() -> None:
            connection.rollback()
            connection.autocommit, connection.isolation_level = previous

        cursor.execute("SET LOCAL TIME ZONE 'UTC'")  # a SET takes no snapshot: the SELECT below does
        # the insert position: at or after the commit record of every transaction the snapshot sees, even
        # an asynchronous one not written yet (the write position, pg_current_wal_lsn(), can lag it)
        return run, str(run("SELECT pg_current_wal_insert_lsn()::text")[0][0]), end
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
    dialect = dialect_of(connection, ctx.options.get("source_dialect"))
    run, position, end = source_snapshot(connection, dialect)
    try:  # the snapshot ends whatever fails: a key of the wrong type, a query
        position = ctx.options.get("source_position") or position
        version, note = None, "silver's current version"
        silver = ctx.silver_table
        if position is not None and silver is not None and any(v.source_position for v in ctx.versions):
            match = position_match(silver, position)
            version = match.version.version if match.version else None
            note = f"silver version {version} as of source position {position}" + (
                "" if match.exact else " (the next commit also holds earlier changes of that position: not replayed)")
        ctx.engine.register("silver_asof", ctx.silver_table, version) if ctx.silver_table is not None else None
        view = ctx.engine.view("silver_asof") if ctx.silver_table is not None else ctx.silver
        schema = ctx.engine.schema("silver_asof") if ctx.silver_table is not None else ctx.silver_schema
        lake_source = f"(SELECT * FROM {view} WHERE _is_deleted IS NOT TRUE)" if "_is_deleted" in schema.names else view
        keys = key_columns(schema, ctx.keys)
        if isinstance(ctx.engine, DataFusionEngine):  # before the columns are rendered: nested ones call them
            import pyarrow as pa

            needs = [f.type for f in schema if is_nested(f.type)] + [pa.float64()]
            register_datafusion_udfs(ctx.engine.context, list({str(t): t for t in needs}.values()))
        columns, skipped = compared_columns(schema, [dialect, DIALECTS[ctx.engine.name]])
        lake = Side(DIALECTS[ctx.engine.name], f"{lake_source} lake_rows",
                    lambda sql: [tuple(r.values()) for r in ctx.engine.sql(sql).to_pylist()])
        out = bisect(Side(dialect, dialect.quote(table), run), lake, keys, columns,
                     int(ctx.options.get("buckets", 16)), int(ctx.options.get("leaf_rows", 256)))
    finally:
        end()
    names = [k for k, _ in keys]
    failing = pd.DataFrame([{**dict(zip(names, k if len(names) > 1 else (k,))), "_problem": p}
                            for k, p in sorted(out.differences.items())], columns=[*names, "_problem"])
    left_out = "; ".join(f"{c}: {why}" for c, why in skipped.items())
    counts = (f"{out.silver_rows} silver rows, {out.source_rows} source rows ({note}; {out.queries} queries, "
              f"{out.bytes_moved} bytes moved)" + (f"; not compared: {left_out}" if skipped else ""))
    if failing.empty:
        return RuleResult("source_reconciliation", True, f"{counts}; every key range's checksum matches", None,
                          out.silver_rows, 0)
    return RuleResult("source_reconciliation", False, f"{counts}; {len(failing)} keys differ",
                      failing.head(ctx.sample), out.silver_rows, len(failing))
