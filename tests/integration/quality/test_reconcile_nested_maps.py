"""Maps nested in lists, structs and maps on the DataFusion side of a reconciliation (a Delta table read
by DataFusion): a struct holding a map used to fail at planning (DataFusion names a map's entries
"key_value", the canonical-text function's signature "entries"). Any nesting now plans and renders
the canonical text ``lakecdc.quality.canonical.text_of`` defines (hypothesis over values), and a
reconciliation of ``hstore[]`` and a composite holding an hstore in real PostgreSQL 18 against such a
Delta table finds exactly the changed keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecdc.quality.canonical import register_datafusion_udfs, text_of
from lakecdc.quality.engine import DataFusionEngine
from lakecdc.quality.range_checksums import DIALECTS
from lakecdc.quality.reconcile import DIFFERS, MISSING_IN_SILVER, Side, bisect, source_snapshot

pytestmark = pytest.mark.integration

M = pa.map_(pa.string(), pa.string())
NESTED = {
    "lm": pa.list_(M),
    "sm": pa.struct([("m", M), ("n", pa.int64())]),
    "lsm": pa.list_(pa.struct([("m", M), ("b", pa.binary())])),
    "mlm": pa.map_(pa.string(), pa.list_(M)),
    "m": M,
}
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=4)
MAP = st.dictionaries(TEXT, st.none() | TEXT, max_size=3).map(lambda d: sorted(d.items()))
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "lm": st.lists(st.none() | MAP, max_size=3),
    "sm": st.fixed_dictionaries({"m": st.none() | MAP, "n": st.none() | st.integers(-9, 9)}),
    "lsm": st.lists(st.none() | st.fixed_dictionaries({"m": st.none() | MAP, "b": st.none() | st.binary(max_size=3)}),
                    max_size=3),
    "mlm": st.dictionaries(TEXT, st.none() | st.lists(st.none() | MAP, max_size=2), max_size=2).map(
        lambda d: sorted(d.items())),
    "m": MAP,
}
SCHEMA = pa.schema([("id", pa.int64()), *NESTED.items()])


def delta_in_datafusion(tmp: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> tuple[DataFusionEngine, pa.Schema]:
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(str(tmp), pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
    engine = DataFusionEngine(memory_mb=64)
    engine.context.register_table(engine.view("lake"), DeltaTable(str(tmp)))
    read = engine.schema("lake")
    register_datafusion_udfs(engine.context, [f.type for f in read if f.name != "id"])
    return engine, read


def test_maps_at_any_depth_plan_and_render_the_canonical_text(tmp_path: Path) -> None:
    d = DIALECTS["datafusion"]

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(rows=st.lists(st.fixed_dictionaries({c: st.none() | s for c, s in VALUES.items()}), min_size=1, max_size=5))
    def check(rows: list[dict[str, Any]]) -> None:
        rows = [{"id": i, **r} for i, r in enumerate(rows)]
        engine, read = delta_in_datafusion(tmp_path, SCHEMA, rows)
        texts = ", ".join(f"{d.text(d.quote(f.name), f.type)} AS {d.quote(f.name)}" for f in read if f.name != "id")
        got = engine.sql(f"SELECT id, {texts} FROM {engine.view('lake')} ORDER BY id").to_pylist()
        assert got == [{"id": r["id"], **{c: text_of(r[c], t) for c, t in NESTED.items()}} for r in rows]

    check()


@pytest.fixture(scope="module")
def pg_conn(pg):  # type: ignore[no-untyped-def]
    import psycopg

    dsn = pg.create_database("quality_reconcile_nested_maps")
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS hstore")
        conn.execute("CREATE TYPE holder AS (m hstore, n bigint)")
        conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, lm hstore[], sm holder)")
        conn.commit()
        yield conn


def test_reconciliation_of_hstore_arrays_and_composites_against_datafusion(pg_conn: Any, tmp_path: Path) -> None:
    rows = [{"id": i, "lm": [[("k", str(i))], None, []] if i % 3 else None,
             "sm": {"m": [("a", None), ("b", "x" * (i % 4))], "n": i} if i % 5 else {"m": None, "n": None}}
            for i in range(40)]
    engine, read = delta_in_datafusion(tmp_path, pa.schema([("id", pa.int64()), ("lm", NESTED["lm"]),
                                                            ("sm", NESTED["sm"])]), rows)
    source = [dict(r) for r in rows]
    source[7]["lm"] = [[("k", "7"), ("k2", "")], None, []]  # an entry more in a nested map
    source[12]["sm"] = {"m": [("a", ""), ("b", "")], "n": 12}  # a null value became empty text
    source.append({"id": 99, "lm": None, "sm": None})
    with pg_conn.cursor() as cur:
        cur.execute("TRUNCATE items")
        cur.executemany("INSERT INTO items VALUES (%s, %s::hstore[], ROW(%s::hstore, %s)::holder)", [
            (r["id"], None if r["lm"] is None else [None if m is None else hstore(m) for m in r["lm"]],
             None if r["sm"]["m"] is None else hstore(r["sm"]["m"]), r["sm"]["n"]) if r["sm"] else
            (r["id"], None, None, None) for r in source])
    pg_conn.commit()
    run, _, end = source_snapshot(pg_conn, DIALECTS["postgres"])
    try:
        lake = Side(DIALECTS["datafusion"], engine.view("lake"),
                    lambda sql: [tuple(r.values()) for r in engine.sql(sql).to_pylist()])
        out = bisect(Side(DIALECTS["postgres"], "items", run), lake, [("id", pa.int64())],
                     [(f.name, f.type) for f in read], buckets=3, leaf_rows=4)
    finally:
        end()
    assert out.differences == {7: DIFFERS, 12: DIFFERS, 99: MISSING_IN_SILVER}


def hstore(entries: list[tuple[str, str | None]]) -> str:
    """hstore's input text of ``entries`` (keys and values quoted, backslash-escaped)."""
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return ", ".join(f"{quoted(k)}=>{'NULL' if v is None else quoted(v)}" for k, v in entries)
