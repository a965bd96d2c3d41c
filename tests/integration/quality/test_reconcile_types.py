"""Reconciliation finds exactly the differing keys for any table: composite and text/uuid/date/decimal
keys, and binary, float, array, struct and map columns, real PostgreSQL 18 against a real Delta table
read by DataFusion (the engine of delta-rs tables) and an Iceberg table read by Spark (fewer examples:
Spark answers each query in a fraction of a second, not milliseconds).

Hypothesis draws a table (rows with unique keys) for the lake and a source that differs from it by
deleted rows, inserted rows and changed values; the expected report is computed in Python from
the rows (a change counts when the value's canonical text changes: a NaN replaced by another NaN is
no change, 0.0 by -0.0 is one: floats are compared bit for bit). Buckets and leaves are small so
that every run bisects several levels.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecdc.quality.canonical import register_datafusion_udfs, text_of
from lakecdc.quality.engine import DataFusionEngine
from lakecdc.quality.range_checksums import DIALECTS
from lakecdc.quality.reconcile import (
    DIFFERS,
    MISSING_AT_SOURCE,
    MISSING_IN_SILVER,
    Side,
    bisect,
)

pytestmark = pytest.mark.integration

PAIR = pa.struct([("n", pa.int64()), ("label", pa.string())])
#: column -> (PostgreSQL type, lake type, strategy of a value)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6)
COLUMNS: dict[str, tuple[str, pa.DataType, st.SearchStrategy[Any]]] = {
    "amount": ("numeric(12,2)", pa.decimal128(12, 2),
               st.decimals(min_value=-10**9, max_value=10**9, places=2, allow_nan=False, allow_infinity=False)),
    "flag": ("boolean", pa.bool_(), st.booleans()),
    "note": ("text", pa.string(), TEXT),
    "at": ("timestamptz", pa.timestamp("us", tz="UTC"),
           st.datetimes(dt.datetime(1970, 1, 1), dt.datetime(2100, 1, 1), timezones=st.just(dt.timezone.utc))),
    "blob": ("bytea", pa.binary(), st.binary(max_size=6)),
    "ratio": ("float8", pa.float64(), st.floats()),
    "single": ("real", pa.float32(), st.floats(width=32)),
    "nums": ("int8[]", pa.list_(pa.int64()), st.lists(st.none() | st.integers(-2**63, 2**63 - 1), max_size=3)),
    "tags": ("text[]", pa.list_(pa.string()), st.lists(st.none() | TEXT, max_size=3)),
    "attrs": ("hstore", pa.map_(pa.string(), pa.string()),
              st.dictionaries(TEXT, st.none() | TEXT, max_size=3).map(lambda d: sorted(d.items()))),
    "pair": ("pair", PAIR, st.tuples(st.none() | st.integers(-5, 5), st.none() | TEXT).map(
        lambda t: {"n": t[0], "label": t[1]})),
}
#: key shapes: (column, PostgreSQL type, lake type, strategy)
KEYS: dict[str, list[tuple[str, str, pa.DataType, st.SearchStrategy[Any]]]] = {
    "bigint": [("id", "bigint", pa.int64(), st.integers(-2**63, 2**63 - 1))],
    "text+int": [("code", "text", pa.string(), TEXT), ("n", "int", pa.int32(), st.integers(-3, 3))],
    "uuid": [("u", "uuid", pa.string(), st.uuids().map(str))],
    "date+decimal": [("day", "date", pa.date32(), st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31))),
                     ("price", "numeric(8,3)", pa.decimal128(8, 3),
                      st.decimals(min_value=-1000, max_value=1000, places=3, allow_nan=False))],
}


@dataclass
class Case:
    keys: list[tuple[str, str, pa.DataType, st.SearchStrategy[Any]]]
    lake: list[dict[str, Any]]
    source: list[dict[str, Any]]


def value(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def cases(draw: st.DrawFn, shape: str) -> Case:
    keys = KEYS[shape]
    key_tuple = st.tuples(*[s for _, _, _, s in keys])
    all_keys = draw(st.lists(key_tuple, min_size=0, max_size=40, unique=True))
    row = st.fixed_dictionaries({c: value(s) for c, (_, _, s) in COLUMNS.items()})
    lake_count = draw(st.integers(0, len(all_keys)))
    lake = [{**dict(zip([k for k, *_ in keys], key)), **draw(row)} for key in all_keys[:lake_count]]
    source = [dict(r) for r in lake]
    for r in source:
        if draw(st.integers(0, 5)) == 0:  # a changed value
            column = draw(st.sampled_from(sorted(COLUMNS)))
            r[column] = draw(value(COLUMNS[column][2]))
    source = [r for r in source if draw(st.integers(0, 6)) != 0]  # deleted at the source
    source += [{**dict(zip([k for k, *_ in keys], key)), **draw(row)} for key in all_keys[lake_count:]]
    return Case(keys, lake, source)


def canonical(row: dict[str, Any], columns: list[tuple[str, pa.DataType]]) -> tuple[str | None, ...]:
    return tuple(text_of(row[c], t) for c, t in columns)


def expected(case: Case, columns: list[tuple[str, pa.DataType]]) -> dict[Any, str]:
    names = [k for k, *_ in case.keys]

    def key_of(r: dict[str, Any]) -> Any:
        k = tuple(r[n] for n in names)
        return k[0] if len(k) == 1 else k

    lake = {key_of(r): canonical(r, columns) for r in case.lake}
    source = {key_of(r): canonical(r, columns) for r in case.source}
    out = {k: MISSING_IN_SILVER for k in source.keys() - lake.keys()}
    out.update({k: MISSING_AT_SOURCE for k in lake.keys() - source.keys()})
    out.update({k: DIFFERS for k in lake.keys() & source.keys() if lake[k] != source[k]})
    return out


class Source:
    """The PostgreSQL table of a case: created once per key shape, refilled per example."""

    def __init__(self, conn: Any, shape: str) -> None:
        from psycopg.types.composite import CompositeInfo, register_composite
        from psycopg.types.hstore import register_hstore

        self.conn, self.keys = conn, KEYS[shape]
        self.table = f"items_{shape.replace('+', '_')}"
        key_defs = ", ".join(f"{k} {t}" for k, t, *_ in self.keys)
        col_defs = ", ".join(f"{c} {t}" for c, (t, _, _) in COLUMNS.items())
        conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        conn.execute(f"CREATE TABLE {self.table} ({key_defs}, {col_defs}, "
                     f"PRIMARY KEY ({', '.join(k for k, *_ in self.keys)}))")
        conn.commit()
        register_hstore(__import__("psycopg").types.TypeInfo.fetch(conn, "hstore"), conn)
        self.pair = CompositeInfo.fetch(conn, "pair")
        register_composite(self.pair, conn)

    def fill(self, rows: list[dict[str, Any]]) -> None:
        names = [k for k, *_ in self.keys] + list(COLUMNS)
        self.conn.execute(f"TRUNCATE {self.table}")
        with self.conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {self.table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
                            [tuple(self.adapt(n, r[n]) for n in names) for r in rows])
        self.conn.commit()

    def adapt(self, name: str, v: Any) -> Any:
        if v is None:
            return None
        if name == "u":
            return uuid.UUID(v)
        if name == "attrs":
            return dict(v)
        if name == "pair":
            return self.pair.python_type(v["n"], v["label"])
        return v


def lake_schema(keys: list[tuple[str, str, pa.DataType, Any]]) -> pa.Schema:
    return pa.schema([(k, t) for k, _, t, _ in keys] + [(c, t) for c, (_, t, _) in COLUMNS.items()])


@pytest.fixture(scope="module")
def pg_conn(pg):  # type: ignore[no-untyped-def]
    import psycopg

    dsn = pg.create_database("quality_reconcile_types")
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS hstore")
        conn.execute("CREATE TYPE pair AS (n bigint, label text)")
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()
        yield conn


def datafusion_lake(tmp: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> tuple[Side, pa.Schema]:
    """The rows as a Delta table read by DataFusion, and the table's schema as DataFusion reads it."""
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(str(tmp), pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
    engine = DataFusionEngine(memory_mb=64)
    engine.context.register_table(engine.view("lake"), DeltaTable(str(tmp)))
    read = engine.schema("lake")
    types = [f.type for f in read if f.name in ("nums", "tags", "attrs", "pair")]
    register_datafusion_udfs(engine.context, [*types, pa.float64()])
    return Side(DIALECTS["datafusion"], engine.view("lake"),
                lambda sql: [tuple(r.values()) for r in engine.sql(sql).to_pylist()]), read


def run_case(case: Case, source: Source, lake: tuple[Side, pa.Schema]) -> None:
    from lakecdc.quality.reconcile import source_snapshot

    source.fill(case.source)
    side, read = lake
    keys = [(k, read.field(k).type) for k, *_ in case.keys]
    columns = [(f.name, f.type) for f in read]
    run, _, end = source_snapshot(source.conn, DIALECTS["postgres"])
    try:
        out = bisect(Side(DIALECTS["postgres"], source.table, run), side, keys, columns, buckets=3, leaf_rows=4)
    finally:
        end()
    assert out.differences == expected(case, [(f.name, f.type) for f in lake_schema(case.keys)])
    assert (out.source_rows, out.silver_rows) == (len(case.source), len(case.lake))


@pytest.mark.parametrize("shape", list(KEYS))
def test_every_difference_is_found_and_no_other_datafusion(shape: str, pg_conn, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    source = Source(pg_conn, shape)
    tmp = tmp_path_factory.mktemp(f"lake-{shape.replace('+', '_')}")

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
    @given(case=cases(shape))
    def check(case: Case) -> None:
        run_case(case, source, datafusion_lake(tmp, lake_schema(case.keys), case.lake))

    check()


def spark_lake(spark, name: str, schema: pa.Schema, rows: list[dict[str, Any]]) -> tuple[Side, pa.Schema]:  # type: ignore[no-untyped-def]
    """The rows as an Iceberg table read by Spark, and its schema as Spark reads it."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    spark_rows = [{**r, "attrs": None if r["attrs"] is None else dict(r["attrs"])} for r in rows]
    spark.createDataFrame(spark_rows, from_arrow_schema(schema)).writeTo(name).createOrReplace()
    read = to_arrow_schema(spark.table(name).schema)
    return Side(DIALECTS["spark"], name, lambda sql: [tuple(r) for r in spark.sql(sql).collect()]), read


@pytest.mark.parametrize("shape", list(KEYS))
def test_every_difference_is_found_and_no_other_spark(shape: str, pg_conn, spark) -> None:  # type: ignore[no-untyped-def]
    source = Source(pg_conn, shape)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.recon")
    name = f"lake.recon.items_{shape.replace('+', '_')}"

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
    @given(case=cases(shape))
    def check(case: Case) -> None:
        run_case(case, source, spark_lake(spark, name, lake_schema(case.keys), case.lake))

    check()
