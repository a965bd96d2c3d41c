"""``run_demo``: the whole pipeline on the local stack, from a PostgreSQL workload to silver tables.

Steps (each printed as it happens):

1. start a Kafka-protocol broker (tansu) and an embedded PostgreSQL with logical replication;
2. create the inventory schema and seed it (``inventory``);
3. start capture (``conf/demo-capture.properties``, its own process) and ingest (``conf/demo-ingest.yaml``: Iceberg
   for customers/products, Delta for orders/order_lines) side by side;
4. once the snapshot is in silver, run the workload: transactions over several tables, updates, deletes, a
   primary-key change, an added column, a truncate;
5. wait until capture is idle and every silver table equals its source table;
6. print per table: source rows, silver rows, equal or not; changes/s; source-to-silver latency
   p50/p99; then a time-travel query of ``silver.customers`` at its first version;
7. stop everything; the tables stay under ``<directory>/warehouse``.

Spark's and Java's own log lines go to ``<directory>/spark.log`` (named at step 3 and at the end),
capture's to ``<directory>/capture.log``: the demo's output is its own sentences only.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecdc.config.base import load_properties
from lakecdc.config.ingest import IngestConfig
from lakecdc.demo.compare import TableComparison, compare_rows, source_rows
from lakecdc.demo.inventory import TABLES, InventoryWorkload

log = logging.getLogger(__name__)
CONF = Path(__file__).resolve().parents[2] / "conf"
DBNAME = "inventory"


@dataclass
class DemoResult:
    comparisons: list[TableComparison] = field(default_factory=list)
    changes: int = 0  # changes applied to the tables while the workload ran and until caught up
    seconds: float = 0.0
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    time_travel: dict[str, Any] = field(default_factory=dict)
    warehouse: Path | None = None
    spark_log: Path | None = None  # Spark's and Java's own output

    @property
    def all_equal(self) -> bool:
        return bool(self.comparisons) and all(c.equal for c in self.comparisons)


class _Background:
    """A function in a thread whose error is re-raised by ``join``."""

    def __init__(self, name: str, target: Any, *args: Any, **kwargs: Any) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result = target(*args, **kwargs)
            except BaseException as exc:  # surfaced by join()
                self.error = exc
        self.thread = threading.Thread(target=run, name=name, daemon=True)
        self.thread.start()

    def join(self, timeout: float) -> Any:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"{self.thread.name} did not finish within {timeout:.0f} s")
        if self.error is not None:
            raise self.error
        return self.result


def run_demo(directory: Path, seconds: float = 20.0, say: Any = print, catch_up_timeout: float = 600.0) -> DemoResult:
    """Run the demo under ``directory`` (see the module docstring); returns what it found."""
    import psycopg

    from lakecdc.devstack.broker import Broker
    from lakecdc.devstack.postgres import Postgres
    from lakecdc.ingest.job import run_ingest
    from lakecdc.spark.output import spark_session_logged

    directory = directory.resolve()
    warehouse = directory / "warehouse"
    spark_log = directory / "spark.log"
    result = DemoResult(warehouse=warehouse, spark_log=spark_log)
    (directory / "stack").mkdir(parents=True, exist_ok=True)
    say(f"1. starting the broker and PostgreSQL under {directory / 'stack'}")
    with Broker(base_dir=directory / "stack") as broker, Postgres(base_dir=directory / "stack") as pg:
        pg.create_database(DBNAME)
        with psycopg.connect(pg.dsn_for(DBNAME), autocommit=True) as conn:
            say("2. creating the inventory schema (customers, products, orders, order_lines) and seed rows")
            workload = InventoryWorkload(conn)
            workload.create()
            workload.seed()
            capture_file = capture_config(directory, pg, broker)
            ingest_config = demo_ingest_config(directory, warehouse, broker)
            say(f"3. starting capture and ingest (Spark starts in a few seconds; its log: {result.spark_log})")
            spark = spark_session_logged(spark_log, warehouse, app_name="lakecdc-demo")
            stop_ingest = threading.Event()
            latencies: list[pa.Array] = []

            def on_batch(report: Any) -> None:
                latencies.extend(report.latency_ms)
            ingest = _Background("ingest", run_ingest, ingest_config, "continuous", spark=spark, stop=stop_ingest,
                                 on_batch=on_batch)
            capture = _start_capture(capture_file, broker.bootstrap_servers, directory / "capture.log")
            started = time.monotonic()
            try:
                say("   waiting for the initial snapshot to reach silver (time travel goes back to it below)")
                _wait_until_equal(conn, spark, ingest_config, ingest, capture, catch_up_timeout)
                started = time.monotonic()
                say(f"4. running the workload for {seconds:.0f} s")
                workload.run(seconds, on_step=lambda step: say(f"   - {step}"))
                say(f"   {workload.changes} source changes made")
                say("5. waiting until every silver table equals its source table")
                result.comparisons = _wait_until_equal(conn, spark, ingest_config, ingest, capture,
                                                       catch_up_timeout)
                result.seconds = time.monotonic() - started
            finally:
                _stop_capture(capture)
                stop_ingest.set()
            ingest.join(120)
            # the workload's, not the snapshot's: a latency per streamed change (snapshot reads have none);
            # batch times would count a snapshot batch reported just after silver was seen equal
            result.changes = sum(len(a) for a in latencies)
            _latency(result, latencies)
            result.time_travel = _time_travel(spark, ingest_config)
            spark.stop()
    say("6. stopped the broker and PostgreSQL; tables are under " + str(warehouse))
    return result


def _start_capture(config: Path, bootstrap: str, log_path: Path) -> subprocess.Popen[bytes]:
    """``lakecdc capture`` as its own process: stopped with SIGTERM, it commits and exits."""
    with open(log_path, "ab") as log_file:
        return subprocess.Popen([sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(config),
                                 "--sink", f"kafka:{bootstrap}"], stdout=log_file, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop_capture(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    if process.returncode not in (0, -signal.SIGTERM):
        log.warning("capture exited with code %s (see capture.log)", process.returncode)


def capture_config(directory: Path, pg: Any, broker: Any) -> Path:
    """The demo's capture properties for this stack, written to ``directory`` (mode 0600)."""
    props = load_properties(CONF / "demo-capture.properties", environ={})
    props.update(pg.connection_properties(DBNAME))
    props["bootstrap.servers"] = broker.bootstrap_servers
    props["offset.storage.file.filename"] = str(directory / "capture.offsets.json")
    path = directory / "capture.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    path.chmod(0o600)  # holds the database password
    return path


def demo_ingest_config(directory: Path, warehouse: Path, broker: Any, trigger: str | None = None) -> IngestConfig:
    """The demo's ingest configuration for this stack (``trigger`` overrides the file's)."""
    props = load_properties(CONF / "demo-ingest.yaml", environ={})
    props.update({"kafka.bootstrap.servers": broker.bootstrap_servers, "warehouse": str(warehouse),
                  "progress.path": str(directory / "ingest-state")})
    if trigger is not None:
        props["trigger"] = trigger
    return IngestConfig.from_properties(props)


def _silver_rows(spark: Any, config: IngestConfig, table: str) -> list[dict[str, Any]] | None:
    from lakecdc.lake.naming import TableNamer

    target = TableNamer(config).target(f"{config.topic_prefix}.public.{table}")
    if target.format == "delta":
        from deltalake import DeltaTable

        path = Path(config.warehouse).joinpath(*target.silver_table.split("."))
        if not DeltaTable.is_deltatable(str(path)):
            return None
        return DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    name = f"{config.catalog}.{target.silver_table}"
    if not spark.catalog.tableExists(name):
        return None
    return [r.asDict(recursive=True) for r in spark.table(name).collect()]


def compare_all(conn: Any, spark: Any, config: IngestConfig) -> list[TableComparison]:
    comparisons = []
    for table in TABLES:
        columns, rows, zoned, json_columns = source_rows(conn, table)
        silver = _silver_rows(spark, config, table) or []
        comparisons.append(compare_rows(table, columns, rows, silver, zoned, json_columns))
    return comparisons


def _wait_until_equal(conn: Any, spark: Any, config: IngestConfig, ingest: _Background,
                      capture: subprocess.Popen[bytes], timeout: float) -> list[TableComparison]:
    deadline = time.monotonic() + timeout
    while True:
        comparisons = compare_all(conn, spark, config)
        if all(c.equal for c in comparisons) or time.monotonic() > deadline:
            return comparisons
        if not ingest.thread.is_alive():
            ingest.join(0)  # re-raises the ingest job's error
            return comparisons
        if capture.poll() is not None:
            raise RuntimeError(f"capture exited with code {capture.returncode}; see capture.log")
        time.sleep(3)


def _latency(result: DemoResult, latencies: list[pa.Array]) -> None:
    values = pa.chunked_array([a for a in latencies if len(a)], type=pa.int64()) if any(len(a) for a in latencies) \
        else None
    if values is None or len(values) == 0:
        return
    p50, p99 = pc.quantile(values, q=[0.5, 0.99]).to_pylist()
    result.latency_p50_ms, result.latency_p99_ms = p50, p99


def _time_travel(spark: Any, config: IngestConfig) -> dict[str, Any]:
    """``silver.customers`` now and as of its first snapshot (Iceberg VERSION AS OF)."""
    from lakecdc.lake.naming import TableNamer

    target = TableNamer(config).target(f"{config.topic_prefix}.public.customers")
    name = f"{config.catalog}.{target.silver_table}"
    snapshots = spark.sql(f"SELECT snapshot_id, committed_at FROM {name}.snapshots ORDER BY committed_at").collect()
    if not snapshots:
        return {}
    first = snapshots[0]
    query = f"SELECT count(*) AS n, sum(balance) AS total FROM {name} VERSION AS OF {first.snapshot_id}"
    then = spark.sql(query).collect()[0]
    now = spark.sql(f"SELECT count(*) AS n, sum(balance) AS total FROM {name}").collect()[0]
    return {"table": name, "query": query, "snapshots": len(snapshots), "first_committed_at": str(first.committed_at),
            "rows_then": then.n, "balance_then": then.total, "rows_now": now.n, "balance_now": now.total}
