"""The SCD2 history of a table whose change log came first: built from bronze, once, by the job.

Turning ``history: scd2`` on for a table that already has bronze and silver (or adding the table
with it to a running pipeline's configuration) needs the versions of everything that happened
before: a history started empty would open each key's first version at its next change, and an
unchanged-TOAST placeholder in that change would carry nothing. Bronze keeps every event, so the job
does it itself, the first time the history step sees the history table without a committed
progress while silver has some: the restart after the configuration change builds it, with no
separate command to forget or to run twice. (A new table's history starts with its first batch,
as silver does.)

1. bronze is read whole (this batch's events included: step 4 of ``LakeWriter.apply`` appended them
   before the history step) and folded by ``lakecdc.lake.history_chain.HistoryBuilder`` with no
   stored chain: every key in one pass in silver's order, key changes reading their old keys' chains,
   truncates closing what was open;
2. one history MERGE inserts the versions and records bronze's progress in the same commit.

Exactly once: a crash before that commit leaves the table without progress, and the restart builds
it again; after it, the progress covers this batch (the history step skips it) and every later batch
continues the chains incrementally. The fold holds the table's bronze in the driver's memory (as
Arrow rows, then Python rows): fine for the tables whose history people read version by version;
for a change log of hundreds of millions of events, give the driver memory for it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecdc.lake.batch import TableTarget
from lakecdc.lake.history_chain import HistoryBuilder, Tracking
from lakecdc.lake.history_plan import HistoryPlan
from lakecdc.lake.layout import BRONZE_RENAMES
from lakecdc.lake.progress import CommitProgress

if TYPE_CHECKING:
    from lakecdc.writers.base import LakeWriter

log = logging.getLogger(__name__)


def bronze_rows(rows: pa.Table) -> list[dict]:
    """Bronze rows under the batch's column names (``BRONZE_RENAMES`` undone)."""
    renamed = {v: k for k, v in BRONZE_RENAMES.items()}
    return rows.rename_columns([renamed.get(c, c) for c in rows.column_names]).to_pylist()


def backfill_history(writer: LakeWriter, target: TableTarget, value_columns: tuple[str, ...],
                     source_schema: pa.Schema, columns: tuple[str, ...]) -> CommitProgress | None:
    """Steps 1-2 of the module docstring; returns the progress committed (None: bronze holds
    nothing yet, the history starts with the batch). ``value_columns``: the history's row columns
    besides the keys; ``source_schema``/``columns``: its MERGE source's Arrow schema and its columns."""
    bronze = writer._stored_progress(target.bronze_table)
    if bronze is None:
        return None
    keys = target.key_columns
    events = bronze_rows(writer._read_arrow(target.bronze_table, keys, None))
    builder = HistoryBuilder(keys, value_columns, Tracking(target.track_history_columns,
                                                         target.track_history_except_columns), events, [])
    changed = builder.rows()
    # old keys that bronze has no event of: nothing more to read (the values stay unknown, as in silver)
    unresolved = builder.more_key_json()
    source = pa.Table.from_pylist(changed, schema=source_schema)
    props = bronze.to_properties()
    writer._merge_history(target, source, HistoryPlan(keys=keys, columns=columns), props, bronze.batch_id or 0)
    log.info("history %s built from bronze %s: %d versions of %d events through batch %s%s", target.history_table,
             target.bronze_table, source.num_rows, len(events), bronze.batch_id,
             f" ({len(unresolved)} old keys of key changes not in bronze)" if unresolved else "")
    return bronze
