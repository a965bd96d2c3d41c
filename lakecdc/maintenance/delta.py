"""Delta maintenance through delta-rs (``deltalake``), per table:

1. ``optimize``: key-sorted tables (silver, ledger) with two or more small files are Z-ordered by
   their key columns (one key column: sorted by it), which keeps the silver MERGE's key-range
   pruning effective; other tables (bronze, dead letters) are bin-packed (``optimize.compact``).
   The optimize commit carries no lakecdc metadata; ``DeltaRsWriter.commit_properties`` reads
   past it.
2. ``vacuum``: deletes files no version younger than the retention references (time travel to
   versions inside the retention keeps working). A retention under Delta's 7-day minimum is
   taken as the user's explicit choice (``enforce_retention_duration=False``). With
   ``remove_orphans`` it is a full vacuum: also files no version references at all (a killed
   write's), once their modification time is older than the retention (at least a day,
   ``MaintenanceOptions``: a younger one may belong to a commit in progress).
3. ``cleanup_metadata`` after a checkpoint: removes log files older than the table's
   ``delta.logRetentionDuration`` (default 30 days), unless that would remove the newest lakecdc
   commit, whose metadata a restart resumes from.
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from lakecdc.audit.tables import LakeTable
from lakecdc.errors import TerminalError
from lakecdc.lake.layout import LEDGER_SUFFIX
from lakecdc.lake.merge_plan import DATAFUSION
from lakecdc.maintenance.ledger import obsolete_removals
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.result import MaintenanceResult
from lakecdc.maintenance.tables import DEAD_LETTER_TABLE, lakecdc_tables, sort_keys
from lakecdc.writers.delta_rs import newest_lakecdc_commit

log = logging.getLogger(__name__)

#: delta-rs' default target file size, when the table sets none
DEFAULT_TARGET_FILE_BYTES = 100 * 1024 * 1024
#: files below this share of the target size count as small (as Iceberg's min-file-size-bytes)
SMALL_FILE_SHARE = 0.75
DEFAULT_LOG_RETENTION = timedelta(days=30)
_INTERVAL = re.compile(r"^\s*interval\s+(\d+)\s+(second|minute|hour|day|week)s?\s*$", re.IGNORECASE)


def log_retention(configuration: dict[str, str]) -> timedelta | None:
    """``delta.logRetentionDuration`` (``interval 30 days``); None when it cannot be read."""
    text = configuration.get("delta.logRetentionDuration")
    if text is None:
        return DEFAULT_LOG_RETENTION
    match = _INTERVAL.match(text)
    if not match:
        return None
    return timedelta(**{match.group(2).lower() + "s": int(match.group(1))})


class DeltaMaintainer:
    """Maintains the Delta tables under one warehouse (``<warehouse>/<schema>/<table>``)."""

    format = "delta"

    def __init__(self, warehouse: str | Path, storage_options: dict[str, str] | None = None,
                 dead_letter_table: str = DEAD_LETTER_TABLE) -> None:
        self.warehouse = str(warehouse)
        self.storage_options = storage_options
        self.dead_letter_table = dead_letter_table

    def uri(self, name: str) -> str:
        """``silver.customers`` -> ``<warehouse>/silver/customers`` (as the writer names it)."""
        return LakeTable.delta(self.warehouse, name, self.storage_options).uri

    def exists(self, name: str) -> bool:
        return bool(DeltaTable.is_deltatable(self.uri(name), storage_options=self.storage_options))

    def _open(self, name: str) -> DeltaTable:
        return DeltaTable(self.uri(name), storage_options=self.storage_options)

    def tables(self) -> list[str]:
        """lakecdc's Delta tables in a local warehouse: directories with a ``_delta_log``."""
        if "://" in self.warehouse:
            raise TerminalError(f"cannot list the Delta tables of {self.warehouse}: name them with --table")
        root = Path(self.warehouse)
        names = [".".join(log_dir.parent.relative_to(root).parts)
                 for depth in ("*/*", "*/*/*") for log_dir in root.glob(f"{depth}/_delta_log")]
        return lakecdc_tables(names, lambda n: newest_lakecdc_commit(self._open(n)) is not None,
                              self.dead_letter_table)

    def _columns(self, name: str) -> list[str] | None:
        if not self.exists(name):
            return None
        return [f.name for f in pa.schema(self._open(name).schema().to_arrow())]

    @staticmethod
    def _files(table: DeltaTable) -> list[int]:
        """Sizes of the current version's files."""
        actions = pa.table(table.get_add_actions(flatten=True))
        return [int(v) for v in actions["size_bytes"].to_pylist()] if actions.num_rows else []

    def maintain(self, name: str, options: MaintenanceOptions) -> MaintenanceResult:
        started = time.monotonic()
        pruned = self._prune_ledger(name, options)
        table = self._open(name)
        sizes = self._files(table)
        result = MaintenanceResult(name, self.format, len(sizes), len(sizes), bytes_before=sum(sizes),
                                   bytes_after=sum(sizes), removals_pruned=pruned, dry_run=options.dry_run)
        configuration = dict(table.metadata().configuration)
        target = int(configuration.get("delta.targetFileSize", DEFAULT_TARGET_FILE_BYTES))
        small = sum(1 for s in sizes if s < target * SMALL_FILE_SHARE)
        keys = sort_keys(name, self._columns) if options.sort_by_key else ()
        retention_hours = int(options.expire_older_than.total_seconds() // 3600)
        enforce = options.expire_older_than >= timedelta(days=7)
        cleanup_log = self._may_clean_log(table, configuration)

        if options.dry_run:
            if pruned:
                result.actions.append(f"remove {pruned} obsolete delete-ledger rows")
            if small > 1:
                how = f"Z-order by {', '.join(keys)}" if keys else "bin-pack"
                result.actions.append(f"{how} {small} small files")
            vacuumed = self._vacuumable(table, name, retention_hours, enforce, options.remove_orphans)
            orphans = " (orphans included)" if options.remove_orphans else ""
            result.actions.append(f"vacuum {len(vacuumed)} files unreferenced for {options.expire_older_than}{orphans}")
            if not cleanup_log:
                result.actions.append("keep the log (cleaning it would drop the newest lakecdc commit)")
            result.seconds = time.monotonic() - started
            return result

        if small > 1:
            if keys:
                table.optimize.z_order(list(keys))
            else:
                table.optimize.compact()
            table.update_incremental()
        if self._vacuumable(table, name, retention_hours, enforce, options.remove_orphans):
            result.files_deleted = len(table.vacuum(retention_hours, dry_run=False, enforce_retention_duration=enforce,
                                                    full=options.remove_orphans))
        if cleanup_log:
            oldest_before = self._oldest_version(table)
            table.create_checkpoint()
            table.cleanup_metadata()
            # the oldest version still readable, not how many: an ingest job may commit meanwhile
            result.history_removed = self._oldest_version(self._open(name)) - oldest_before
        else:
            log.warning("%s: log files kept: the newest lakecdc commit is older than the log retention, and "
                        "a restart resumes from it", name)
        after = self._files(self._open(name))
        result.data_files_after, result.bytes_after = len(after), sum(after)
        result.seconds = time.monotonic() - started
        return result

    def _prune_ledger(self, name: str, options: MaintenanceOptions) -> int:
        """Delete (or, on a dry run, count) a delete ledger's removals that can no longer matter."""
        if not name.endswith(LEDGER_SUFFIX):
            return 0
        silver = name[: -len(LEDGER_SUFFIX)]
        commit = newest_lakecdc_commit(self._open(silver)) if self.exists(silver) else None
        properties = {k: v for k, v in commit.items() if isinstance(v, str)} if commit else None
        condition = obsolete_removals(DATAFUSION, properties, options)
        if condition is None:
            return 0
        table = self._open(name)
        counted = QueryBuilder().register("ledger", table).execute(
            f"SELECT count(*) AS n FROM ledger WHERE {condition}").read_all()
        count = int(counted["n"][0].as_py())
        if count and not options.dry_run:  # counted first: a delete of nothing would still commit
            table.delete(condition)
        return count

    @staticmethod
    def _oldest_version(table: DeltaTable) -> int:
        return min(int(c["version"]) for c in table.history())

    def _vacuumable(self, table: DeltaTable, name: str, retention_hours: int, enforce: bool,
                    full: bool = False) -> list[str]:
        """Files a vacuum would delete that are still there (``full``: with the orphans, files no
        version references whose modification time is older than the retention).

        delta-rs lists every file removed before the retention, also those an earlier vacuum
        deleted already, and a vacuum commits twice (VACUUM START / END): skipping a vacuum with
        nothing to delete keeps repeated runs from pushing the newest lakecdc commit out of the
        history the writer reads back (``lakecdc.writers.delta_rs.HISTORY_LOOKBACK`` commits). Remote stores are
        not checked.
        """
        candidates = table.vacuum(retention_hours, dry_run=True, enforce_retention_duration=enforce, full=full)
        if "://" in self.warehouse:
            return list(candidates)
        root = Path(self.uri(name))
        return [f for f in candidates if (root / f).exists()]

    def _may_clean_log(self, table: DeltaTable, configuration: dict[str, str]) -> bool:
        """True when cleaning the log keeps the newest lakecdc commit (or the table has none)."""
        retention = log_retention(configuration)
        if retention is None:
            return False
        commit = newest_lakecdc_commit(table)
        if commit is None:
            return True
        committed = datetime.fromtimestamp(int(commit["timestamp"]) / 1000, tz=timezone.utc)
        return committed > datetime.now(timezone.utc) - retention
