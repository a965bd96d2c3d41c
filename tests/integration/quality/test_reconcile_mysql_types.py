"""Reconciliation of MySQL/MariaDB floats and geometry against the lake, on the real MariaDB of the
session fixtures and a Delta table read by DataFusion.

DOUBLE and FLOAT columns are compared bit for bit (``lakecdc.quality.mysql_text``: MariaDB computes
a double's IEEE bits; a FLOAT is compared as the float32 Debezium emits, Connect FLOAT32, which the
lake holds), POINT and GEOMETRY as Debezium's geometry structs, built here from the stored values by
the MySQL capture's own converters. Hypothesis draws any finite doubles and float32s (subnormals,
powers of two, the extremes) and changes of one ulp in the lake; exactly the changed keys differ.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lakecdc.capture.mysql.ddl.model import ColumnDef
from lakecdc.capture.mysql.types import TypeModes, value_converter
from lakecdc.quality.canonical import register_datafusion_udfs
from lakecdc.quality.engine import DataFusionEngine
from lakecdc.quality.range_checksums import DIALECTS
from lakecdc.quality.reconcile import DIFFERS, Side, bisect, compared_columns, source_snapshot

pytestmark = pytest.mark.integration

POINT = pa.struct([("x", pa.float64()), ("y", pa.float64()), ("wkb", pa.binary()), ("srid", pa.int32())])
GEOMETRY = pa.struct([("wkb", pa.binary()), ("srid", pa.int32())])
SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.float64()), ("f", pa.float32()), ("p", POINT), ("g", GEOMETRY),
                    ("j", pa.string())])
DOUBLES = st.floats(allow_nan=False, allow_infinity=False)
FLOATS = st.floats(width=32, allow_nan=False, allow_infinity=False)
SHAPES = ["LINESTRING(0 0,1 2)", "POLYGON((0 0,1 0,1 1,0 0))", "POINT(3 4)"]


def literal(x: float) -> str:
    """A double literal (an ``e``: MySQL reads 0.1 without one as DECIMAL)."""
    text = repr(x)
    return text if "e" in text else text + "e0"


def next_up(x: float, width: int) -> float:
    """The next float of ``width`` bits (toward +inf; a finite neighbour)."""
    if width == 64:
        return math.nextafter(x, math.inf) if x < 1e308 else math.nextafter(x, -math.inf)
    bits = struct.unpack(">I", struct.pack(">f", x))[0]
    neighbour = struct.unpack(">f", struct.pack(">I", bits - 1 if bits & 0x7F7FFFFF == 0x7F7FFFFF else bits + 1))[0]
    return neighbour if math.isfinite(neighbour) else struct.unpack(">f", struct.pack(">I", bits - 1))[0]


@pytest.fixture(scope="module")
def maria(mariadb):  # type: ignore[no-untyped-def]
    import pymysql

    conn = pymysql.connect(**mariadb.connect_kwargs())
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS recon_mysql_types")
        cur.execute("CREATE TABLE recon_mysql_types (id BIGINT PRIMARY KEY, d DOUBLE, f FLOAT, p POINT, "
                    "g GEOMETRY, j JSON)")
    conn.commit()
    yield conn
    conn.close()


def fill(conn: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write the rows to MariaDB; the lake rows Debezium's mapping gives for what is stored."""
    with conn.cursor() as cur:
        cur.execute("TRUNCATE recon_mysql_types")
        for r in rows:
            point = "NULL" if r["p"] is None else f"POINT({literal(r['p'][0])}, {literal(r['p'][1])})"
            shape = "NULL" if r["g"] is None else f"ST_GeomFromText('{SHAPES[r['g'][0]]}', {r['g'][1]})"
            cur.execute(f"INSERT INTO recon_mysql_types VALUES (%s, {'NULL' if r['d'] is None else literal(r['d'])}, "
                        f"{'NULL' if r['f'] is None else literal(r['f'])}, {point}, {shape}, %s)", (r["id"], r["j"]))
        cur.execute("SELECT id, p, g FROM recon_mysql_types")
        stored = {i: (p, g) for i, p, g in cur.fetchall()}
    conn.commit()
    point, geometry = (value_converter(ColumnDef(n, t, t), TypeModes()) for n, t in (("p", "POINT"), ("g", "GEOMETRY")))
    return [{**r, "d": None if r["d"] is None else r["d"] + 0.0,  # MariaDB stores -0 as 0
             "f": None if r["f"] is None else r["f"] + 0.0,
             "p": None if stored[r["id"]][0] is None else point(stored[r["id"]][0]),
             "g": None if stored[r["id"]][1] is None else geometry(stored[r["id"]][1])} for r in rows]


def reconcile(conn: Any, tmp: Path, lake_rows: list[dict[str, Any]]) -> dict[Any, str]:
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(str(tmp), pa.Table.from_pylist(lake_rows, schema=SCHEMA), mode="overwrite")
    engine = DataFusionEngine(memory_mb=64)
    engine.context.register_table(engine.view("lake"), DeltaTable(str(tmp)))
    read = engine.schema("lake")
    register_datafusion_udfs(engine.context, [read.field("p").type, read.field("g").type, pa.float64()])
    columns, skipped = compared_columns(read, [DIALECTS["mysql"], DIALECTS["datafusion"]])
    assert not skipped and [c for c, _ in columns] == ["id", "d", "f", "p", "g", "j"], skipped
    run, _, end = source_snapshot(conn, DIALECTS["mysql"])
    try:
        lake = Side(DIALECTS["datafusion"], engine.view("lake"),
                    lambda sql: [tuple(r.values()) for r in engine.sql(sql).to_pylist()])
        return bisect(Side(DIALECTS["mysql"], "recon_mysql_types", run), lake, [("id", pa.int64())], columns,
                      buckets=3, leaf_rows=4).differences
    finally:
        end()


ROW = st.fixed_dictionaries({
    "d": st.none() | DOUBLES, "f": st.none() | FLOATS,
    "p": st.none() | st.tuples(DOUBLES, DOUBLES),
    "g": st.none() | st.tuples(st.integers(0, len(SHAPES) - 1), st.sampled_from([0, 4326, 3857])),
    "j": st.none() | st.sampled_from(['{"b": 1, "a": [1, 2.50, "x"]}', "[]", "null", '"ü"'])})


def test_floats_and_geometry_compare_bit_for_bit(maria: Any, tmp_path: Path) -> None:
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
    @given(rows=st.lists(ROW, min_size=1, max_size=12), changes=st.lists(st.tuples(st.integers(0, 11),
                                                                                  st.sampled_from("dfpg")), max_size=4))
    @example(rows=[{"d": 5e-324, "f": 1.401298464324817e-45, "p": (-0.0, 2.2250738585072014e-308), "g": (1, 4326),
                    "j": None}, {"d": 1.7976931348623157e308, "f": 3.4028234663852886e38, "p": (2.0 ** 1023, 0.1),
                                 "g": None, "j": "[]"}, {"d": 2.0 ** -1022, "f": 1.100000023841858, "p": None,
                                                         "g": (0, 0), "j": None}],
             changes=[(0, "d"), (1, "f"), (2, "p"), (0, "g")])
    def check(rows: list[dict[str, Any]], changes: list[tuple[int, str]]) -> None:
        rows = [{"id": i * 10, **r} for i, r in enumerate(rows)]
        lake = fill(maria, rows)
        assert reconcile(maria, tmp_path, lake) == {}
        changed = set()
        for i, column in changes:
            r = lake[i % len(lake)]
            if r[column] is None:
                continue
            if column == "p":
                r["p"] = {**r["p"], "y": next_up(r["p"]["y"], 64)}
            elif column == "g":
                r["g"] = {**r["g"], "srid": (r["g"]["srid"] or 0) + 1}
            else:
                r[column] = next_up(r[column], 64 if column == "d" else 32)
            changed.add(r["id"])
        assert reconcile(maria, tmp_path, lake) == dict.fromkeys(changed, DIFFERS)

    check()


def test_floats_and_geometry_against_iceberg_in_spark(maria: Any, spark: Any) -> None:  # type: ignore[no-untyped-def]
    """The same comparison with Spark on the lake side (its bits through Double.doubleToLongBits)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    rows = [{"id": 1, "d": 5e-324, "f": 1.401298464324817e-45, "p": (-0.0, 2.2250738585072014e-308), "g": (1, 4326),
             "j": '{"b": 1, "a": [1, 2.50, "x"]}'},
            {"id": 2, "d": -1.7976931348623157e308, "f": 3.4028234663852886e38, "p": (2.0 ** 1023, 0.1), "g": None,
             "j": None},
            {"id": 3, "d": 0.1, "f": 1.100000023841858, "p": None, "g": (0, 0), "j": "[]"}]
    lake = fill(maria, rows)
    lake[2]["f"] = next_up(lake[2]["f"], 32)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.recon")
    spark.createDataFrame(lake, from_arrow_schema(SCHEMA)).writeTo("lake.recon.mysql_types").createOrReplace()
    read = to_arrow_schema(spark.table("lake.recon.mysql_types").schema)
    columns, skipped = compared_columns(read, [DIALECTS["mysql"], DIALECTS["spark"]])
    assert not skipped, skipped
    run, _, end = source_snapshot(maria, DIALECTS["mysql"])
    try:
        lake_side = Side(DIALECTS["spark"], "lake.recon.mysql_types",
                         lambda sql: [tuple(r) for r in spark.sql(sql).collect()])
        out = bisect(Side(DIALECTS["mysql"], "recon_mysql_types", run), lake_side, [("id", pa.int64())], columns)
    finally:
        end()
    assert out.differences == {3: DIFFERS}
