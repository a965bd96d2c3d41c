"""The SCD2 history step of ``LakeWriter.apply``: one history MERGE per batch, before silver's.

For a table with ``history: scd2`` (``TableTarget.history``), after the delete ledger and before
silver's MERGE (so a crash between the two replays the batch, which the history's own progress
then skips):

1. skip when the history table's committed progress already covers the batch's events; a history
   table without committed progress beside a silver table with some (``history: scd2`` turned on
   for a table with a change log) is first built from everything bronze holds, this batch included
   (``lakecdc.writers.history_backfill``), which covers the batch;
2. read the stored versions of the batch's keys (every version when the batch holds a truncate);
3. ``lakecdc.lake.history_chain.HistoryBuilder`` decides which keys continue their stored chain
   and which are folded again from bronze (which already holds this batch: step 4 of the apply),
   with the delete ledger's removals of the batch's keys and its truncates; the late keys' bronze
   events are read, and the builder returns the versions to upsert and delete;
4. MERGE them with ``lakecdc.lake.history_plan`` (the format renders it), committing the progress
   in the same commit, as silver does.

The format provides two primitives: ``_read_arrow(name, keys, wanted, truncates)`` (rows of a table
whose key columns match ``wanted``'s rows, plus its truncates, as Arrow) and ``_merge_history``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakecdc.lake import layout
from lakecdc.lake.batch import ChangeBatch, TableTarget, col
from lakecdc.lake.frames import spark_to_arrow, table_fields
from lakecdc.lake.history_chain import HistoryBuilder, Tracking
from lakecdc.lake.history_plan import ACTION, HistoryPlan
from lakecdc.lake.progress import CommitPositions, CommitProgress
from lakecdc.writers.history_backfill import backfill_history, bronze_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lakecdc.lake.silver import BatchStats
    from lakecdc.writers.base import LakeWriter

log = logging.getLogger(__name__)

HISTORY_META = StructType(table_fields(layout.HISTORY_META))
#: what the fold reads of each batch event besides the row columns
EVENT_COLUMNS = ("_op", "_seq", "_source_ts_ms", "_tx_id", "_partition", "_offset", "_unavailable", "_key_json",
                 "_old_key_json")


def history_source_schema(history: StructType) -> pa.Schema:
    """The Arrow schema of the MERGE source: the history table's columns plus ``__action``."""
    return to_arrow_schema(history).append(pa.field(ACTION, pa.string()))


def history_events(df: DataFrame, row_names: list[str]) -> pa.Table:
    """What the history step reads of a batch: its row columns and ``EVENT_COLUMNS``, as Arrow."""
    wanted = [c for c in dict.fromkeys([*row_names, *EVENT_COLUMNS]) if c in df.columns]
    return spark_to_arrow(df.select(*[col(c) for c in wanted]))


def _bronze_events(writer: LakeWriter, target: TableTarget, keys: pa.Table | None = None,
                   key_json: tuple[str, ...] | list[str] = ()) -> list[dict]:
    """The bronze events of these keys (typed ``keys`` rows, or ``_key_json`` texts), under the
    batch's column names."""
    if key_json:  # bronze keeps each event's ``_key_json``: matched as a key column, in Arrow as the rest
        rows = writer._read_arrow(target.bronze_table, ("_key_json",),
                                  pa.table({"_key_json": pa.array(list(key_json), pa.string())}))
    else:
        rows = writer._read_arrow(target.bronze_table, target.key_columns, keys)
    return bronze_rows(rows)


def apply_history(writer: LakeWriter, target: TableTarget, events: pa.Table, stats: BatchStats,
                  batch: ChangeBatch, batch_id: int, positions: CommitPositions) -> int | None:
    """Steps 1-4 of the module docstring; returns the history version committed (None: skipped).
    ``positions``: the source positions silver's commit records (the history's progress advances
    the same way as silver's)."""
    name = target.history_table
    schema = writer._table_schema(name)
    assert schema is not None, f"history table {name} is created before it is written"
    keys = target.key_columns
    value_columns = tuple(f.name for f in schema.fields if f.name not in keys
                          and f.name not in layout.HISTORY_META_COLUMNS)
    done = writer._stored_progress(name)
    if done is None and writer._stored_progress(target.silver_table) is not None:
        # history turned on for a table with a change log: built from bronze first (``history_backfill``)
        done = backfill_history(writer, target, value_columns, history_source_schema(schema),
                                tuple(schema.fieldNames()))
    if done and done.covers(batch.event_offsets or batch.progress):
        log.info("history %s already holds batch %s: skipped", name, batch_id)
        return None
    batch_keys = events.filter(pc.not_equal(events["_op"], "t")).group_by(list(keys)).aggregate([])
    stored = writer._read_arrow(name, keys, batch_keys).to_pylist()
    all_stored = writer._read_arrow(name, keys, None).to_pylist() if stats.has_truncate else None
    builder = HistoryBuilder(keys, value_columns, Tracking(target.track_history_columns,
                                                         target.track_history_except_columns),
                             events.to_pylist(), stored, all_stored,
                             writer._read_arrow(target.ledger_table, keys, batch_keys, truncates=True).to_pylist())
    late = builder.late_keys()
    bronze = _bronze_events(writer, target, pa.Table.from_pylist(
        [dict(zip(keys, k)) for k in late], schema=batch_keys.schema)) if late else []
    while True:
        changed = builder.rows(bronze)
        old_keys = builder.more_key_json()  # old keys of key changes, by text (exact for every key type)
        if not old_keys:
            break
        bronze += _bronze_events(writer, target, key_json=old_keys)
    source = pa.Table.from_pylist(changed, schema=history_source_schema(schema))
    truncate = builder.oldest_truncate
    plan = HistoryPlan(keys=keys, columns=tuple(schema.fieldNames()),
                       truncate_seq=tuple(truncate["_seq"]) if truncate else None,
                       truncate_ts_ms=truncate["_source_ts_ms"] if truncate else None)
    progress = (done or CommitProgress()).advanced(
        batch.progress, batch_id, stats.max_seq, stats.max_source_ts_ms, stats.truncate_seq, positions)
    version = writer._merge_history(target, source, plan, progress.to_properties(), batch_id)
    log.info("history %s: %d versions changed (%d keys folded again from bronze) (batch %s)", name,
             source.num_rows, len(builder.late_keys()), batch_id)
    return version
