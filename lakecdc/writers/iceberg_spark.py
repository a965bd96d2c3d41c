"""Iceberg through Spark SQL: bronze appends and silver ``MERGE INTO`` (merge-on-read).

Commit properties (``lakecdc.progress`` ...) land in the snapshot summary of the same commit as the
data: appends pass them as ``snapshot-property.*`` write options; SQL ``MERGE INTO`` has no options,
so they are handed to Iceberg's ``CommitMetadata`` thread-local (what
``CommitMetadata.withCommitProperties`` sets) on the JVM thread running the statement. PySpark's
pinned-thread mode (default since 3.2) runs a Python thread's calls on one JVM thread.

Table names: ``schema.table`` gets the writer's catalog prefixed; ``catalog.schema.table`` is used
as is. Tables are format v2, merge-on-read for MERGE/UPDATE/DELETE (position deletes: cheap
commits, compaction folds them later).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakecdc.errors import TerminalError
from lakecdc.ingest.batch import TableTarget
from lakecdc.ingest.bronze import bronze_columns, spark_new_rows
from lakecdc.ingest.merge_plan import MergePlan, render_spark_ledger_sql, render_spark_sql
from lakecdc.ingest.progress import PROGRESS_KEY
from lakecdc.ingest.schema_evolution import SchemaChange
from lakecdc.ingest.silver import BatchStats
from lakecdc.writers.base import LakeWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

TABLE_PROPERTIES = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}
#: How many snapshots back to look for the newest one carrying lakecdc progress (compactions and
#: other maintenance commits in between carry none).
PROGRESS_LOOKBACK = 100


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class IcebergSparkWriter(LakeWriter):
    format = "iceberg"

    def __init__(self, spark: SparkSession, catalog: str = "lake", dead_letter_table: str = "lakecdc.dead_letters",
                 **_: object) -> None:
        super().__init__(spark, dead_letter_table)
        self.catalog = catalog

    def resolve(self, name: str) -> str:
        parts = name.split(".")
        if len(parts) == 2:
            return f"{self.catalog}.{name}"
        if len(parts) == 3:
            return name
        raise TerminalError(f"table name {name!r} must be schema.table or catalog.schema.table")

    # -- storage primitives ------------------------------------------------------------------
    def _table_schema(self, name: str) -> StructType | None:
        full = self.resolve(name)
        if not self.spark.catalog.tableExists(full):
            return None
        return self.spark.table(full).schema

    def _create_table(self, name: str, schema: StructType, kind: str) -> None:
        full = self.resolve(name)
        namespace = full.rsplit(".", 1)[0]
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        partitioning = " PARTITIONED BY (days(_ingest_ts))" if kind == "bronze" else ""
        props = ", ".join(f"'{k}'='{v}'" for k, v in TABLE_PROPERTIES.items())
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {full} ({columns}) USING iceberg{partitioning} "
                       f"TBLPROPERTIES ({props})")
        log.info("created Iceberg %s table %s", kind, full)

    def _evolve(self, name: str, change: SchemaChange) -> None:
        full = self.resolve(name)
        if change.add:
            added = ", ".join(f"{quote(c.name)} {c.data_type.simpleString()}" for c in change.add)
            self.spark.sql(f"ALTER TABLE {full} ADD COLUMNS ({added})")
        for column, _, new_type in change.widen:
            self.spark.sql(f"ALTER TABLE {full} ALTER COLUMN {quote(column)} TYPE {new_type.simpleString()}")
        for column in change.make_nullable:
            self.spark.sql(f"ALTER TABLE {full} ALTER COLUMN {quote(column)} DROP NOT NULL")

    def _iceberg_table(self, name: str):  # noqa: ANN202 - a py4j proxy of org.apache.iceberg.Table
        jvm = self.spark._jvm  # type: ignore[attr-defined]
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.resolve(name))  # type: ignore[attr-defined]
        table.refresh()
        return table

    def commit_properties(self, name: str) -> dict[str, str]:
        if not self.spark.catalog.tableExists(self.resolve(name)):
            return {}
        table = self._iceberg_table(name)
        snapshot = table.currentSnapshot()
        for _ in range(PROGRESS_LOOKBACK):  # walk the current ancestry, newest first
            if snapshot is None:
                return {}
            summary = dict(snapshot.summary())
            if PROGRESS_KEY in summary:
                return summary
            parent = snapshot.parentId()
            snapshot = table.snapshot(parent) if parent is not None else None
        return {}

    def _current_snapshot(self, name: str) -> tuple[int | None, dict[str, str]]:
        snapshot = self._iceberg_table(name).currentSnapshot()
        if snapshot is None:
            return None, {}
        return int(snapshot.snapshotId()), dict(snapshot.summary())

    @contextmanager
    def _commit_properties(self, props: dict[str, str]) -> Iterator[None]:
        jvm = self.spark._jvm  # type: ignore[attr-defined]
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        holder = jvm.java.lang.Class.forName("org.apache.iceberg.spark.CommitMetadata", True, loader)
        field = holder.getDeclaredField("COMMIT_PROPERTIES")
        field.setAccessible(True)
        thread_local = field.get(None)
        java_map = jvm.java.util.HashMap()
        for key, value in props.items():
            java_map.put(key, value)
        thread_local.set(java_map)
        try:
            yield
        finally:
            thread_local.remove()

    def _append_bronze(self, target: TableTarget, rows: DataFrame, stats: BatchStats,
                       props: dict[str, str], batch_id: int) -> tuple[int, int | None]:
        full = self.resolve(target.bronze_table)
        meta = set(bronze_columns([]))
        row_names = [c for c in rows.columns if c not in meta]
        fresh = spark_new_rows(rows, row_names, self.spark.table(full), stats.min_source_ts_ms,
                               stats.max_source_ts_ms)
        writer = fresh.writeTo(full)
        for key, value in props.items():
            writer = writer.option(f"snapshot-property.{key}", value)
        writer.append()
        version, summary = self._current_snapshot(target.bronze_table)
        return int(summary.get("added-records", 0)), version

    def _upsert_ledger(self, target: TableTarget, rows: DataFrame) -> None:
        view = f"lakecdc_ledger_{abs(hash(target.ledger_table))}"
        rows.createOrReplaceTempView(view)
        try:
            self.spark.sql(render_spark_ledger_sql(target.key_columns, self.resolve(target.ledger_table), view))
        finally:
            self.spark.catalog.dropTempView(view)

    def _truncated_through(self, target: TableTarget) -> tuple[int, ...] | None:
        row = (self.spark.table(self.resolve(target.ledger_table)).filter(F.col("_op") == "t")
               .agg(F.max("_seq").alias("seq")).collect()[0])
        return tuple(row["seq"]) if row["seq"] is not None else None

    def _merge_silver(self, target: TableTarget, source: DataFrame, plan: MergePlan,
                      props: dict[str, str], batch_id: int) -> tuple[int, int, int | None]:
        ledger = (self.spark.table(self.resolve(target.ledger_table)).filter(F.col("_op") == "d")
                  .select(*target.key_columns, F.col("_seq").alias("_removed_seq")))
        guarded = source.join(ledger, on=list(target.key_columns), how="left")
        view = f"lakecdc_silver_{abs(hash(target.silver_table))}"
        guarded.createOrReplaceTempView(view)
        try:
            with self._commit_properties(props):
                self.spark.sql(render_spark_sql(plan, self.resolve(target.silver_table), view))
        finally:
            self.spark.catalog.dropTempView(view)
        version, summary = self._current_snapshot(target.silver_table)
        written = int(summary.get("added-records", 0))
        removed = int(summary.get("added-position-deletes", 0)) + int(summary.get("deleted-records", 0))
        return written, removed, version

    def _append_rows(self, name: str, rows: DataFrame) -> int:
        count = rows.count()
        rows.writeTo(self.resolve(name)).append()
        return count
