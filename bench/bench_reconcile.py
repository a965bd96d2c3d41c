"""Source reconciliation at scale: key-range checksums against a full pull, on a 1M-row table.

    .venv/bin/python bench/bench_reconcile.py                  # 1M rows, 10 planted differences
    .venv/bin/python bench/bench_reconcile.py --rows 200000

The source is a real PostgreSQL 18 (``lakecdc.devstack.postgres``) table ``items(id bigint primary
key, name text, price numeric(12,2), updated_at timestamptz)``; silver is a Delta table with the
same rows (checked by DataFusion, ``lakecdc.quality.engine``). After loading, 10 differences are made
at the source (4 updates, 3 deletes, 3 inserts). Then, timed:

- ``checksums``: ``lakecdc.quality.reconcile.bisect`` (bucket checksums computed inside PostgreSQL
  and DataFusion, differing buckets bisected down to (key, hash) leaves);
- ``full pull``: every source row through a psycopg cursor and every silver row through Arrow into
  this process, hashed and compared in Python (what reconciliation did before).

Bytes moved = the pickled size of what crossed into this process (answers of both sides).
Printed as a table and one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import tempfile
import time
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def silver_rows(n: int):  # type: ignore[no-untyped-def]
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(np.arange(1, n + 1, dtype=np.int64))
    return pa.table({
        "id": ids, "name": pc.binary_join_element_wise("item-", pc.cast(ids, pa.string()), ""),
        "price": pa.array([Decimal(i).scaleb(-2) for i in range(1, n + 1)], pa.decimal128(12, 2)),
        "updated_at": pc.add(pa.scalar(EPOCH, pa.timestamp("us", tz="UTC")),
                             pc.cast(pc.multiply(ids, 1_000_000), pa.duration("us")))})


def load_source(conn, n: int) -> None:  # type: ignore[no-untyped-def]
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), updated_at timestamptz)")
    conn.execute("INSERT INTO items SELECT i, 'item-' || i, round(i / 100.0, 2), "
                 "timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second' FROM generate_series(1, %s) i", (n,))
    conn.execute("UPDATE items SET name = 'changed' WHERE id IN (17, 250000, 500001, %s)", (n - 3,))
    conn.execute("DELETE FROM items WHERE id IN (2, 333333, %s)", (n,))
    conn.execute("INSERT INTO items VALUES (%s, 'new', 1.00, now()), (%s, 'new', 2.00, now()), "
                 "(%s, 'new', 3.00, now())", (n + 1, n + 2, n + 10))
    conn.commit()


def full_pull(dsn: str, silver) -> tuple[dict[int, str], int]:  # type: ignore[no-untyped-def]
    import psycopg

    def digest(values: tuple) -> str:  # type: ignore[type-arg]
        return hashlib.md5("\x1f".join("" if v is None else str(v) for v in values).encode()).hexdigest()

    with psycopg.connect(dsn) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        source = conn.execute("SELECT id, name, price, updated_at FROM items").fetchall()
    lake = [tuple(r.values()) for r in silver.to_pyarrow_table().to_pylist()]
    moved = len(pickle.dumps(source)) + len(pickle.dumps(lake))
    at_source = {r[0]: digest(r[1:]) for r in source}
    in_silver = {r[0]: digest(r[1:]) for r in lake}
    diff = {k: "missing in silver" for k in at_source.keys() - in_silver.keys()}
    diff.update({k: "missing at the source" for k in in_silver.keys() - at_source.keys()})
    diff.update({k: "differs" for k in at_source.keys() & in_silver.keys() if at_source[k] != in_silver[k]})
    return diff, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    import psycopg
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from lakecdc.devstack.postgres import Postgres
    from lakecdc.quality.engine import DataFusionEngine
    from lakecdc.quality.range_checksums import DIALECTS
    from lakecdc.quality.reconcile import Side, bisect, source_snapshot

    key = [("id", pa.int64())]
    columns = [*key, ("name", pa.string()), ("price", pa.decimal128(12, 2)),
               ("updated_at", pa.timestamp("us", tz="UTC"))]
    with tempfile.TemporaryDirectory() as tmp, Postgres(version=18) as pg:
        dsn = pg.create_database("bench_reconcile")
        with psycopg.connect(dsn) as conn:
            load_source(conn, args.rows)
        write_deltalake(f"{tmp}/silver/items", silver_rows(args.rows))
        silver = DeltaTable(f"{tmp}/silver/items")
        results = {}
        with psycopg.connect(dsn) as conn:
            started = time.perf_counter()
            run, position, end = source_snapshot(conn, DIALECTS["postgres"])
            engine = DataFusionEngine()
            engine.context.register_table("silver", silver)
            lake = Side(DIALECTS["datafusion"], "silver",
                        lambda sql: [tuple(r.values()) for r in engine.sql(sql).to_pylist()])
            out = bisect(Side(DIALECTS["postgres"], '"items"', run), lake, key, columns)
            end()
            results["checksums"] = {"seconds": time.perf_counter() - started, "bytes": out.bytes_moved,
                                    "queries": out.queries, "differences": len(out.differences)}
        started = time.perf_counter()
        diff, moved = full_pull(dsn, silver)
        results["full pull"] = {"seconds": time.perf_counter() - started, "bytes": moved, "queries": 2,
                                "differences": len(diff)}
    print(f"{args.rows} rows, 10 planted differences (source position {position})")
    print(f"{'method':<12}{'seconds':>10}{'MB moved':>12}{'queries':>9}{'found':>7}")
    for name, r in results.items():
        print(f"{name:<12}{r['seconds']:>10.1f}{r['bytes'] / 1e6:>12.3f}{r['queries']:>9}{r['differences']:>7}")
    print(json.dumps({"rows": args.rows, **results}))
    assert out.differences == diff, (out.differences, diff)


if __name__ == "__main__":
    main()
