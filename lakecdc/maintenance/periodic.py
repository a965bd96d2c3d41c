"""Maintenance from inside the ingest job: every N applied micro-batches, the tables those batches
wrote are compacted (``maintenance.compact.every.batches``, default 0: never).

It runs in the job's own thread between micro-batches, after every table of the batch has
committed, so it never races an apply of the same table in this job. A commit conflicting with
another writer (a ``lakecdc maintain`` from cron, another job) is redone a few times
(``maintain_one``); a failure is logged and the tables are tried again next time: ingest goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from lakecdc.lake.batch import TableTarget
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.result import MaintenanceResult
from lakecdc.maintenance.run import Maintainer, maintain_one

log = logging.getLogger(__name__)


def target_tables(target: TableTarget) -> list[str]:
    """The tables one source table's batches write: bronze, and silver with its ledger (and its SCD2
    history, ``history: scd2``) if keyed."""
    if not target.has_key:
        return [target.bronze_table]
    return [target.bronze_table, target.silver_table, target.ledger_table,
            *([target.history_table] if target.history else [])]


class PeriodicMaintenance:
    """Counts applied batches; every ``every``-th one maintains the tables written since the last run."""

    def __init__(self, every: int, maintainer_for: Callable[[str], Maintainer | None],
                 options: MaintenanceOptions | None = None) -> None:
        self.every = every
        self._maintainer_for = maintainer_for  # table format -> its maintainer (None: not maintained)
        self.options = options or MaintenanceOptions()
        self._batches = 0
        self._pending: dict[str, str] = {}  # table -> format, in the order first written

    def after_batch(self, targets: Iterable[TableTarget]) -> list[MaintenanceResult]:
        """Call once per committed micro-batch with the tables it applied; returns what ran (often nothing)."""
        if self.every <= 0:
            return []
        written = list(targets)
        if not written:
            return []
        for target in written:
            for name in target_tables(target):
                self._pending.setdefault(name, target.format)
        self._batches += 1
        if self._batches % self.every:
            return []
        results: list[MaintenanceResult] = []
        for name, table_format in list(self._pending.items()):
            maintainer = self._maintainer_for(table_format)
            if maintainer is None or not maintainer.exists(name):
                self._pending.pop(name)
                continue
            try:
                result = maintain_one(maintainer, name, self.options)
            except Exception as error:  # noqa: BLE001 - best effort: ingest goes on, retried next time
                log.warning("maintenance of %s failed (tried again after the next %d batches): %s", name,
                            self.every, error)
                continue
            log.info("maintenance after batch %d: %s", self._batches, result.describe())
            results.append(result)
            self._pending.pop(name)
        return results
