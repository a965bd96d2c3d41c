"""Iceberg maintenance through Spark's Iceberg procedures (``CALL <catalog>.system.*``).

Per table, in this order:

1. ``rewrite_data_files``: data files with at least one position delete (``delete-file-threshold``
   1: every silver MERGE leaves some) and groups of small files are rewritten; the delete files
   left pointing at nothing go (``remove-dangling-deletes``, and ``_remove_dangling_deletes``
   where Iceberg leaves them). Tables with a sort order (silver and ledger: ``WRITE LOCALLY
   ORDERED BY`` the key) are rewritten sorted, so the MERGE's key ranges keep pruning files.
2. (``rewrite_position_delete_files`` is not called: Iceberg 1.10 cannot read the position
   deletes of a table with a list column, and every lakecdc table has ``_seq``.)
3. ``expire_snapshots`` older than the retention, keeping at least ``retain_last`` snapshots and
   always the newest one lakecdc committed: ``IcebergSparkWriter.commit_properties`` walks back to
   it past the rewrite snapshots, and a restart resumes from its progress.
4. ``remove_orphan_files`` (optional): files no snapshot references (a killed write's) whose
   modification time is older than the retention, which is at least a day (``MaintenanceOptions``:
   a younger file may belong to a commit in progress).

Rewrite snapshots are plain Iceberg commits (no ``lakecdc.*`` summary properties), so a replayed
batch is still recognised as committed and audits attribute them to the lakecdc commit before.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from lakecdc.audit.tables import LakeTable
from lakecdc.lake.layout import LEDGER_SUFFIX
from lakecdc.lake.merge_plan import SPARK
from lakecdc.maintenance.ledger import obsolete_removals
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.result import MaintenanceResult
from lakecdc.maintenance.tables import DEAD_LETTER_TABLE, lakecdc_tables
from lakecdc.writers.iceberg_spark import newest_lakecdc_snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

REWRITE_OPTIONS = {
    "delete-file-threshold": "1",   # any position delete: rewrite the data file
    "min-input-files": "2",         # two small files are worth one
    "remove-dangling-deletes": "true",
    # Rewritten files take a new sequence number, above every delete file's: those deletes then
    # apply to no live file and go as dangling in the same commit. (With the starting sequence
    # number, the default, deletes committed by the snapshot the rewrite starts from stay attached
    # to the new files.) A MERGE committing deletes of the rewritten files meanwhile makes the
    # rewrite fail validation ("found new position delete for replaced data file"), never lose
    # them: the table's maintenance is redone (``lakecdc.maintenance.run.maintain_one``).
    "use-starting-sequence-number": "false",
    "partial-progress.enabled": "false",  # one commit per table
}


def _map(options: dict[str, str]) -> str:
    return "map(" + ", ".join(f"'{k}', '{v}'" for k, v in options.items()) + ")"


class IcebergMaintainer:
    """Maintains the Iceberg tables of one Spark catalog."""

    format = "iceberg"

    def __init__(self, spark: SparkSession, catalog: str = "lake", dead_letter_table: str = DEAD_LETTER_TABLE) -> None:
        self.spark = spark
        self.catalog = catalog
        self.dead_letter_table = dead_letter_table

    # -- names -------------------------------------------------------------------------------
    def qualified(self, name: str) -> str:
        """``silver.customers`` -> ```lake`.`silver`.`customers```; three-part names as given."""
        return LakeTable.iceberg(self.spark, name, self.catalog).qualified

    def _procedure_target(self, name: str) -> tuple[str, str]:
        """(catalog whose ``system`` procedures to call, the table within it as a SQL string
        literal: the procedures parse it as an identifier, so its parts stay quoted)."""
        catalog, *rest = LakeTable.iceberg(self.spark, name, self.catalog).parts
        return SPARK.quoted(catalog), SPARK.string_literal(".".join(SPARK.quoted(p) for p in rest))

    def tables(self) -> list[str]:
        """lakecdc's tables in the catalog (``lakecdc.maintenance.tables``), ``schema.table`` names."""
        names: list[str] = []
        for row in self.spark.sql(f"SHOW NAMESPACES IN {self.catalog}").collect():
            namespace = row[0]
            for table in self.spark.sql(f"SHOW TABLES IN {self.catalog}.{namespace}").collect():
                if not table["isTemporary"]:
                    names.append(f"{namespace}.{table['tableName']}")
        return lakecdc_tables(names, lambda n: self._lakecdc_distance(self._load(n)) is not None,
                              self.dead_letter_table)

    def exists(self, name: str) -> bool:
        return bool(self.spark.catalog.tableExists(self.qualified(name)))

    # -- table state -------------------------------------------------------------------------
    def _load(self, name: str) -> Any:  # py4j proxy of org.apache.iceberg.Table
        jvm: Any = self.spark._jvm  # the py4j gateway (this module runs on classic Spark, never Connect)
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.qualified(name))
        table.refresh()
        return table

    @staticmethod
    def _lakecdc_distance(table: Any) -> int | None:
        """How many snapshots back from the current one the newest lakecdc commit is (0: current)."""
        found = newest_lakecdc_snapshot(table)
        return found[0] if found else None

    @staticmethod
    def _snapshot_ids(table: Any) -> set[int]:
        return {int(s.snapshotId()) for s in table.snapshots()}

    def _files(self, name: str) -> tuple[int, int, int]:
        """(data files, delete files, bytes of both) of the current snapshot."""
        rows = self.spark.sql(f"SELECT content, count(*) AS n, coalesce(sum(file_size_in_bytes), 0) AS bytes "
                              f"FROM {self.qualified(name)}.files GROUP BY content").collect()
        data = sum(r["n"] for r in rows if r["content"] == 0)
        deletes = sum(r["n"] for r in rows if r["content"] != 0)
        return data, deletes, sum(r["bytes"] for r in rows)

    def _expirable(self, table: Any, cutoff: datetime, keep: int) -> int:
        """Snapshots ``expire_snapshots(older_than=cutoff, retain_last=keep)`` would remove."""
        kept: set[int] = set()
        snapshot = table.currentSnapshot()
        while snapshot is not None and len(kept) < keep:
            kept.add(int(snapshot.snapshotId()))
            parent = snapshot.parentId()
            snapshot = table.snapshot(parent) if parent is not None else None
        cutoff_ms = int(cutoff.timestamp() * 1000)
        return sum(1 for s in table.snapshots()
                   if int(s.snapshotId()) not in kept and int(s.timestampMillis()) < cutoff_ms)

    def _timestamp(self, moment: datetime) -> str:
        """A Spark SQL TIMESTAMP literal of ``moment`` in the session's time zone."""
        zone = self.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
        local = moment.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
        return f"TIMESTAMP '{local.isoformat(sep=' ', timespec='milliseconds')}'"

    def _remove_dangling_deletes(self, name: str) -> int:
        """Drop position-delete files that apply to no live data file; returns how many.

        A position delete applies to data files whose data sequence number is at most its own.
        After a rewrite with new sequence numbers, deletes older than every live data file are
        dangling. Iceberg drops them itself only at a later commit (its ``remove-dangling-deletes``
        skips unpartitioned tables, and the rewrite's own manifests still list the replaced files),
        and ``rewrite_position_delete_files`` cannot read a table with a list column (lakecdc's
        ``_seq``: "Invalid partition field parent: list<long>", Iceberg 1.10). The check here is
        table-wide, so it never drops a delete some partition still needs.
        """
        live = self.spark.sql(f"SELECT sequence_number AS seq, data_file.content AS content, "
                              f"data_file.file_path AS path FROM {self.qualified(name)}.entries "
                              f"WHERE status < 2").collect()
        data_seqs = [r["seq"] for r in live if r["content"] == 0]
        floor = min(data_seqs) if data_seqs else None
        dangling = {r["path"] for r in live if r["content"] == 1 and (floor is None or r["seq"] < floor)}
        if not dangling:
            return 0
        jvm: Any = self.spark._jvm  # the py4j gateway (this module runs on classic Spark, never Connect)
        table = self._load(name)
        rewrite = table.newRewrite()
        found = 0
        for manifest in table.currentSnapshot().deleteManifests(table.io()):
            reader = jvm.org.apache.iceberg.ManifestFiles.readDeleteManifest(manifest, table.io(), table.specs())
            iterator = reader.iterator()
            try:
                while iterator.hasNext():
                    delete_file = iterator.next()
                    if str(delete_file.location()) in dangling:
                        rewrite.deleteFile(delete_file.copy())
                        found += 1
            finally:
                iterator.close()
                reader.close()
        if found:
            rewrite.commit()
        return found

    def _prune_ledger(self, name: str, options: MaintenanceOptions) -> int:
        """Delete (or, on a dry run, count) a delete ledger's removals that can no longer matter."""
        if not name.endswith(LEDGER_SUFFIX):
            return 0
        silver = name[: -len(LEDGER_SUFFIX)]
        found = newest_lakecdc_snapshot(self._load(silver)) if self.exists(silver) else None
        condition = obsolete_removals(SPARK, found[1] if found else None, options)
        if condition is None:
            return 0
        table = self.qualified(name)
        count = int(self.spark.sql(f"SELECT count(*) FROM {table} WHERE {condition}").collect()[0][0])
        if count and not options.dry_run:
            self.spark.sql(f"DELETE FROM {table} WHERE {condition}")
        return count

    # -- maintenance -------------------------------------------------------------------------
    def maintain(self, name: str, options: MaintenanceOptions) -> MaintenanceResult:
        started = time.monotonic()
        data, deletes, size = self._files(name)
        result = MaintenanceResult(name, self.format, data, data, deletes, deletes, size, size,
                                   dry_run=options.dry_run)
        catalog, ident = self._procedure_target(name)
        table = self._load(name)
        sorted_table = options.sort_by_key and bool(table.sortOrder().isSorted())
        cutoff = datetime.now(timezone.utc) - options.expire_older_than
        result.removals_pruned = self._prune_ledger(name, options)
        if options.dry_run:
            if result.removals_pruned:
                result.actions.append(f"remove {result.removals_pruned} obsolete delete-ledger rows")
            if deletes or data > 1:
                how = "sorted by key" if sorted_table else "bin-packed"
                result.actions.append(f"rewrite data files with deletes and small files ({how})")
            lakecdc = self._lakecdc_distance(table)
            keep = max(options.retain_last, (lakecdc or 0) + 1)
            result.actions.append(f"expire {self._expirable(table, cutoff, keep)} snapshots older than "
                                  f"{cutoff:%Y-%m-%d %H:%M} UTC")
            if options.remove_orphans:
                orphans = self.spark.sql(f"CALL {catalog}.system.remove_orphan_files(table => {ident}, "
                                         f"older_than => {self._timestamp(cutoff)}, dry_run => true)").count()
                result.actions.append(f"remove {orphans} orphan files")
            result.seconds = time.monotonic() - started
            return result

        strategy = ", strategy => 'sort'" if sorted_table else ""
        self.spark.sql(f"CALL {catalog}.system.rewrite_data_files(table => {ident}{strategy}, "
                       f"options => {_map(REWRITE_OPTIONS)})").collect()
        if self._files(name)[1]:
            self._remove_dangling_deletes(name)
        table = self._load(name)
        lakecdc = self._lakecdc_distance(table)
        keep = max(options.retain_last, (lakecdc or 0) + 1)  # never expire the newest lakecdc commit
        snapshots_before = self._snapshot_ids(table)
        expired = self.spark.sql(f"CALL {catalog}.system.expire_snapshots(table => {ident}, "
                                 f"older_than => {self._timestamp(cutoff)}, retain_last => {keep})").collect()[0]
        # by id: an ingest job may commit new snapshots meanwhile
        result.history_removed = len(snapshots_before - self._snapshot_ids(self._load(name)))
        result.files_deleted = sum(int(v) for k, v in expired.asDict().items() if k.startswith("deleted_")
                                   and k.endswith("files_count") and "manifest" not in k)
        if options.remove_orphans:
            orphans = self.spark.sql(f"CALL {catalog}.system.remove_orphan_files(table => {ident}, "
                                     f"older_than => {self._timestamp(cutoff)})").count()
            result.files_deleted += orphans
        result.data_files_after, result.delete_files_after, result.bytes_after = self._files(name)
        result.seconds = time.monotonic() - started
        return result

