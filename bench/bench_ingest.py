"""Backlog drain into silver: ``lakecdc ingest`` beside the do-it-yourself recipe, in one run (issue 18).

    .venv/bin/python bench/bench_ingest.py                          # 2 tables x (200k rows + 100k changes)
    .venv/bin/python bench/bench_ingest.py --rows 20000 --changes 10000 --formats delta

1. starts the local stack (the fast broker, an embedded PostgreSQL 18) and two tables of ``--rows``
   rows each; ``lakecdc capture`` (a process, as users run it) snapshots them, then streams
   ``--changes`` changes per table (80% updates, 10% deletes, 10% inserts, transactions of 1000 rows)
   into Kafka, with transaction metadata, as the demo's configuration does;
2. per format, two drains of the same backlog, each a process started from nothing, timed from
   start to exit, CPU summed over its process tree (Python, Spark's JVM, its Python workers):
   - ``lakecdc ingest --trigger available-now``: bronze + silver with every guarantee;
   - the recipe a competent data engineer writes instead: a confluent-kafka consumer over the data
     topics in micro-batches of lakecdc's default size (``batch.max.records``), the Debezium JSON
     parsed with orjson against a hand-written schema per table, the newest event per key kept (by
     LSN, then offset), one MERGE per batch and table (Iceberg: Spark SQL ``MERGE INTO`` on the
     Spark session lakecdc builds; Delta: delta-rs ``DeltaTable.merge`` from Arrow). No bronze, no
     transaction guard, no delete ledger, no dead letters.
3. checks that both silvers equal the source row by row (a drain that is fast and wrong fails the
   run) and prints changes/s, CPU seconds and lakecdc's ratio to the recipe per format.

Events drained per format: 2 x (rows + changes) data records (deletes' tombstones are skipped by
both). It is a benchmark, not a test: it prints figures. Figures are recorded below with the date
and the machine's load; keep earlier ones for comparison.

Figures (defaults: 600,000 events, 200,000 of them changes; this 2-core machine):

- 2026-11-29 12:49-13:07 UTC, idle (load 0.1-1.4): Iceberg lakecdc 93.8 s by its own log; Delta
  lakecdc hung after 6 of its batches: the 1 GB driver JVM ran out of memory copying the batch and
  its bronze identity window as ``LocalRelation`` rows, in the thread serving the result to Python,
  which then waited forever (fixed: ``lakecdc.spark.session.LOCAL_RELATION_MAX_BYTES`` and
  ``lakecdc.spark.jvm_exit``). The capture's snapshot seemed to take 307 s: this harness' counting
  consumer saw the new topics only at librdkafka's 5-minute metadata refresh (fixed: 16 s).
- 2026-11-29 13:20-13:27 UTC, idle (load 2.3 at the end), after those fixes:

  | format | lakecdc | recipe | ratio (speed) | CPU s lakecdc / recipe |
  | --- | --- | --- | --- | --- |
  | Iceberg | 84.5 s, 7.1k events/s | 42.2 s, 14.2k/s | 0.50x | 118.2 / 44.8 |
  | Delta | 75.3 s, 8.0k events/s | 19.4 s, 30.9k/s | 0.26x | 95.2 / 9.8 |

  lakecdc's Python reader ends a batch 1 s after its first record (``batch.max.wait.ms``), so its
  batches held 71-100k records, most of one table only; the recipe's Delta drain never starts a JVM,
  lakecdc's Delta drain (delta-rs) still passes every batch through Spark and back.
- Profile of that Delta drain's driver (py-spy): building the reader's Arrow batch row by row 22% of
  its samples, positions compared as lists of Python ints 7%, decoding 32%, waiting for Spark's
  bronze identity results 26%. Both first costs removed (``reader.binary_array``, ``ordering.seq_bounds``);
  2026-11-29 13:55-14:05 UTC, idle (load 1.5 at the end):

  | format | lakecdc | recipe | ratio (speed) | CPU s lakecdc / recipe |
  | --- | --- | --- | --- | --- |
  | Iceberg | 71.1 s, 8.4k events/s | 42.0 s, 14.3k/s | 0.59x | 98.7 / 44.7 |
  | Delta | 60.4 s, 9.9k events/s | 19.2 s, 31.2k/s | 0.32x | 79.1 / 9.1 |

  lakecdc 16-20% faster than in the run before, with 16-17% less CPU; the recipe unchanged.
- Profile of a Delta drain (py-spy, 2026-11-29 19:28 UTC): the driver read a batch (confluent-kafka
  into Arrow, ~16% of its samples), decoded it (~18%), then waited on the apply (Spark's bronze
  identity and the collect back ~34% over both apply threads, delta-rs): one after the other. Now an
  ``available-now`` drain reads and decodes the next batch on a thread while the current one is
  applied (``lakecdc.ingest.read_ahead``), and the delta-rs writer keeps a driver-decoded batch in
  Arrow for bronze, Spark returning only the row hash and the rows' Kafka positions
  (``lakecdc.lake.bronze_arrow``). Same machine, idle before each run (load 1.6-2.4 at the end),
  each the whole benchmark:

  | commit (time, UTC) | Iceberg lakecdc / recipe | ratio | Delta lakecdc / recipe | ratio | CPU s Delta lakecdc |
  | --- | --- | --- | --- | --- | --- |
  | fb75806, before (19:51-19:56) | 72.1 / 40.6 s | 0.56x | 58.8 / 19.3 s | 0.33x | 74.5 |
  | read-ahead (19:38-19:45) | 60.4 / 41.5 s | 0.69x | 46.1 / 19.2 s | 0.42x | 70.5 |
  | + Arrow bronze identity (20:01-20:04) | (unchanged: Iceberg bronze is Spark's) | | 38.1 / 19.4 s | 0.51x | 48.9 |

  A Delta batch of 60-90k events now applies in 1.2-1.9 s (4.5 s with 9,000 deletes), while reading
  and decoding the next takes 2.5-3.5 s: the driver's decoding, one Python thread, is the critical path.
- ``--reader spark`` (the executors fetch and decode, 2 Python workers on local[2]), Delta,
  2026-11-29 21:09 UTC: the third batch, grown behind the backlog to a budget of 400,000 records, ended the 1 GB
  driver JVM (``OutOfMemoryError``): delta-rs writes from the driver. Batches for delta-rs tables no
  longer grow unless ``batch.backlog.max.records`` is set (``lakecdc.ingest.job.backlog_records``);
  then (21:11-21:14 UTC) 86.2 s against the recipe's 19.4 s (0.23x), CPU 145.6 s: on this machine
  the driver's own decoding with read-ahead (38.1 s) is the faster path for Delta.
- 2026-11-30 08:02-08:09 UTC, ``--formats iceberg``, idle before each run (load 2.7 / 1.8 at the end):
  8b826ef 74.8 s against the recipe's 51.9 s (0.69x, CPU 126.4 s); with the day's per-batch cuts (bronze
  identity in three DataFrame steps, cached column objects, no ledger join before the first delete,
  Iceberg tables committing side by side) 69.5 against 48.9 s (0.70x, CPU 117.7 s): the backlog's large
  batches did not get slower from numbering every row in one window.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TABLES = ("t1", "t2")
PREFIX = "bench"
COLUMNS = "id bigint PRIMARY KEY, name text NOT NULL, qty integer NOT NULL, score double precision"
TX_ROWS = 1000


# ---------------------------------------------------------------------------------------- the backlog

def load_source(conn: Any, rows: int) -> None:
    for table in TABLES:
        conn.execute(f"CREATE TABLE {table} ({COLUMNS})")
        conn.execute(f"ALTER TABLE {table} REPLICA IDENTITY DEFAULT")
        conn.execute(f"INSERT INTO {table} SELECT g, 'name-' || g, g %% 1000, g / 7.0 "
                     "FROM generate_series(1, %s::bigint) g", (rows,))


def change_source(conn: Any, rows: int, changes: int) -> int:
    """``changes`` changes per table in transactions of ``TX_ROWS`` rows; returns the data records
    they make per table (a delete is one record, its tombstone is not counted)."""
    updates, deletes = changes * 8 // 10, changes // 10
    inserts = changes - updates - deletes
    for table in TABLES:
        for start in range(1, updates + 1, TX_ROWS):  # rows 1..updates, each once
            end = min(start + TX_ROWS - 1, updates)
            conn.execute(f"UPDATE {table} SET qty = qty + 1, name = name || '+' WHERE id BETWEEN %s AND %s",
                         (start, end))
        for start in range(rows - deletes + 1, rows + 1, TX_ROWS):  # the last rows
            conn.execute(f"DELETE FROM {table} WHERE id BETWEEN %s AND %s", (start, min(start + TX_ROWS - 1, rows)))
        for start in range(rows + 1, rows + inserts + 1, TX_ROWS):
            end = min(start + TX_ROWS - 1, rows + inserts)
            conn.execute(f"INSERT INTO {table} SELECT g, 'new-' || g, 1, 0.5 "
                         "FROM generate_series(%s::bigint, %s::bigint) g", (start, end))
    return updates + deletes + inserts


def count_records(bootstrap: str, topics: list[str], expected: int, timeout: float) -> None:
    """Wait until the data topics hold ``expected`` non-tombstone records (capture is done)."""
    from confluent_kafka import Consumer

    from lakecdc.devstack.broker import kafka_client_defaults

    consumer = Consumer({**kafka_client_defaults("consumer"), "bootstrap.servers": bootstrap,
                         "group.id": f"bench-count-{os.getpid()}", "auto.offset.reset": "earliest",
                         # the capture creates the topics after this subscribes: see them within a second,
                         # not at librdkafka's default refresh (5 minutes)
                         "topic.metadata.refresh.interval.ms": 1000, "enable.auto.commit": False})
    consumer.subscribe(topics)
    seen, deadline = 0, time.monotonic() + timeout
    try:
        while seen < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"capture made {seen} of {expected} records in {timeout:.0f} s")
            seen += sum(1 for m in consumer.consume(10_000, 1.0) if not m.error() and m.value() is not None)
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------- timing

@dataclass
class Drain:
    seconds: float
    cpu: float


def timed(command: list[str], log: Path) -> Drain:
    """Run ``command`` to its end; wall seconds and CPU seconds of its whole process tree."""
    import psutil

    cpu: dict[int, float] = {}
    started = time.monotonic()
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    root = psutil.Process(process.pid)
    done = threading.Event()

    def sample() -> None:  # the JVM is not always waited for, so its rusage would be lost
        while not done.is_set():
            try:
                for p in [root, *root.children(recursive=True)]:
                    with p.oneshot():
                        times = p.cpu_times()
                        cpu[p.pid] = max(cpu.get(p.pid, 0.0), times.user + times.system)
            except psutil.Error:
                pass
            done.wait(0.25)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = process.wait()
    seconds = time.monotonic() - started
    done.set()
    sampler.join()
    if code != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... exited with {code} (see {log})")
    return Drain(seconds, sum(cpu.values()))


# ---------------------------------------------------------------------------------------- the recipe

def recipe(config_path: str, table_format: str, warehouse: str) -> None:
    """The do-it-yourself drain (see the module docstring), run as its own process."""
    import orjson
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError

    from lakecdc.config.ingest import load_ingest_config
    from lakecdc.devstack.broker import kafka_client_defaults
    from lakecdc.spark.session import ingest_session

    cfg = load_ingest_config(config_path)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32()), ("score", pa.float64()),
                        ("_op", pa.string())])
    spark = ingest_session(cfg) if table_format == "iceberg" else None
    if spark is not None:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.recipe")
        for table in TABLES:
            spark.sql(f"CREATE TABLE IF NOT EXISTS lake.recipe.{table} "
                      "(id bigint, name string, qty int, score double) USING iceberg")
    consumer = Consumer({**kafka_client_defaults("consumer"), "bootstrap.servers": cfg.bootstrap_servers,
                         "group.id": f"recipe-{os.getpid()}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    topics = [f"{PREFIX}.public.{t}" for t in TABLES]
    consumer.subscribe(topics)
    at_end: set[str] = set()
    while len(at_end) < len(topics):
        newest: dict[str, dict[int, tuple[tuple[int, int], dict[str, Any], str]]] = {t: {} for t in TABLES}
        got = 0
        while got < cfg.max_batch_records and len(at_end) < len(topics):
            for msg in consumer.consume(min(10_000, cfg.max_batch_records - got), 1.0):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.topic())
                    continue
                got += 1
                if msg.value() is None:
                    continue  # a delete's tombstone
                payload = orjson.loads(msg.value())["payload"]
                row = payload["after"] or payload["before"]
                rank = (payload["source"]["lsn"], msg.offset())
                kept = newest[msg.topic().rsplit(".", 1)[1]]
                if row["id"] not in kept or kept[row["id"]][0] < rank:
                    kept[row["id"]] = (rank, row, payload["op"])
        for table, kept in newest.items():
            if kept:
                batch = pa.Table.from_pylist([{**row, "_op": op} for _, row, op in kept.values()], schema=schema)
                merge(spark, table_format, warehouse, table, batch)
    consumer.close()
    if spark is not None:
        spark.stop()


def merge(spark: Any, table_format: str, warehouse: str, table: str, batch: Any) -> None:
    if spark is not None:
        spark.createDataFrame(batch.to_pandas()).createOrReplaceTempView("batch")
        spark.sql(f"""MERGE INTO lake.recipe.{table} t USING batch s ON t.id = s.id
                      WHEN MATCHED AND s._op = 'd' THEN DELETE
                      WHEN MATCHED THEN UPDATE SET t.name = s.name, t.qty = s.qty, t.score = s.score
                      WHEN NOT MATCHED AND s._op <> 'd' THEN INSERT (id, name, qty, score)
                        VALUES (s.id, s.name, s.qty, s.score)""")
        return
    from deltalake import DeltaTable, write_deltalake

    path = str(Path(warehouse, "recipe", table))
    if not DeltaTable.is_deltatable(path):
        write_deltalake(path, batch.schema.empty_table().drop_columns(["_op"]))
    columns = {c: f"s.{c}" for c in ("id", "name", "qty", "score")}
    (DeltaTable(path).merge(batch, predicate="t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete(predicate="s._op = 'd'").when_matched_update(updates=columns)
     .when_not_matched_insert(updates=columns, predicate="s._op <> 'd'").execute())


# ---------------------------------------------------------------------------------------- checking

def source_rows(conn: Any, table: str) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in conn.execute(f"SELECT id, name, qty, score FROM {table}").fetchall()}


def lake_rows(spark: Any, table_format: str, warehouse: Path, name: str) -> set[tuple[Any, ...]]:
    """``name``: ``schema.table``; Iceberg in catalog ``lake``, Delta under ``warehouse``."""
    if table_format == "iceberg":
        rows = spark.sql(f"SELECT id, name, qty, score FROM lake.{name}").collect()
        return {tuple(r) for r in rows}
    from deltalake import DeltaTable

    data = DeltaTable(str(warehouse.joinpath(*name.split(".")))).to_pyarrow_table().to_pylist()
    return {(r["id"], r["name"], r["qty"], r["score"]) for r in data if not r.get("_is_deleted")}


# ---------------------------------------------------------------------------------------- the run

def ingest_config(directory: Path, table_format: str, bootstrap: str, reader: str = "auto") -> Path:
    path = directory / f"ingest-{table_format}.yaml"
    warehouse = directory / f"warehouse-{table_format}"
    path.write_text(
        f"name: bench-{table_format}\ntopic.prefix: {PREFIX}\nkafka.bootstrap.servers: {bootstrap}\n"
        f"warehouse: {warehouse}\nprogress.path: {directory / f'state-{table_format}'}\ncatalog: lake\n"
        f"table.format: {table_format}\ntable.name.format.bronze: bronze.{{table}}\n"
        f"table.name.format.silver: silver.{{table}}\nreader: {reader}\n")
    return path


def run(args: argparse.Namespace, directory: Path) -> None:
    import psycopg

    from lakecdc.demo.runner import capture_config
    from lakecdc.devstack.broker import Broker
    from lakecdc.devstack.postgres import Postgres
    from lakecdc.spark.output import spark_session_logged

    formats = args.formats.split(",")
    python = sys.executable
    (directory / "stack").mkdir(parents=True, exist_ok=True)
    with Broker(base_dir=directory / "stack") as broker, Postgres(base_dir=directory / "stack") as pg:
        pg.create_database("bench")
        with psycopg.connect(pg.dsn_for("bench"), autocommit=True) as conn:
            print(f"loading 2 x {args.rows:,} rows into PostgreSQL ...", flush=True)
            load_source(conn, args.rows)
            capture_file = capture_config(directory, pg, broker)  # the demo's, on these tables
            props = dict(line.split("=", 1) for line in capture_file.read_text().splitlines() if "=" in line)
            props.update({"database.dbname": "bench", "topic.prefix": PREFIX, "slot.name": "bench_slot",
                          "publication.name": "bench_pub",
                          "table.include.list": ",".join(f"public.{t}" for t in TABLES)})
            capture_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            capture_log = open(directory / "capture.log", "ab")
            capture = subprocess.Popen([python, "-m", "lakecdc.cli.main", "capture", "--config", str(capture_file),
                                        "--sink", f"kafka:{broker.bootstrap_servers}"], stdout=capture_log,
                                       stderr=subprocess.STDOUT, cwd=ROOT)
            try:
                topics = [f"{PREFIX}.public.{t}" for t in TABLES]
                started = time.monotonic()
                count_records(broker.bootstrap_servers, topics, len(TABLES) * args.rows, 1800)
                print(f"snapshot captured in {time.monotonic() - started:.0f} s; making "
                      f"2 x {args.changes:,} changes ...", flush=True)
                per_table = change_source(conn, args.rows, args.changes)
                count_records(broker.bootstrap_servers, topics, len(TABLES) * (args.rows + per_table), 1800)
            finally:
                capture.terminate()
                capture.wait(60)
            events = len(TABLES) * (args.rows + per_table)
            changes = len(TABLES) * per_table
            expected = {t: source_rows(conn, t) for t in TABLES}
            print(f"backlog in Kafka: {events:,} data records ({changes:,} changes after the snapshot)", flush=True)

            results: dict[str, dict[str, Drain]] = {}
            for table_format in formats:
                config = ingest_config(directory, table_format, broker.bootstrap_servers, args.reader)
                warehouse = directory / f"warehouse-{table_format}"
                log = directory / f"drain-{table_format}.log"
                results[table_format] = {
                    "lakecdc": timed([python, "-m", "lakecdc.cli.main", "ingest", "--config", str(config),
                                      "--trigger", "available-now"], log),
                    "recipe": timed([python, __file__, "--recipe", table_format, "--config", str(config),
                                     "--warehouse", str(warehouse)], log)}
                spark = (spark_session_logged(directory / "spark.log", warehouse, app_name="bench-check")
                         if table_format == "iceberg" else None)
                for table in TABLES:
                    for schema in ("silver", "recipe"):
                        got = lake_rows(spark, table_format, warehouse, f"{schema}.{table}")
                        if got != expected[table]:
                            raise AssertionError(f"{table_format} {schema}.{table} differs from the source: "
                                                 f"{len(expected[table] - got)} rows missing, "
                                                 f"{len(got - expected[table])} extra")
                if spark is not None:
                    spark.stop()
    report(results, events, changes, args)


def report(results: dict[str, dict[str, Drain]], events: int, changes: int, args: argparse.Namespace) -> None:
    print()
    print(f"machine load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"backlog: 2 tables x ({args.rows:,} snapshot rows + {args.changes:,} changes) = {events:,} events; "
          "both silvers equal the source")
    print(f"{'format':<9}{'drain':<10}{'seconds':>9}{'events/s':>11}{'CPU s':>9}{'events/CPU s':>14}")
    for table_format, drains in results.items():
        for name, d in drains.items():
            print(f"{table_format:<9}{name:<10}{d.seconds:>9.1f}{events / d.seconds:>11,.0f}{d.cpu:>9.1f}"
                  f"{events / d.cpu:>14,.0f}")
        ours, theirs = drains["lakecdc"], drains["recipe"]
        print(f"{table_format:<9}{'ratio':<10}{theirs.seconds / ours.seconds:>9.2f}x (lakecdc / recipe speed; "
              f"CPU {theirs.cpu / ours.cpu:.2f}x; target >= 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="snapshot rows per table (default 200000)")
    parser.add_argument("--changes", type=int, default=100_000, help="changes per table (default 100000)")
    parser.add_argument("--formats", default="iceberg,delta", help="iceberg,delta (default both)")
    parser.add_argument("--reader", default="auto", help="lakecdc's reader: auto (default; python on this local "
                        "master), python, spark (the executors fetch and decode)")
    parser.add_argument("--dir", default=None, help="working directory, kept afterwards (default: temporary)")
    parser.add_argument("--recipe", default=None, help=argparse.SUPPRESS)  # the recipe's own process
    parser.add_argument("--config", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.recipe:
        recipe(args.config, args.recipe, args.warehouse)
        return
    directory = Path(args.dir or tempfile.mkdtemp(prefix="lakecdc-bench-ingest-"))
    directory.mkdir(parents=True, exist_ok=True)
    try:
        run(args, directory)
    finally:
        if args.dir is None:
            from lakecdc.spark.output import python_logs_off

            python_logs_off()  # its log file goes with the directory
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
