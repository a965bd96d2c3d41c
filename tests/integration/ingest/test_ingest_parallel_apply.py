"""The tables of one micro-batch applied side by side (``apply.parallelism``): same tables as one
after another, and a table that fails leaves the others' commits and progress intact.

The batches are the real Debezium output for pg_setup.sql + pg_workload.sql, cut as in
``test_ingest_split_transactions`` (batch 1 touches customers, audit_full and nopk_events at once);
they go straight to the processor, so batch boundaries are exact. Real Spark, customers in Iceberg
(Spark SQL MERGE) and the other tables in Delta (delta-rs), so both writers run on apply threads.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from ingest_broker import unique_prefix
from ingest_tables import assert_final_state, delta_exists, delta_rows, table_rows
from test_ingest_split_transactions import BATCH_1, BATCH_2, BATCH_3, NOW, PREFIX, all_records

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job_state import JobState
from lakecdc.ingest.processor import BatchProcessor, BatchReport
from lakecdc.ingest.reader import KafkaMicroBatch
from lakecdc.writers.base import create_writer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("customers", "audit_full", "nopk_events")
CUSTOMERS = f"{PREFIX}.public.customers"
AUDIT = f"{PREFIX}.public.audit_full"


def config(label: str, warehouse: Path, progress: Path, parallelism: int) -> IngestConfig:
    return IngestConfig.from_properties({
        "name": label, "kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": PREFIX,
        "warehouse": str(warehouse), "table.format": "delta",
        "table.mapping": {f"{CUSTOMERS}.format": "iceberg"},
        "table.name.format.bronze": f"{label}_bronze.{{table}}",
        "table.name.format.silver": f"{label}_silver.{{table}}", "progress.path": str(progress),
        "apply.parallelism": str(parallelism)})


def processor(spark, cfg: IngestConfig, make_writer: Any = None) -> BatchProcessor:
    def real(fmt: str) -> Any:
        return create_writer(fmt, spark, catalog=cfg.catalog, warehouse=cfg.warehouse)
    return BatchProcessor(cfg, spark, JobState(), make_writer or real)


def run_batches(job: BatchProcessor, records: pa.Table) -> list[BatchReport]:
    batches = [(list(BATCH_1), False), (BATCH_2, False), (BATCH_3, True)]
    try:
        return [job.process(KafkaMicroBatch(records.take(rows), NOW, at_end_of_data=end)) for rows, end in batches]
    finally:
        job.close()


def read_table(spark, warehouse: Path, name: str) -> list[str]:
    """A table's rows in a canonical order (row order within a table is not part of the result)."""
    if name.split(".")[1].startswith("customers"):
        rows = table_rows(spark, name) if spark.catalog.tableExists(f"lake.{name}") else []
    else:
        rows = delta_rows(warehouse, name) if delta_exists(warehouse, name) else []
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def all_tables(spark, warehouse: Path, label: str) -> dict[str, list[str]]:
    names = [f"{label}_{layer}.{t}" for t in TABLES for layer in ("bronze", "silver")]
    names += [f"{label}_silver.{t}__deletes" for t in TABLES]
    return {n[len(label) + 1:]: read_table(spark, warehouse, n) for n in names}


def final_state(warehouse: Path, spark, label: str) -> None:
    def read(name: str) -> list[dict]:
        if name.split(".")[1] == "customers":
            return table_rows(spark, name)
        return delta_rows(warehouse, name)

    def exists(name: str) -> bool:
        if name.split(".")[1] == "customers":
            return spark.catalog.tableExists(f"lake.{name}")
        return delta_exists(warehouse, name)
    assert_final_state(read, exists, label)


class ThreadRecorder:
    """The real writer; notes which thread applied each table."""

    def __init__(self, inner: Any, threads: set[str]) -> None:
        self._inner, self._threads = inner, threads

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, batch: Any, batch_id: int) -> Any:
        self._threads.add(threading.current_thread().name)
        return self._inner.apply(batch, batch_id)


def test_parallel_apply_writes_the_same_tables_as_sequential(spark, tmp_path: Path) -> None:
    records = all_records()
    results = {}
    threads: dict[int, set[str]] = {1: set(), 4: set()}
    for parallelism in (1, 4):
        label = unique_prefix(f"par{parallelism}")
        warehouse, progress = tmp_path / f"lake{parallelism}", tmp_path / f"progress{parallelism}"
        cfg = config(label, warehouse, progress, parallelism)

        def recording(fmt: str, cfg: IngestConfig = cfg, seen: set[str] = threads[parallelism]) -> Any:
            return ThreadRecorder(create_writer(fmt, spark, catalog=cfg.catalog, warehouse=cfg.warehouse), seen)
        reports = run_batches(processor(spark, cfg, recording), records)
        final_state(warehouse, spark, label)
        state = json.loads((progress / "state.json").read_text())
        state.pop("updated_at")
        results[parallelism] = (
            [(r.batch_id, r.events, list(r.tables.items()), r.failed_tables, r.held_events, r.max_source_ts_ms)
             for r in reports],
            state, all_tables(spark, warehouse, label))
    assert threads[1] == {threading.current_thread().name}
    # several tables at once ran on the pool's threads (a batch with one table runs inline)
    assert len({t for t in threads[4] if t.startswith("lakecdc-apply")}) >= 2, threads[4]
    sequential, parallel = results[1], results[4]
    assert len(sequential[0][0][2]) == 3  # batch 1 applied three tables at once
    assert parallel[0] == sequential[0]  # reports, tables in topic order
    assert parallel[1] == sequential[1]  # job state: consistency point, control offsets
    assert parallel[2].keys() == sequential[2].keys()
    for name, rows in sequential[2].items():
        assert parallel[2][name] == rows, name
    assert sum(len(rows) for rows in parallel[2].values()) > 20


def test_an_incompatible_table_stops_alone_under_parallel_apply(spark, tmp_path: Path) -> None:
    records, warehouse, label = all_records(), tmp_path / "lake", unique_prefix("pfail")
    # audit_full's bronze already exists with `note` as int: the source sends a string.
    write_deltalake(str(warehouse / f"{label}_bronze" / "audit_full"),
                    pa.table({"id": pa.array([], pa.int32()), "note": pa.array([], pa.int32())}))
    reports = run_batches(processor(spark, config(label, warehouse, tmp_path / "progress", 4)), records)
    [failed] = reports[0].failed_tables.items()
    assert failed[0].endswith(".audit_full") and "note" in failed[1]
    assert sorted(t.rsplit(".", 1)[1] for t in reports[0].tables) == ["customers", "nopk_events"]
    assert not any(t.endswith(".audit_full") for r in reports for t in r.tables)
    customers = table_rows(spark, f"{label}_silver.customers")
    assert [(r["id"], r["name"]) for r in customers] == [(6, "Frank")]  # customers went on to the end
    assert sorted(r["msg"] for r in delta_rows(warehouse, f"{label}_bronze.nopk_events")) == [
        "in-tx", "snapshot-row"]
    assert not delta_exists(warehouse, f"{label}_silver.audit_full")


class FailingFor:
    """The real writer, except that applying one topic raises (a lost storage connection, say)."""

    def __init__(self, inner: Any, topic: str) -> None:
        self._inner, self._topic = inner, topic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, batch: Any, batch_id: int) -> Any:
        if batch.table.topic == self._topic:
            raise OSError(f"storage unreachable while writing {self._topic}")
        return self._inner.apply(batch, batch_id)


def test_an_error_in_one_table_keeps_the_others_and_commits_nothing_for_it(spark, tmp_path: Path) -> None:
    records, warehouse, label = all_records(), tmp_path / "lake", unique_prefix("perr")
    cfg = config(label, warehouse, tmp_path / "progress", 4)

    def failing(fmt: str) -> Any:
        return FailingFor(create_writer(fmt, spark, catalog=cfg.catalog, warehouse=cfg.warehouse), AUDIT)
    job = processor(spark, cfg, failing)
    with pytest.raises(OSError, match="storage unreachable"):
        job.process(KafkaMicroBatch(records.take(list(BATCH_1)), NOW, at_end_of_data=False))
    job.close()
    # The other tables of the batch are committed, and the processor knows it ...
    bronze = table_rows(spark, f"{label}_bronze.customers")
    assert sorted(r["_offset"] for r in bronze) == [0, 1, 2, 3, 4, 6, 7]  # 5 and 8 are tombstones
    assert job.start_offset(CUSTOMERS, 0) == 8
    assert delta_exists(warehouse, f"{label}_bronze.nopk_events")
    # ... the failed one has nothing, and the job state was not saved (as after a crash).
    assert not delta_exists(warehouse, f"{label}_bronze.audit_full")
    assert job.start_offset(AUDIT, 0) is None
    assert not (tmp_path / "progress" / "state.json").exists()

    # A restart resumes from the tables: audit_full is applied, nothing else twice.
    restarted = processor(spark, cfg)
    resume = {t: restarted.start_offset(t, 0) for t in set(records.column("topic").to_pylist())}
    assert resume[CUSTOMERS] == 8 and resume[AUDIT] is None
    keep = [i for i, (t, o) in enumerate(zip(records.column("topic").to_pylist(), records.column("offset").to_pylist()))
            if resume[t] is None or o > resume[t]]
    report = restarted.process(KafkaMicroBatch(records.take(keep), NOW, at_end_of_data=True))
    restarted.close()
    assert report.failed_tables == {} and report.held_events == 0
    final_state(warehouse, spark, label)



def test_parallel_commits_into_the_jdbc_catalog_on_sqlite(spark, tmp_path: Path) -> None:
    """Iceberg's JDBC catalog keeps every table's pointer in one SQLite file: the tables of a batch
    commit into it side by side, and the batches must go through whole."""
    from lakecdc.devstack.spark import spark_session

    jdbc_spark = spark_session(tmp_path / "jdbc-lake", catalog="jdbc")
    label = unique_prefix("pjdbc")
    cfg = config(label, tmp_path / "jdbc-lake", tmp_path / "progress", 4).model_copy(
        update={"table_format": "iceberg"})
    run_batches(processor(jdbc_spark, cfg), all_records())

    def read(name: str) -> list[dict]:
        return [r.asDict(recursive=True) for r in jdbc_spark.table(f"lake.{name}").collect()]
    assert_final_state(read, lambda name: jdbc_spark.catalog.tableExists(f"lake.{name}"), label)
