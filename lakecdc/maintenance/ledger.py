"""Pruning a delete ledger: the removals that can no longer change what silver holds.

A ledger row (key, ``_seq`` of its delete) stops an event older than the delete, delivered
later, from bringing the row back (``lakecdc.lake.merge_plan``). The ledger is append-only and
every silver MERGE reads the rows of its batch's keys, so rows that can no longer refuse
anything are worth removing:

1. always: deletes at or before the newest truncate silver has applied (``truncated_through`` in
   silver's newest lakecdc commit). Every event that old is refused by the truncate already.
2. on request (``MaintenanceOptions.ledger_retention``): deletes whose source time is older than
   the retention. The trade-off, which is why it is not the default: an event older than that
   delivered afterwards (a capture restarted from an old log position, a topic re-read from
   the start into the same tables) can then bring such a row back.

Truncate rows (null keys) stay: they are few.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping

from lakecdc.lake.layout import SEQ_LENGTH
from lakecdc.lake.merge_plan import Dialect, seq_literal, seq_newer
from lakecdc.lake.progress import CommitProgress
from lakecdc.maintenance.options import MaintenanceOptions


def obsolete_removals(dialect: Dialect, silver_properties: Mapping[str, str] | None,
                      options: MaintenanceOptions, now: datetime | None = None) -> str | None:
    """The SQL condition (in ``dialect``) of the ledger rows that can go, or None if none can."""
    progress = CommitProgress.from_properties(silver_properties)
    truncated = progress.truncated_through if progress else None
    conditions = []
    if truncated is not None:
        stored = [dialect.seq_item("", i) for i in range(SEQ_LENGTH)]
        conditions.append(f"NOT ({seq_newer(dialect, stored, seq_literal(truncated))})")
    if options.ledger_retention is not None:
        cutoff = (now or datetime.now(timezone.utc)) - options.ledger_retention
        conditions.append(f"{dialect.quote}_source_ts_ms{dialect.quote} < {int(cutoff.timestamp() * 1000)}")
    if not conditions:
        return None
    return f"{dialect.quote}_op{dialect.quote} = 'd' AND ({' OR '.join(conditions)})"
