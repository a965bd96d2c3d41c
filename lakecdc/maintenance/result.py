"""``MaintenanceResult``: what maintenance found and did on one table, and its one-line summary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


@dataclass
class MaintenanceResult:
    """One table's files before and after (``*_after`` equal ``*_before`` on a dry run)."""

    table: str
    format: str
    data_files_before: int = 0
    data_files_after: int = 0
    delete_files_before: int = 0  # Iceberg position/equality delete files; Delta has none
    delete_files_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    #: Iceberg: snapshots expired; Delta: versions whose log files were cleaned up
    history_removed: int = 0
    #: files deleted from storage (Iceberg expire/orphans, Delta vacuum)
    files_deleted: int = 0
    #: delete-ledger removals that could no longer matter, deleted (``lakecdc.maintenance.ledger``)
    removals_pruned: int = 0
    dry_run: bool = False
    seconds: float = 0.0
    actions: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """``silver.customers (iceberg): 14 data files + 9 delete files (2.1 MB) -> 2 data files
        (1.9 MB); expired 11 snapshots, deleted 20 files``."""
        before = f"{self.data_files_before} data files"
        if self.format == "iceberg":
            before += f" + {self.delete_files_before} delete files"
        before += f" ({_size(self.bytes_before)})"
        if self.dry_run:
            would = "; ".join(self.actions) or "nothing to do"
            return f"{self.table} ({self.format}): {before}; would: {would}"
        after = f"{self.data_files_after} data files"
        if self.format == "iceberg" and self.delete_files_after:
            after += f" + {self.delete_files_after} delete files"
        after += f" ({_size(self.bytes_after)})"
        history = "snapshots expired" if self.format == "iceberg" else "log versions cleaned up"
        pruned = f", {self.removals_pruned} obsolete delete-ledger rows removed" if self.removals_pruned else ""
        return (f"{self.table} ({self.format}): {before} -> {after}; {self.history_removed} {history}, "
                f"{self.files_deleted} files deleted{pruned} ({self.seconds:.1f}s)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
