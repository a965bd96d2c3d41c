"""Apply throughput of the writers: changes/s into silver and into bronze, beside plain append.

For each format (Iceberg through Spark SQL, Delta through delta-rs) and each key distribution a
fresh silver table is loaded with ``--table-rows`` rows (a snapshot batch through the writer
itself), then batches of each size in ``--sizes`` are applied: mixed changes, 20% inserts of new
keys, 70% updates and 10% deletes of existing keys (some keys hit twice, so the in-batch dedupe
works too). The existing keys are drawn two ways (``--keys``):

- ``uniform``: anywhere in the table (the worst case: every file holds a changed key);
- ``recent``: among the newest 5% of the loaded rows (orders, events, sessions: the changes of
  most CDC tables cluster on recent rows), which the MERGE's key ranges
  (``lakecdc.lake.key_ranges``) let the engines exploit.

Each batch is built and cached in Spark, and its figures computed from Arrow as the ingest job
does, before the clock starts; the same cached batch is also appended to a plain table of the
same format (no dedupe, no MERGE) to give the reference rate on the same machine, in the same
run, and MERGEd plainly (one row per key, no guards) into an EMPTY table of the same format: the
"floor", a MERGE with nothing to read, which no silver MERGE can beat.

    .venv/bin/python bench/bench_apply.py                       # 10k, 100k, 1M on 1M rows
    .venv/bin/python bench/bench_apply.py --sizes 10000 --table-rows 100000 --formats delta --keys recent
    .venv/bin/python bench/bench_apply.py --sizes 10000,100000 --keys uniform --ledger-rows 1000000

Printed per batch: silver apply (preparing the MERGE source and ledger rows + delete-ledger append +
MERGE), bronze apply (position anti-join + append), plain append, all in changes/s, silver as a
percentage of plain append (target >= 50%), the same percentage in CPU seconds (Spark's JVM + this
process, so delta-rs and Arrow count too: on a shared machine the steadier of the two), the
seconds of the plain append, the preparation (delta-rs: the batch's Spark -> Arrow collect and the
Arrow dedupe, ``lakecdc.lake.silver_arrow``; Iceberg: a lazy Spark plan, ~0 s), the ledger
append and the MERGE step, and the floor as a percentage of plain append. A first batch of the
smallest size is applied and printed as "warm-up": the first MERGE after start pays class loading
and JIT, which a running job pays once.

Measured 2026-11-22 17:35-17:38 UTC on the 2-core development machine with nothing else running
(``uptime`` load average 2.5: the bench itself), 1M-row tables, warm-up rows left out:

    format   keys      changes   silver/s   bronze/s   append/s  silver %  cpu %  floor %
    iceberg  uniform    10,000      3,236     16,145     33,075       10%     9%      68%
    iceberg  uniform   100,000     29,680     69,569    166,522       18%    18%      78%
    iceberg  uniform 1,000,000    109,634    202,473    522,942       21%    22%      53%
    iceberg  recent     10,000      8,755     19,586     44,526       20%    21%      67%
    iceberg  recent    100,000     62,066     95,988    220,553       28%    28%      92%
    iceberg  recent  1,000,000    287,645    204,652    486,718       59%    64%     195%
    delta    uniform    10,000     11,376     59,260     99,243       11%    11%     113%
    delta    uniform   100,000     71,846    147,244    309,552       23%    24%     122%
    delta    uniform 1,000,000    237,604    278,147    540,655       44%    43%      90%
    delta    recent     10,000     26,375     49,975    106,720       25%    32%      80%
    delta    recent    100,000    200,600    191,348    219,146       92%   102%     220%
    delta    recent  1,000,000    629,710    292,409    561,250      112%   108%     305%

The 50% target is met with recent keys for delta-rs at 100k and 1M changes and for Iceberg at 1M
(59%, CPU 64%). It is NOT met for any 10k batch (Iceberg 10-20%, delta-rs 11-25%), for Iceberg
at 100k (18-28%), nor with uniform keys at any size (Iceberg 10-21%, delta-rs 11-44%).

delta-rs with the MERGE source prepared in Arrow (``silver_arrow``: one collect of the batch and
an Arrow dedupe, instead of a Spark window job collected into Arrow and a Spark job for the ledger
rows), 2026-11-22 23:18-23:22 UTC, this code and then the code before it (019f444) right after,
same machine, nothing else running (load average 0.8-2.4: the bench itself):

    keys      changes   silver % now   before   (prep + ledger + MERGE s now / before)
    uniform    10,000        19%         15%     0.09 + 0.01 + 0.81 / 0.09 + 1.14
    uniform   100,000        36%         26%     0.21 + 0.01 + 1.21 / 0.08 + 1.63
    uniform 1,000,000        65%         48%     1.96 + 0.05 + 1.68 / 0.18 + 4.24
    recent     10,000        46%         24%     0.08 + 0.01 + 0.29 / 0.06 + 0.35
    recent    100,000        75%         59%     0.23 + 0.02 + 0.35 / 0.06 + 0.57
    recent  1,000,000        82%        114%     1.88 + 0.05 + 0.47 / 0.17 + 1.83

Better in five cells of six; worse with 1M recent changes, where most events repeat a key (about
250k keys): Spark deduplicated them on both cores before the collect, while now all 1M events
cross to Arrow (~1.3 s) and are deduplicated there. A 10k batch is still below the target
(46%, 19%): the plain append of 10k rows takes 0.1-0.2 s, less than the delta-rs MERGE alone.

Re-run 2026-11-22 20:40-20:48 UTC with this evening's code (the delete-ledger semi join, the
key-change fill held on the driver), load average 2-7 at its start (other test runs ending):

    format   keys      changes   silver/s   bronze/s   append/s  silver %  cpu %  floor %
    iceberg  uniform    10,000      3,041     10,472     28,303       11%    10%      62%
    iceberg  uniform   100,000     23,554     69,429    116,158       20%    20%      90%
    iceberg  uniform 1,000,000     86,892    147,222    415,416       21%    22%      56%
    iceberg  recent     10,000      6,216     12,825     37,616       17%    15%      54%
    iceberg  recent    100,000     50,363     76,535    198,065       25%    26%      81%
    iceberg  recent  1,000,000    190,964    164,953    429,997       44%    41%     118%
    delta    uniform    10,000      6,040     38,931     48,738       12%    13%     172%
    delta    uniform   100,000     52,397    123,335    206,497       25%    29%      99%
    delta    uniform 1,000,000    161,253    239,281    422,275       38%    38%     103%
    delta    recent     10,000     19,375     45,229     65,936       29%    32%     150%
    delta    recent    100,000    107,364    150,599    202,809       53%    52%     176%
    delta    recent  1,000,000    436,555    197,912    493,673       88%    81%     283%

So the Iceberg 1M recent cell is at the edge: 59% in the first run, 44% in this one.

What the key ranges change (recent keys, the same sorted layout without the ranges in the ON
condition, run right after at load 2.5): Iceberg 12%, 17%, 42% at 10k, 100k, 1M (with them 20%,
28%, 59%); delta-rs 20%, 55%, 102% (with them 25%, 92%, 112%; delta-rs prunes by the source's
[min, max] by itself, which the sorted, 8 MB files already help). Uniform keys cannot be pruned:
their MERGE takes about as long as before the change (247d018, same machine and hour: Iceberg
2.7 s and 8.9 s, delta-rs 0.84 s and 4.6 s at 10k and 1M, against 2.8 s, 8.4 s, 0.84 s, 4.0 s
above); the percentages also move with the plain append, which varied by a third between runs
at 10k (Iceberg 0.27-0.41 s), so 247d018 printed 14% and 22% (Iceberg), 13% and 45% (delta-rs). 2 MB
Iceberg row groups pruned finer but slowed uniform MERGEs by a quarter (1M: 16-17% against 22%): 8 MB was kept.

Where the remaining time goes (event log and py-spy, this afternoon):

- Iceberg, 10k recent changes: the MERGE's target scan is down to the last row group of the
  loaded file and the files of earlier batches, but reading it still costs 0.5-0.9 s: every
  earlier MERGE added a position-delete file that the scan must apply (``lakecdc maintain``
  folds them), and ``_seq`` is a list column, which keeps Iceberg's reader off its vectorized
  path (a count over 50k rows: 0.28-0.38 s without deletes, 0.48-0.55 s with them, 0.74-0.88 s
  reading ``_seq`` too). The delete-ledger append is a commit of its own (0.2-0.4 s).
- The floor: even into an empty table the engine's MERGE runs at 53-78% (Iceberg) and 80-122%
  (delta-rs) of the append rate here, so a 10k silver MERGE must stay within a small multiple
  of an empty-table MERGE while also reading the stored rows, the ledger and its guards.
- delta-rs with uniform keys rewrites every file holding a changed key (copy-on-write, no
  deletion vectors in delta-rs: delta-io/delta-rs#4512), i.e. the whole table.

A table with a history of deletes (``--ledger-rows 1000000``: the delete ledger holds a million
older removals spread over the key range; uniform keys; 2026-11-22 20:00-20:13 UTC, the machine
shared with other test runs, load average 9-10, so only the before/after pairs of the same run
compare): the ledger read now keeps only the batch's keys (a semi join) before it sorts and
aggregates. delta-rs MERGE step 11.0 s -> 4.9 s at 10k changes and 12.6 s -> 4.6 s at 100k;
Iceberg unchanged within the noise (21.7 s -> 19.1 s, 17.8 s -> 17.8 s): Spark still scans the
ledger rows inside the batch's key ranges, which uniform keys do not narrow.

Earlier runs, before the key ranges (uniform keys only; same machine):

Measured 2026-11-22 13:56-14:08 UTC on the shared 2-core development machine (``uptime`` load
average 12-13 during the Iceberg part, 8-9 during Delta; other agents' test suites), 1M-row
table; absolute rates are several times below an idle machine, the ratios within one run are
the point:

    format     changes   silver/s   bronze/s   append/s  silver %  cpu %
    iceberg     10,000        546      1,480      5,085       11%    11%
    iceberg    100,000      5,493     12,343     28,700       19%    20%
    iceberg  1,000,000     40,205     33,656    114,800       35%    40%
    delta       10,000      5,359     20,456     32,866       16%    17%
    delta      100,000     14,878     28,160    116,630       13%    20%
    delta    1,000,000     83,078     72,013    140,506       59%    43%

Second run right after, 14:09-14:17 UTC (load average 8-10.5), same code and batches:

    format     changes   silver/s   bronze/s   append/s  silver %  cpu %
    iceberg     10,000      1,766      5,323     19,501        9%    13%
    iceberg    100,000      6,938     21,854     36,704       19%    20%
    iceberg  1,000,000     23,887     25,147     71,168       34%    40%
    delta       10,000      2,693     16,569     22,409       12%    18%
    delta      100,000     18,532     48,833     45,823       40%    33%
    delta    1,000,000     74,702     59,314    145,134       51%    52%

The 50% target is met only by delta-rs at 1M changes, and only just (wall 59% and 51%, CPU 43%
and 52%). It is NOT met for Iceberg at any size (10k: 9-11%, 100k: 19%, 1M: 34-35%; CPU 11-40%)
nor for delta-rs at 10k (12-16%) and 100k (13-40% wall, 20-33% CPU; the noisiest cell).
Where the time goes (profiled the same afternoon: Spark event log with per-stage
executor CPU, py-spy on the Python side, each variant alternated in one process):

- Iceberg, 10k changes into 1M rows, steady state: the MERGE takes 1.4-1.75 s of executor CPU
  against 0.10-0.15 s for the plain append of the same batch. 0.8-0.95 s of it is one task
  reading ``id``, ``_seq``, ``_file`` and ``_pos`` of all 1M target rows and shuffling them
  (35 MB) to the join, 0.5-0.7 s the join of those 1.01M rows, ~0.2 s the rest (dedupe window,
  delete-ledger guard, writing the rows and position deletes). A MERGE must find the stored row
  of every key in the batch, and random keys live in every file, so neither file statistics nor
  partitions prune: reading 1M keys costs ~10x writing 10k rows, whatever the layout. The ratio
  rises with the batch as the fixed scan is shared by more changes.
- Tried on Iceberg, none adopted: shuffled-hash instead of sort-merge join
  (``spark.sql.join.preferSortMergeJoin=false``): within noise (MERGE 13.6/14.0 s sort-merge
  against 16.0/11.8 s hash, rounds 2-3, load 13-15). Spark's runtime bloom filter
  (``spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold=1``): not injected
  into the MERGE join (the 1M-row shuffle stays). Silver bucketed on the key (``bucket(8, id)``,
  written ordered by ``id``), MERGE from a view, and MERGE from an Iceberg staging table of the
  batch bucketed alike with the storage-partitioned-join settings on
  (``spark.sql.sources.v2.bucketing.enabled``, ``spark.sql.iceberg.planning.preserve-data-grouping``
  ...; whether the plan then dropped the target shuffle was not checked): 10k changes into 1M
  rows, rounds 2-4 of one process, CPU seconds (JVM + Python) plain 4.1/4.1/3.3, bucketed
  5.3/3.6/3.2, bucketed from the staging table incl. its write 5.6/4.8/3.4: no gain, so the
  silver layout stays unpartitioned.
- delta-rs: py-spy over 10k and 100k batches: half of the silver wall time is Spark computing the
  MERGE source (dedupe window) and shipping it to Arrow (``_to_arrow``, 1.0-1.5 CPU s for 10k rows),
  the other half delta-rs' merge, which without deletion vectors rewrites every file holding a
  matched key: the whole table for random keys. Coalescing the batch to one partition before the
  dedupe (no shuffle) saved 0.7-2 s of 3-5 s at 10k and nothing at 100k: not adopted.
- The rest of the apply (batch stats, progress reads, bronze) is outside the silver figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecdc.lake.batch import ChangeBatch, ColumnSpec, TableTarget
from lakecdc.lake.silver import arrow_batch_stats
from lakecdc.writers.base import LakeWriter, create_writer
from lakecdc.writers.delta_rs import _to_arrow

ROW_COLUMNS = "id bigint, name string, qty int, price decimal(10,2), updated_at timestamp, notes string"


def columns(spark: SparkSession) -> list[ColumnSpec]:
    schema = spark.createDataFrame([], ROW_COLUMNS).schema
    return [ColumnSpec(f.name, f.dataType, True) for f in schema.fields]


#: ``recent`` key distribution: updates and deletes hit the newest this fraction of the loaded rows
RECENT_FRACTION = 0.05


def change_rows(spark: SparkSession, size: int, table_rows: int, round_no: int, first_offset: int,
                snapshot: bool = False, keys: str = "uniform") -> DataFrame:
    """``size`` Debezium-shaped change rows as ``ChangeBatch.df`` expects them."""
    i = F.col("id")
    lsn = F.lit(1_000_000_000 * (round_no + 1))
    kind = i % 10
    if snapshot:
        op, key = F.lit("r"), i
    else:
        op = F.when(kind < 2, "c").when(kind == 2, "d").otherwise("u")
        spread = table_rows if keys == "uniform" else max(1, int(table_rows * RECENT_FRACTION))
        existing = F.lit(table_rows - spread) + (i * 7919 + round_no * 104729) % spread
        key = F.when(kind < 2, F.lit(table_rows + round_no * 10_000_000) + i).otherwise(existing)
    deleted = op == "d"
    return spark.range(size).select(
        key.alias("id"),
        F.when(~deleted, F.concat(F.lit("customer "), key.cast("string"))).alias("name"),
        F.when(~deleted, (i % 1000).cast("int")).alias("qty"),
        F.when(~deleted, (i % 100000 / 100).cast("decimal(10,2)")).alias("price"),
        F.when(~deleted, F.timestamp_seconds(F.lit(1_700_000_000) + i)).alias("updated_at"),
        F.when(~deleted, F.lit("x" * 40)).alias("notes"),
        op.alias("_op"),
        F.array(lsn + i, lsn + i, F.lit(0).cast("bigint"), F.lit(0).cast("bigint")).alias("_seq"),
        (F.lit(1_700_000_000_000) + lsn / 1000 + i).cast("bigint").alias("_source_ts_ms"),
        F.concat(F.lit("tx"), (lsn + i / 100).cast("bigint").cast("string")).alias("_tx_id"),
        (i % 100 + 1).alias("_tx_total_order"),
        F.lit("bench.public.customers").alias("_topic"),
        F.lit(0).alias("_partition"),
        (F.lit(first_offset) + i).alias("_offset"),
        F.current_timestamp().alias("_ingest_ts"),
        F.array().cast("array<string>").alias("_unavailable"),
        F.concat(F.lit('{"id":'), key.cast("string"), F.lit("}")).alias("_key_json"),
        F.lit(None).cast("string").alias("_old_key_json"),
    )


def old_removals(spark: SparkSession, rows: int, table_rows: int) -> DataFrame:
    """``rows`` delete-ledger rows recorded before the load (older ``_seq``), their keys spread over
    the table's key range: the removals a long-running table has accumulated."""
    i = F.col("id")
    return spark.range(rows).select(
        ((i * 7919) % table_rows).alias("id"),
        F.array(i + 1, i + 1, F.lit(0).cast("bigint"), F.lit(0).cast("bigint")).alias("_seq"),
        F.lit("d").alias("_op"), (F.lit(1_600_000_000_000) + i).alias("_source_ts_ms"))


class CpuClock:
    """CPU seconds used so far by this process (Python, Arrow, delta-rs threads) plus Spark's JVM.

    On a shared machine wall time depends on what else runs; CPU time much less, so the CPU
    ratio of silver to plain append is the steadier figure (Linux ``/proc``; NaN elsewhere).
    """

    def __init__(self, spark: SparkSession) -> None:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
        self.jvm_stat = Path(f"/proc/{pid}/stat") if pid != os.getpid() else None
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __call__(self) -> float:
        jvm = 0.0
        if self.jvm_stat is not None:
            try:  # utime and stime are fields 14 and 15, counted after the ")" closing the name
                fields = self.jvm_stat.read_text().rsplit(")", 1)[1].split()
                jvm = (int(fields[11]) + int(fields[12])) / self.tick
            except OSError:
                return float("nan")
        return time.process_time() + jvm


class StepTimer:
    """Wraps a writer's bronze and silver steps to time them (wall and CPU) inside one ``apply``."""

    def __init__(self, writer: LakeWriter, clock: CpuClock) -> None:
        self.clock = clock
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        steps = {"bronze": "_append_bronze", "prepare": "_silver_rows", "ledger": "_append_ledger",
                 "merge": "_merge_silver"}
        for step, name in steps.items():
            setattr(writer, name, self._timed(step, getattr(writer, name)))

    @property
    def silver(self) -> float:
        """Silver apply: preparing the MERGE source and ledger rows (a Spark plan, or Arrow rows
        for delta-rs), the delete-ledger append (only batches with deletes) and the MERGE."""
        before = sum(self.seconds.get(step, 0.0) for step in ("prepare", "ledger"))
        return before + self.seconds.get("merge", float("nan"))

    @property
    def silver_cpu(self) -> float:
        return sum(self.cpu.get(step, 0.0) for step in ("prepare", "ledger")) + self.cpu.get("merge", float("nan"))

    def _timed(self, step: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - started
                self.cpu[step] = self.cpu.get(step, 0.0) + self.clock() - cpu
        return run

    def reset(self) -> None:
        self.seconds, self.cpu = {}, {}


def plain_append(fmt: str, spark: SparkSession, df: DataFrame, warehouse: Path, name: str,
                 clock: CpuClock) -> tuple[float, float]:
    """(wall seconds, CPU seconds) to append the batch as is to a plain table of the same format."""
    started, cpu = time.perf_counter(), clock()
    if fmt == "iceberg":
        df.writeTo(f"lake.plain.{name}").using("iceberg").create()
    else:
        from deltalake import write_deltalake

        write_deltalake(str(warehouse / "plain" / name), _to_arrow(df), mode="append")
    return time.perf_counter() - started, clock() - cpu


def empty_merge(fmt: str, spark: SparkSession, df: DataFrame, warehouse: Path, name: str,
                clock: CpuClock) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the engine's plainest MERGE of the batch (one row per key, no
    guards) into an EMPTY table of the same format: a floor no silver MERGE can go below, as
    there is nothing to read. Beside the plain append it shows how far the engine's MERGE
    machinery alone is from an append."""
    # ``_partition`` renamed as bronze does: Iceberg's MERGE reserves the name for its metadata column
    rows = (df.dropDuplicates(["id"]).withColumnRenamed("_partition", "_kafka_partition").drop("_ingest_ts")
            .withColumn("_ingest_ts", F.current_timestamp()).persist())
    rows.count()
    if fmt == "iceberg":
        spark.createDataFrame([], rows.schema).writeTo(f"lake.floor.{name}").using("iceberg").tableProperty(
            "write.merge.mode", "merge-on-read").create()
        rows.createOrReplaceTempView("floor_source")
    else:
        from deltalake import DeltaTable
        uri = str(warehouse / "floor" / name)
        DeltaTable.create(uri, _to_arrow(rows.limit(0)).schema)
    started, cpu = time.perf_counter(), clock()
    if fmt == "iceberg":
        spark.sql(f"MERGE INTO lake.floor.{name} t USING floor_source s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    else:
        (DeltaTable(uri).merge(_to_arrow(rows), "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    seconds, cpu_seconds = time.perf_counter() - started, clock() - cpu
    rows.unpersist()
    return seconds, cpu_seconds


def bench_format(spark: SparkSession, fmt: str, keys: str, warehouse: Path, sizes: list[int], table_rows: int,
                 warmup: bool, header: str, ledger_rows: int = 0) -> None:
    """Load a fresh silver table of ``fmt`` and apply each batch size with ``keys`` distribution."""
    writer_format = "iceberg" if fmt == "iceberg" else "delta-rs"
    writer = create_writer(writer_format, spark, warehouse=str(warehouse / "delta"))
    assert isinstance(writer, LakeWriter)
    clock = CpuClock(spark)
    timer = StepTimer(writer, clock)
    target = TableTarget(topic="bench.public.customers", connector="postgres", database="bench",
                         schema="public", table="customers", bronze_table=f"bronze.customers_{fmt}_{keys}",
                         silver_table=f"silver.customers_{fmt}_{keys}", format="delta" if fmt == "delta" else "iceberg",
                         key_columns=("id",))
    spec = columns(spark)
    offset = 0
    load = change_rows(spark, table_rows, table_rows, 0, offset, snapshot=True).persist()
    load.count()
    started = time.perf_counter()
    writer.apply(ChangeBatch(target, spec, load, {(target.topic, 0): offset + table_rows - 1}), 0)
    load.unpersist()
    offset += table_rows
    if ledger_rows:
        writer._append_ledger(target, old_removals(spark, ledger_rows, table_rows))
    print(f"\n{fmt}, {keys} keys: snapshot load of {table_rows:,} rows through the writer: "
          f"{table_rows / (time.perf_counter() - started):,.0f} rows/s")
    print(header)
    # The first batch after the load pays the JVM's warm-up (class loading, JIT of the MERGE
    # and write paths) in both silver and plain append; a running ingest job pays it once.
    # It is applied and printed ("warm-up" rows) but the figures are the batches after it.
    rounds = [("warm-up", size) for size in sizes[:1] if warmup] + [("", size) for size in sizes]
    for round_no, (label, size) in enumerate(rounds, start=1):
        df = change_rows(spark, size, table_rows, round_no, offset, keys=keys).persist()
        # The job computes a batch's figures from the Arrow rows it builds the batch from
        # (``arrow_batch_stats``); so does the bench, before the clock starts.
        stats = arrow_batch_stats(_to_arrow(df), target.key_columns)
        timer.reset()
        started = time.perf_counter()
        batch = ChangeBatch(target, spec, df, {(target.topic, 0): offset + size - 1}, stats=stats)
        result = writer.apply(batch, round_no)
        total = time.perf_counter() - started
        append, append_cpu = plain_append(
            fmt, spark, df.drop("_ingest_ts").withColumn("_ingest_ts", F.current_timestamp()), warehouse,
            f"p{fmt}{keys}{round_no}", clock)
        floor, _ = empty_merge(fmt, spark, df, warehouse, f"f{fmt}{keys}{round_no}", clock)
        df.unpersist()
        offset += size
        silver_rate = size / timer.silver
        bronze_rate = size / timer.seconds.get("bronze", float("nan"))
        append_rate = size / append
        print(f"{label or fmt:8} {keys:7} {size:>9,} {silver_rate:>10,.0f} {bronze_rate:>10,.0f} {append_rate:>10,.0f} "
              f"{100 * silver_rate / append_rate:>8.0f}% {100 * append_cpu / timer.silver_cpu:>5.0f}% "
              f"{append:>9.2f} "
              f"{timer.seconds.get('prepare', 0.0):>7.2f} {timer.seconds.get('ledger', 0.0):>9.2f} "
              f"{timer.seconds.get('merge', float('nan')):>8.2f} "
              f"{total:>8.1f} {100 * append / floor:>7.0f}%", flush=True)
        assert result.bronze_rows == size, f"bronze took {result.bronze_rows} of {size} new events"


def run(formats: list[str], sizes: list[int], table_rows: int, keep: bool, warmup: bool = True,
        distributions: tuple[str, ...] = ("uniform", "recent"), ledger_rows: int = 0) -> None:
    from lakecdc.devstack.spark import spark_session

    warehouse = Path(tempfile.mkdtemp(prefix="lakecdc-bench-"))
    extra = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_SPARK_CONF", "").split() if kv)
    spark = spark_session(warehouse, app_name="lakecdc-bench",
                          extra_conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4", **extra})
    print(f"warehouse {warehouse}; table {table_rows:,} rows; delete ledger {ledger_rows:,} older rows; "
          f"batches {', '.join(f'{s:,}' for s in sizes)}")
    header = (f"{'format':8} {'keys':7} {'changes':>9} {'silver/s':>10} {'bronze/s':>10} {'append/s':>10} "
              f"{'silver %':>9} {'cpu %':>6} "
              f"{'append s':>9} {'prep s':>7} {'ledger s':>9} {'merge s':>8} {'total s':>8} {'floor %':>8}")
    try:
        for fmt in formats:
            for keys in distributions:
                bench_format(spark, fmt, keys, warehouse, sizes, table_rows, warmup, header, ledger_rows)
    finally:
        spark.stop()
        if not keep:
            shutil.rmtree(warehouse, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated batch sizes")
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--formats", default="iceberg,delta", help="iceberg, delta or both")
    parser.add_argument("--keys", default="uniform,recent",
                        help="key distributions of updates and deletes: uniform over the table, recent (newest 5%%)")
    parser.add_argument("--ledger-rows", type=int, default=0,
                        help="removals in the delete ledger before the first batch (a table with a history of deletes)")
    parser.add_argument("--keep", action="store_true", help="keep the warehouse directory")
    parser.add_argument("--no-warmup", action="store_true", help="time the first batch after the load too")
    args = parser.parse_args(argv)
    run([f.strip() for f in args.formats.split(",")], [int(s) for s in args.sizes.split(",")], args.table_rows,
        args.keep, not args.no_warmup, tuple(k.strip() for k in args.keys.split(",")), args.ledger_rows)


if __name__ == "__main__":
    sys.exit(main())
