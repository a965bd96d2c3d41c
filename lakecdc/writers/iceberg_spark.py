"""Iceberg through Spark SQL: bronze appends and silver ``MERGE INTO`` (merge-on-read).

Commit properties (``lakecdc.progress`` ...) land in the snapshot summary of the same commit as the
data: appends pass them as ``snapshot-property.*`` write options; SQL ``MERGE INTO`` has no options,
so they are handed to Iceberg's ``CommitMetadata`` thread-local (what
``CommitMetadata.withCommitProperties`` sets) on the JVM thread running the statement. PySpark's
pinned-thread mode (default since 3.2) runs a Python thread's calls on one JVM thread.

Tables are format v2, merge-on-read for MERGE/UPDATE/DELETE (position deletes: cheap commits;
``lakecdc maintain``, ``lakecdc.maintenance.iceberg``, folds them into the data files); bronze is
partitioned by ``days(_ingest_ts)``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from lakecdc.lake.progress import PROGRESS_KEY
from lakecdc.lake.schema_evolution import SchemaChange
from lakecdc.writers.spark_sql import SparkSqlWriter, column_ddl, quote

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

TABLE_PROPERTIES = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}
#: Bronze is partitioned by day of ingestion, so a batch is one or two partition values. Iceberg's
#: default for a partitioned table (``write.distribution-mode`` hash) shuffles every row of a value to
#: one task: one writer for the whole batch, however many executors. Fanout writers let each task
#: write its own rows, whatever their day, so the append runs where the rows already are.
BRONZE_PROPERTIES = {"write.distribution-mode": "none", "write.spark.fanout.enabled": "true"}
ROW_GROUP_BYTES = "write.parquet.row-group-size-bytes"
#: Row groups of key-sorted tables (silver, ledger): a few hundred thousand narrow rows each. Smaller
#: ones prune finer but slowed MERGEs that touch every group (2 MB: -25% at 1M uniform changes).
SORTED_ROW_GROUP_BYTES = 8 * 1024 * 1024
#: How many snapshots back to look for the newest one carrying lakecdc progress (compactions and
#: other maintenance commits in between carry none).
PROGRESS_LOOKBACK = 100


def newest_lakecdc_snapshot(table: Any) -> tuple[int, dict[str, str]] | None:
    """(how many snapshots back from the current one, its summary) of the newest snapshot lakecdc
    committed, walking the current ancestry (``table``: a py4j ``org.apache.iceberg.Table``)."""
    found = _newest_lakecdc(table)
    return (found[0], snapshot_summary(found[1])) if found else None


def snapshot_summary(snapshot: Any) -> dict[str, str]:
    """A py4j ``Snapshot``'s summary in one JVM call (Iceberg's ``SnapshotParser`` JSON, whose summary
    adds the operation): reading the Java map entry by entry took two calls per entry (12 -> 0.8 ms)."""
    from pyspark import SparkContext

    jvm: Any = SparkContext._jvm
    summary: dict[str, str] = json.loads(jvm.org.apache.iceberg.SnapshotParser.toJson(snapshot))["summary"]
    summary.pop("operation", None)
    return summary


def _newest_lakecdc(table: Any) -> tuple[int, Any] | None:
    """(distance, py4j ``Snapshot``) of the newest snapshot carrying lakecdc progress."""
    snapshot = table.currentSnapshot()
    for distance in range(PROGRESS_LOOKBACK):
        if snapshot is None:
            return None
        if snapshot.summary().containsKey(PROGRESS_KEY):
            return distance, snapshot
        parent = snapshot.parentId()
        snapshot = table.snapshot(parent) if parent is not None else None
    return None


class IcebergSparkWriter(SparkSqlWriter):
    format = "iceberg"

    def __init__(self, spark: SparkSession, catalog: str = "lake", dead_letter_table: str = "lakecdc.dead_letters",
                 **_: object) -> None:
        super().__init__(spark, catalog, dead_letter_table)

    def _create_table(self, name: str, schema: StructType, kind: str, sort_by: tuple[str, ...] = ()) -> None:
        full = self.resolve(name)
        self._ensure_namespace(name)
        partitioning = " PARTITIONED BY (days(_ingest_ts))" if kind == "bronze" else ""
        properties = {**TABLE_PROPERTIES, **(BRONZE_PROPERTIES if kind == "bronze" else {})}
        props = ", ".join(f"'{k}'='{v}'" for k, v in properties.items())
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {full} ({column_ddl(schema)}) USING iceberg{partitioning} "
                       f"TBLPROPERTIES ({props})")
        if sort_by:
            # Smaller row groups: within a key-sorted file each covers a narrow key range, which
            # Iceberg's reader skips when a MERGE's key ranges miss it (128 MB groups would hold
            # a whole 1M-row table). Locally: each write sorts its own rows (no range shuffle), so the files a
            # MERGE adds cover narrow key ranges and its key ranges prune files and row groups.
            self.spark.sql(f"ALTER TABLE {full} SET TBLPROPERTIES ('{ROW_GROUP_BYTES}'='{SORTED_ROW_GROUP_BYTES}')")
            self.spark.sql(f"ALTER TABLE {full} WRITE LOCALLY ORDERED BY {', '.join(quote(k) for k in sort_by)}")
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

    def _iceberg_table(self, name: str) -> Any:  # a py4j proxy of org.apache.iceberg.Table
        jvm: Any = self.spark._jvm  # None only on Spark Connect, which has no JVM
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.resolve(name))
        table.refresh()
        return table

    def commit_properties(self, name: str) -> dict[str, str]:
        if not self.spark.catalog.tableExists(self.resolve(name)):
            return {}
        found = newest_lakecdc_snapshot(self._iceberg_table(name))
        return found[1] if found else {}

    def _last_commit(self, name: str) -> tuple[int | None, dict[str, int]]:
        # The newest lakecdc snapshot, not the current one: a compaction may have committed since.
        found = _newest_lakecdc(self._iceberg_table(name))
        if found is None:
            return None, {}
        snapshot = found[1]
        summary = snapshot_summary(snapshot)
        added = int(summary.get("added-records", 0))
        # merge-on-read: an update adds one record and one position delete, a delete one position delete
        return int(snapshot.snapshotId()), {
            "appended": added, "written": added,
            "removed": int(summary.get("added-position-deletes", 0)) + int(summary.get("deleted-records", 0)),
        }

    def _append_options(self, props: dict[str, str], table: str, batch_id: int) -> dict[str, str]:
        return {f"snapshot-property.{k}": v for k, v in props.items()}

    @contextmanager
    def _committing(self, props: dict[str, str], table: str, batch_id: int | None) -> Iterator[None]:
        jvm: Any = self.spark._jvm  # None only on Spark Connect, which has no JVM
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
