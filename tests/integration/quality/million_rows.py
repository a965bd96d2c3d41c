"""A child process for the large-table quality test: builds a 1M-row bronze/silver pair with planted
defects, or checks it while sampling its own resident memory. Run by ``test_quality_at_scale.py``.

    python million_rows.py write-delta DIR      # Delta tables under DIR (delta-rs, 10 appends)
    python million_rows.py check-delta DIR      # rules in DataFusion; prints a JSON line
    python million_rows.py iceberg DIR          # write + check in Spark (driver memory from the env)

Layout (docs/CONTRACTS.md): bronze holds a create per id (position 10+id, offset id), a delete of
ids below ``DELETED`` and one repeated event; silver holds the replay, plus planted defects:
deleted id 5 back in silver, id 2000 twice, id 3000 with another payload.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

ROWS = 1_000_000
DELETED = 1000
PAYLOAD = 600  # characters per row: the table is ~0.7 GB in memory
KEYS = ("id",)
MEMORY_MB = 128  # DataFusion's spill pool
EXPECTED = {"not_null_keys": 0, "unique_keys": 2, "no_resurrected_deletes": 1, "bronze_positions_increasing": 1,
            "silver_matches_bronze_replay": 2}


class PeakRss:
    """The process's resident memory, sampled every 20 ms, from ``start`` to ``stop``."""

    def __init__(self) -> None:
        import psutil

        self.process = psutil.Process()
        self.base = self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.base = self.peak = self.process.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 1e6


def _chunk(start: int, stop: int, bronze: bool):  # type: ignore[no-untyped-def]
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(np.arange(start, stop, dtype=np.int64))
    n = stop - start
    payload = pc.binary_join_element_wise(pc.cast(ids, pa.string()), pa.scalar("x" * PAYLOAD), "-")
    seq_first = pc.add(ids, 10)
    flat = pa.array(np.column_stack([seq_first, seq_first, np.zeros(n, np.int64), np.zeros(n, np.int64)]).ravel())
    seq = pa.ListArray.from_arrays(pa.array(np.arange(0, 4 * n + 1, 4, dtype=np.int32)), flat)
    columns = {"id": ids, "payload": payload, "_op": pa.array(["c"] * n), "_seq": seq,
               "_source_ts_ms": pc.add(ids, 1_700_000_000_000), "_tx_id": pc.cast(ids, pa.string())}
    if bronze:
        columns.update(_kafka_partition=pa.array(np.zeros(n, np.int32)), _offset=ids,
                       _unavailable=pa.array([[]] * n, pa.list_(pa.string())))
    return pa.table(columns)


def _events(rows: list[dict]):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=_chunk(0, 1, True).schema)


def _defects() -> tuple[list[dict], list[dict], list[int]]:
    """Bronze extras (deletes, a repeated event), silver extras, silver ids to drop (deleted)."""
    base = {"_source_ts_ms": 1_700_000_000_000, "_kafka_partition": 0, "_unavailable": []}
    deletes = [{**base, "id": i, "payload": "gone", "_op": "d", "_seq": [ROWS + 10 + i, ROWS + 10 + i, 0, 0],
                "_tx_id": f"d{i}", "_offset": ROWS + i} for i in range(DELETED)]
    repeat = {**base, "id": 4000, "payload": f"4000-{'x' * PAYLOAD}", "_op": "c", "_seq": [4010, 4010, 0, 0],
              "_tx_id": "4000", "_offset": ROWS + DELETED}
    silver = [{"id": 5, "payload": f"5-{'x' * PAYLOAD}", "_op": "c", "_seq": [15, 15, 0, 0],
               "_source_ts_ms": 1_700_000_000_005, "_tx_id": "5"},
              {"id": 2000, "payload": f"2000-{'x' * PAYLOAD}", "_op": "c", "_seq": [2010, 2010, 0, 0],
               "_source_ts_ms": 1_700_000_002_000, "_tx_id": "2000"}]
    return [*deletes, repeat], silver, [*range(DELETED), 3000]


def write_delta(root: Path, rows: int = ROWS) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import write_deltalake

    bronze_extra, silver_extra, dropped = _defects()
    step = rows // 10
    for start in range(0, rows, step):
        write_deltalake(str(root / "bronze" / "big"), _chunk(start, start + step, True), mode="append")
        silver = _chunk(start, start + step, False)
        silver = silver.filter(pc.invert(pc.is_in(silver["id"], pa.array(dropped, pa.int64()))))
        write_deltalake(str(root / "silver" / "big"), silver, mode="append")
    write_deltalake(str(root / "bronze" / "big"), _events(bronze_extra), mode="append")
    changed = {"id": 3000, "payload": "changed", "_op": "c", "_seq": [3010, 3010, 0, 0],
               "_source_ts_ms": 1_700_000_003_000, "_tx_id": "3000"}
    rows = pa.Table.from_pylist([*silver_extra, changed], schema=_chunk(0, 1, False).schema)
    write_deltalake(str(root / "silver" / "big"), rows, mode="append")


def check(silver, bronze) -> dict:  # type: ignore[no-untyped-def]
    from lakecdc.quality import check_table

    with PeakRss() as rss:
        started = time.monotonic()
        report = check_table(silver, bronze, rules=list(EXPECTED), keys=KEYS, sample_rows=10, memory_mb=MEMORY_MB)
    return {"failed": {r.rule: r.failed_rows for r in report.results},
            "samples": {r.rule: 0 if r.failing is None else len(r.failing) for r in report.results},
            "checked": report.result("not_null_keys").checked, "rss_growth_mb": rss.growth_mb,
            "seconds": time.monotonic() - started}


def table_mb() -> float:
    """The silver table's size in memory (Arrow), the least a collect to the driver takes."""
    return _chunk(0, 10_000, False).nbytes * ROWS / 10_000 / 1e6


def main(argv: list[str]) -> None:
    mode, root = argv[0], Path(argv[1])
    from lakecdc.audit import LakeTable

    if mode == "write-delta":
        write_delta(root)
        return
    if mode == "check-delta":
        # the first query of a process starts DataFusion's and delta-rs's runtimes (~150 MB, whatever
        # the table): paid on a 1000-row copy before the measured check
        write_delta(root / "warm-up", rows=1000)
        check(LakeTable.delta(root / "warm-up", "silver.big"), LakeTable.delta(root / "warm-up", "bronze.big"))
        out = check(LakeTable.delta(root, "silver.big"), LakeTable.delta(root, "bronze.big"))
    else:
        out = iceberg(root)
    print(json.dumps({**out, "table_mb": table_mb()}))


def iceberg(root: Path) -> dict:
    from lakecdc.audit import LakeTable
    from lakecdc.devstack.spark import spark_session
    from lakecdc.spark.session import compiled

    spark = spark_session(root, app_name="quality-at-scale")
    with compiled(spark):  # 2M generated rows: compiled code builds them faster
        _build_iceberg(spark)
    out = check(LakeTable.iceberg(spark, "silver.big"), LakeTable.iceberg(spark, "bronze.big"))
    spark.stop()
    return out


def _build_iceberg(spark) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bronze")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.silver")
    bronze_extra, silver_extra, dropped = _defects()
    generated = (f"SELECT id, concat(cast(id AS string), '-', repeat('x', {PAYLOAD})) AS payload, 'c' AS _op, "
                 "array(id + 10, id + 10, 0L, 0L) AS _seq, id + 1700000000000L AS _source_ts_ms, "
                 f"cast(id AS string) AS _tx_id FROM range({ROWS})")
    spark.sql(f"CREATE TABLE lake.bronze.big USING iceberg AS SELECT *, 0 AS _kafka_partition, id AS _offset, "
              f"cast(array() AS array<string>) AS _unavailable FROM ({generated})")
    spark.sql(f"CREATE TABLE lake.silver.big USING iceberg AS SELECT * FROM ({generated}) "
              f"WHERE id >= {DELETED} AND id <> 3000")
    schema = spark.table("lake.bronze.big").schema
    spark.createDataFrame([tuple(r[f.name] for f in schema) for r in bronze_extra], schema) \
        .writeTo("lake.bronze.big").append()
    changed = {"id": 3000, "payload": "changed", "_op": "c", "_seq": [3010, 3010, 0, 0],
               "_source_ts_ms": 1_700_000_003_000, "_tx_id": "3000"}
    schema = spark.table("lake.silver.big").schema
    spark.createDataFrame([tuple(r[f.name] for f in schema) for r in [*silver_extra, changed]], schema) \
        .writeTo("lake.silver.big").append()


if __name__ == "__main__":
    main(sys.argv[1:])
