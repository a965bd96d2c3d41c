"""The ``TableWriter`` interface, the apply sequence every writer shares, and the writer registry.

``LakeWriter.apply`` is the commit sequence (the same for every format; each step is logged):

1. Measure the batch in one Spark job (events, max ``_seq``, source time range, placeholders,
   truncates), unless the batch brings these figures (the processor computes them in Arrow). An
   empty batch writes nothing.
2. Read the progress committed in bronze and silver. A table whose progress already reaches every
   event of the batch (``ChangeBatch.event_offsets``) is skipped: replays cost one metadata read and
   create no commit. The batch's own ``progress`` is not the test: it stays below a held-back
   transaction, so a batch of events released behind it would look committed.
3. Evolve schemas (create tables on first sight; add columns, widen types) before writing, or stop
   this table with ``SchemaEvolutionError``.
4. Append the events bronze does not hold yet, with the progress, in ONE bronze commit.
5. (keyed tables) Append this batch's deletes and truncates to the delete ledger, then (``history:
   scd2``) MERGE the SCD2 history with its progress (``lakecdc.writers.history``), then MERGE silver
   with the progress (and the newest truncate applied) in ONE silver commit. Silver is committed last
   and is what a restart reads:
   a crash after step 4 or 5a replays the batch, which bronze's position anti-join and the
   ledger's and silver's ``_seq`` guards make harmless.

Formats plug in by implementing the storage primitives (``_table_schema``, ``_create_table``,
``_evolve``, ``_stored_progress``, ``_append_bronze``, ``_append_ledger``, ``_merge_silver``, and the
reads of a few keys' silver rows and bronze events that key changes need...).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lakecdc.errors import MissingExtraError, SchemaEvolutionError, TerminalError
from lakecdc.lake import layout
from lakecdc.lake.batch import ApplyResult, ChangeBatch, ColumnSpec, TableTarget, col
from lakecdc.lake.bronze import stored_window, to_bronze_layout
from lakecdc.lake.frames import table_fields
from lakecdc.lake.history_plan import HistoryPlan
from lakecdc.lake.merge_plan import MergePlan
from lakecdc.lake.progress import CommitPositions, CommitProgress, Offsets
from lakecdc.lake.schema_evolution import SchemaChange, plan_schema_change
from lakecdc.lake.silver import BatchStats, batch_stats, ledger_rows, silver_source
from lakecdc.writers.conflicts import retry_on_conflict
from lakecdc.writers.history import HISTORY_META, apply_history, history_events

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

SEQ_TYPE = ArrayType(LongType(), containsNull=False)
#: The metadata columns of ``ChangeBatch.df`` and what each table stores of them (``lakecdc.lake.layout``):
#: bronze renames ``_partition`` and adds its identity columns (``lakecdc.lake.bronze``).
BATCH_META = StructType(table_fields(layout.METADATA_COLUMNS))
BRONZE_META = StructType([*(StructField(layout.BRONZE_RENAMES.get(f.name, f.name), f.dataType)
                            for f in BATCH_META.fields), *table_fields(layout.BRONZE_IDENTITY_COLUMNS)])
SILVER_META = StructType(table_fields(layout.SILVER_META))
SOFT_DELETE_META = StructType(table_fields(layout.SOFT_DELETE_META))
LEDGER_META = StructType(table_fields(layout.LEDGER_META))
#: The dead-letter table (``lakecdc.ingest.dead_letter.DEAD_LETTER_DDL``): one row per undecodable record.
DEAD_LETTER_SCHEMA = StructType([
    StructField("topic", StringType()), StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("reason", StringType()),
    StructField("failed_at", TimestampType()),
])
#: What identifies a dead letter: its Kafka position (a replay of the record has the same one).
DEAD_LETTER_POSITION = ("topic", "partition", "offset")


def row_schema(columns: list[ColumnSpec]) -> StructType:
    return StructType([StructField(c.name, c.data_type, True) for c in columns])


def silver_schema(target: TableTarget, columns: list[ColumnSpec]) -> StructType:
    extra = SOFT_DELETE_META.fields if target.delete_mode == "soft" else []
    return StructType([*row_schema(columns).fields, *SILVER_META.fields, *extra])


def ledger_schema(target: TableTarget, columns: list[ColumnSpec]) -> StructType:
    by_name = {c.name: c for c in columns}
    keys = [StructField(k, by_name[k].data_type, True) for k in target.key_columns]
    return StructType([*keys, *LEDGER_META.fields])


class TableWriter(ABC):
    """Writes ``ChangeBatch``es into one format's bronze and silver tables."""

    format: ClassVar[str]

    @abstractmethod
    def apply(self, batch: ChangeBatch, batch_id: int) -> ApplyResult:
        """Write bronze and silver for one source table, progress in the same commits."""

    @abstractmethod
    def committed_progress(self, target: TableTarget) -> Offsets:
        """The Kafka offsets the table's last commit includes: where a restart resumes."""

    @abstractmethod
    def append_dead_letters(self, rows: DataFrame | list[dict[str, Any]]) -> int:
        """Append undecodable records (``DEAD_LETTER_SCHEMA`` rows, as dicts or a DataFrame) to
        the dead-letter table; returns the number written."""


class LakeWriter(TableWriter):
    """The shared apply sequence (module docstring) over a format's storage primitives."""

    def __init__(self, spark: SparkSession, dead_letter_table: str = "lakecdc.dead_letters") -> None:
        self.spark = spark
        self.dead_letter_table = dead_letter_table
        self._warned_keyless: set[str] = set()
        self._log_tables: set[str] = set()  # lakecdc's own log tables known to exist (``append_log_rows``)
        # Tables of one batch are applied on several threads (``lakecdc.ingest.parallel``); creating
        # tables is serialised: two first batches would otherwise race to create their shared
        # namespace ("bronze"), which IF NOT EXISTS does not make atomic.
        self._create_lock = threading.Lock()

    # -- storage primitives ------------------------------------------------------------------
    @abstractmethod
    def _table_schema(self, name: str) -> StructType | None: ...

    @abstractmethod
    def _create_table(self, name: str, schema: StructType, kind: str, sort_by: tuple[str, ...] = ()) -> None:
        """``kind``: "bronze" (partitioned by ingest day), "silver", "ledger" or "dead_letters";
        ``sort_by``: the key columns, by which a format that can keeps the rows of its files sorted
        (so a MERGE's key ranges skip files and row groups, ``lakecdc.lake.key_ranges``)."""

    @abstractmethod
    def _evolve(self, name: str, change: SchemaChange) -> None: ...

    @abstractmethod
    def commit_properties(self, name: str) -> dict[str, str]:
        """Properties of the newest commit of ``name`` that lakecdc made ({} if none): progress,
        batch id, and the source position the table reflects (``lakecdc.lake.progress``)."""

    def _stored_progress(self, name: str) -> CommitProgress | None:
        return CommitProgress.from_properties(self.commit_properties(name))

    @abstractmethod
    def _append_bronze(self, target: TableTarget, rows: DataFrame, ts_range: tuple[int, int] | None,
                       props: dict[str, str], batch_id: int, arrow: pa.Table | None = None) -> tuple[int, int | None]:
        """Append the rows bronze lacks (anti-join on identity with the stored rows of ``ts_range``, none
        when None: ``lakecdc.lake.bronze.stored_window``); returns (rows written, version). ``arrow``: the
        batch's rows as the driver decoded them (``ChangeBatch.rows``), in ``rows``' order, or None."""

    @abstractmethod
    def _append_ledger(self, target: TableTarget, rows: DataFrame | pa.Table) -> None:
        """Append removals to the delete ledger (append-only: the newest per key is what counts);
        ``rows`` as ``_silver_rows`` made them."""

    @abstractmethod
    def _stored_silver(self, target: TableTarget, keys: DataFrame) -> DataFrame | None:
        """The stored silver rows of these keys (``keys``: a few rows of key columns), or None."""

    @abstractmethod
    def _bronze_events(self, target: TableTarget, key_json: list[str]) -> DataFrame | None:
        """Every bronze event of these keys (``_key_json`` values, a few), as bronze stores them, or None."""

    def _read_arrow(self, name: str, keys: tuple[str, ...], wanted: pa.Table | None,
                    truncates: bool = False) -> pa.Table:
        """Rows of table ``name`` whose ``keys`` match a row of ``wanted`` (None: every row), plus its
        truncates (``_op`` = 't') when asked, as Arrow (the SCD2 history step reads with it)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no history tables")

    def _merge_history(self, target: TableTarget, source: pa.Table, plan: HistoryPlan, props: dict[str, str],
                       batch_id: int) -> int | None:
        """MERGE the history rows (``lakecdc.writers.history``) committing ``props``; returns the version."""
        raise NotImplementedError(f"{type(self).__name__} keeps no history tables")

    @abstractmethod
    def _merge_silver(self, target: TableTarget, source: DataFrame | pa.Table, plan: MergePlan,
                      props: dict[str, str], batch_id: int, batch_keys: DataFrame) -> tuple[int, int, int | None]:
        """MERGE ``source`` (as ``_silver_rows`` made it); returns (rows inserted or updated, rows
        deleted, version). ``batch_keys``: the key columns of the batch's events (cached with
        them), the only keys whose removals matter."""

    # -- the sequence ------------------------------------------------------------------------
    def committed_progress(self, target: TableTarget) -> Offsets:
        progress = self.committed_commit(target)
        return dict(progress.offsets) if progress else {}

    def committed_commit(self, target: TableTarget) -> CommitProgress | None:
        """What the table's last commit recorded (silver, or bronze for a keyless table): what a restart reads."""
        return self._stored_progress(target.silver_table if target.has_key else target.bronze_table)

    def apply(self, batch: ChangeBatch, batch_id: int) -> ApplyResult:
        started = time.monotonic()
        # The batch is read by several steps; persisting it keeps them on one copy of the events
        # (and stops a recomputation from re-reading Kafka or re-stamping ingest times).
        persisted = batch.df.persist()
        try:
            # A concurrent commit to the same table (maintenance compacting it) makes the loser
            # fail unchanged; the batch is applied again from the new state, which is what a
            # restart would do (what already committed is skipped by its progress).
            tables = ", ".join([batch.table.bronze_table, batch.table.silver_table] if batch.table.has_key
                               else [batch.table.bronze_table])
            return retry_on_conflict(tables, lambda: self._apply(replace(batch, df=persisted), batch_id, started),
                                     f"batch {batch_id}")
        finally:
            persisted.unpersist()

    def _apply(self, batch: ChangeBatch, batch_id: int, started: float) -> ApplyResult:
        target = batch.table
        warnings: list[str] = []
        stats = batch.stats if batch.stats is not None else batch_stats(batch.df, target.key_columns)  # step 1
        if stats.events == 0:
            return ApplyResult(target, batch_id, 0, 0, 0, 0, skipped=True, seconds=time.monotonic() - started)
        bronze_done = self._stored_progress(target.bronze_table)  # step 2
        silver_done = self._stored_progress(target.silver_table) if target.has_key else None
        events_through = batch.event_offsets or batch.progress
        bronze_covered = bool(bronze_done and bronze_done.covers(events_through))
        silver_covered = (not target.has_key) or bool(silver_done and silver_done.covers(events_through))
        if bronze_covered and silver_covered:
            log.info("batch %s for %s already committed (events through offsets %s): skipped", batch_id,
                     target.source_name, events_through)
            return ApplyResult(target, batch_id, stats.events, 0, 0, 0, skipped=True, max_seq=stats.max_seq,
                               max_source_ts_ms=stats.max_source_ts_ms, seconds=time.monotonic() - started)
        if not target.has_key and target.bronze_table not in self._warned_keyless:
            self._warned_keyless.add(target.bronze_table)
            message = (f"table {target.source_name} has no primary key and no configured key columns: "
                       f"writing the bronze change log {target.bronze_table} only, no silver table")
            log.warning(message)
            warnings.append(message)
        row_names = batch.column_names
        changes = self._prepare_table(target.bronze_table, row_schema(batch.columns), BRONZE_META, batch.columns,
                                      "bronze")  # step 3
        if target.has_key:
            changes += self._prepare_table(target.silver_table, silver_schema(target, batch.columns), None,
                                           batch.columns, "silver", target.key_columns)
            key_specs = [c for c in batch.columns if c.name in target.key_columns]
            self._prepare_table(target.ledger_table, ledger_schema(target, batch.columns), None, key_specs,
                                "ledger", target.key_columns)
            if target.history:
                self._prepare_table(target.history_table, row_schema(batch.columns), HISTORY_META, batch.columns,
                                    "history", target.key_columns)
        df = self._cast_to_stored(batch.df, row_names, target.bronze_table)
        bronze_rows, bronze_version = 0, None
        if not bronze_covered:  # step 4
            props = (bronze_done or CommitProgress()).advanced(
                batch.progress, batch_id, stats.max_seq, stats.max_source_ts_ms, None,
                _positions(batch)).to_properties()
            ts_range = stored_window(bronze_done, stats.min_source_ts_ms, stats.max_source_ts_ms)
            bronze_rows, bronze_version = self._append_bronze(target, self._align(to_bronze_layout(df, row_names),
                                                                                  target.bronze_table),
                                                              ts_range, props, batch_id, batch.rows)
            log.info("bronze %s: %d new events of %d (batch %s)", target.bronze_table, bronze_rows, stats.events,
                     batch_id)
        upserts = deletes = 0
        silver_version = None
        if target.has_key and not silver_covered:  # step 5
            kept = df if batch.held_from_silver is None else df.join(
                batch.held_from_silver, ["_topic", "_partition", "_offset"], "left_anti")  # quarantined events
            upserts, deletes, silver_version = self._apply_silver(target, kept, row_names, stats, silver_done,
                                                                  batch, batch_id)
        return ApplyResult(target, batch_id, stats.events, bronze_rows, upserts, deletes,
                           bronze_version=bronze_version, silver_version=silver_version, max_seq=stats.max_seq,
                           max_source_ts_ms=stats.max_source_ts_ms,
                           schema_changes=tuple(dict.fromkeys(changes)), warnings=tuple(warnings),
                           seconds=time.monotonic() - started)

    def _apply_silver(self, target: TableTarget, df: DataFrame, row_names: list[str], stats: BatchStats,
                      done: CommitProgress | None, batch: ChangeBatch, batch_id: int) -> tuple[int, int, int | None]:
        keys = target.key_columns
        missing = [k for k in keys if k not in row_names]
        if missing:
            raise TerminalError(f"table {target.source_name}: key columns {missing} are not among its columns "
                                f"{row_names}")
        removals, source = self._silver_rows(target, df, row_names, stats)
        if removals is not None:  # 5a: remember deletes/truncates before silver forgets the rows
            self._append_ledger(target, removals)
        progress = (done or CommitProgress()).advanced(batch.progress, batch_id, stats.max_seq, stats.max_source_ts_ms,
                                                       stats.truncate_seq, _positions(batch))
        plan = MergePlan(keys=keys, columns=tuple(row_names), delete_mode=target.delete_mode,
                         truncate_seq=stats.truncate_seq, truncate_ts_ms=stats.truncate_ts_ms,
                         truncated_through=progress.truncated_through, placeholders=stats.has_placeholders,
                         key_ranges=stats.key_ranges)
        if target.history:  # 5b: the SCD2 history, committed before silver (``lakecdc.writers.history``)
            apply_history(self, target, history_events(df, row_names), stats, batch, batch_id, _positions(batch))
        props = progress.to_properties()
        upserts, deletes, version = self._merge_silver(target, source, plan, props, batch_id,
                                                       df.select(*[col(k) for k in keys]))  # 5c
        log.info("silver %s: %d rows inserted or updated, %d deleted (batch %s)", target.silver_table, upserts,
                 deletes, batch_id)
        return upserts, deletes, version

    def _silver_rows(self, target: TableTarget, df: DataFrame, row_names: list[str],
                     stats: BatchStats) -> tuple[DataFrame | pa.Table | None, DataFrame | pa.Table]:
        """(the batch's delete-ledger rows or None, the MERGE source): Spark plans here; a format
        whose engine takes Arrow may prepare them in Arrow instead (same rows)."""
        keys = target.key_columns
        source = silver_source(df, keys, row_names, stats, lambda old_keys: self._stored_silver(target, old_keys),
                               lambda key_json: self._bronze_events(target, key_json))
        return (ledger_rows(df, keys) if stats.removals else None), source

    def _prepare_table(self, name: str, schema: StructType, meta: StructType | None, columns: list[ColumnSpec],
                       kind: str, sort_by: tuple[str, ...] = ()) -> tuple[str, ...]:
        full = StructType([*schema.fields, *(meta.fields if meta else [])])
        stored = self._table_schema(name)
        if stored is None:
            with self._create_lock:
                self._create_table(name, full, kind, sort_by)
            return ()
        meta_names = {f.name for f in full.fields if f.name.startswith("_")} - {c.name for c in columns}
        stored_rows = StructType([f for f in stored.fields if f.name not in meta_names])
        change = plan_schema_change(name, stored_rows, columns)
        stored_names = {f.name for f in stored.fields}
        # Bookkeeping columns a newer lakecdc writes (e.g. _old_key_json) are added to tables an
        # older one created, rather than dropped on write.
        new_meta = tuple(ColumnSpec(f.name, f.dataType) for f in (meta.fields if meta else [])
                         if f.name not in stored_names)
        if new_meta:
            change = replace(change, add=(*change.add, *new_meta))
        if not change.empty:
            self._evolve(name, change)
            log.info("table %s: %s", name, "; ".join(change.describe()))
        return change.describe()

    def _cast_to_stored(self, df: DataFrame, row_names: list[str], table: str) -> DataFrame:
        """Cast row columns the batch sends narrower than stored (int for a bigint column)."""
        stored = self._table_schema(table)
        if stored is None:
            return df
        types = {f.name: f.dataType for f in stored.fields}
        casts = {c for c in row_names if c in types and df.schema[c].dataType != types[c]}
        if not casts:
            return df
        return df.select(*[col(c).cast(types[c]).alias(c) if c in casts else col(c) for c in df.columns])

    def _align(self, rows: DataFrame, table: str) -> DataFrame:
        """Rows in the table's column order; columns the source stopped sending are null."""
        stored = self._table_schema(table)
        if stored is None or rows.columns == stored.fieldNames():
            return rows
        present = set(rows.columns)
        return rows.select(*[col(f.name) if f.name in present else F.lit(None).cast(f.dataType).alias(f.name)
                             for f in stored.fields])

    def append_dead_letters(self, rows: DataFrame | list[dict[str, Any]]) -> int:
        if isinstance(rows, list):
            if not rows:
                return 0
            names = DEAD_LETTER_SCHEMA.fieldNames()
            rows = self.spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], DEAD_LETTER_SCHEMA)
        if self._table_schema(self.dead_letter_table) is None:
            self._create_table(self.dead_letter_table, DEAD_LETTER_SCHEMA, "dead_letters")
        # Idempotent per Kafka position: dead letters are written before the table commits that move
        # the progress past them, so a crash in between replays them; what is stored is not added again.
        rows = rows.select(*DEAD_LETTER_SCHEMA.fieldNames()).dropDuplicates(list(DEAD_LETTER_POSITION))
        topics = [r[0] for r in rows.select("topic").distinct().collect()]
        stored = self._stored_positions(self.dead_letter_table, topics)
        if stored is not None:
            rows = rows.join(stored, on=list(DEAD_LETTER_POSITION), how="left_anti")
        return self._append_rows(self.dead_letter_table, rows)

    def append_log_rows(self, name: str, schema: StructType, rows: list[tuple[Any, ...]]) -> int:
        """Append rows to a small append-only table of lakecdc's own (created on first use), e.g.
        the consistency log (``lakecdc.ingest.consistency``)."""
        if name not in self._log_tables:  # once per job: a batch's row must not cost two catalog loads
            if self._table_schema(name) is None:
                with self._create_lock:
                    self._create_table(name, schema, "log")
            self._log_tables.add(name)
        self._append_log(name, schema, rows)
        return len(rows)

    @abstractmethod
    def _append_log(self, name: str, schema: StructType, rows: list[tuple[Any, ...]]) -> None:
        """Append a few rows the driver holds, without a job that counts them."""

    @abstractmethod
    def _append_rows(self, name: str, rows: DataFrame) -> int:
        """Append ``rows``; returns how many."""

    @abstractmethod
    def _stored_positions(self, name: str, topics: list[str]) -> DataFrame | None:
        """``(topic, partition, offset)`` of the rows of ``name`` from these topics (None: none stored)."""


def _positions(batch: ChangeBatch) -> CommitPositions:
    """The source positions the commit records; at least the connector (the notation of max-seq)."""
    return batch.positions or CommitPositions(connector=batch.table.connector or None)


# -- registry --------------------------------------------------------------------------------
_WRITERS: dict[str, tuple[str, str, str]] = {
    # format name -> (module, class, extra to install)
    "iceberg": ("lakecdc.writers.iceberg_spark", "IcebergSparkWriter", "spark"),
    "delta-spark": ("lakecdc.writers.delta_spark", "DeltaSparkWriter", "spark"),
    "delta-rs": ("lakecdc.writers.delta_rs", "DeltaRsWriter", "delta"),
}


def delta_in_session(spark: SparkSession) -> bool:
    """True when the Spark session can write Delta itself (Databricks, delta-spark on the classpath)."""
    try:
        spark._jvm.java.lang.Class.forName(  # type: ignore[union-attr]
            "org.apache.spark.sql.delta.DeltaLog", False,
            spark._jvm.java.lang.Thread.currentThread().getContextClassLoader())  # type: ignore[union-attr]
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        return False


def create_writer(format: str, spark: SparkSession, **options: Any) -> TableWriter:
    """The writer for a table format: ``iceberg``, ``delta`` (Spark's if the session has Delta, else
    delta-rs), or explicitly ``delta-spark`` / ``delta-rs``. Backends are imported on first use."""
    name = format
    if format == "delta":
        name = "delta-spark" if delta_in_session(spark) else "delta-rs"
    if name not in _WRITERS:
        raise TerminalError(f"unknown table format {format!r}: use one of iceberg, delta, delta-spark, delta-rs")
    module_name, class_name, extra = _WRITERS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise MissingExtraError(f"the {name} writer", extra, str(error)) from error
    writer_class = getattr(module, class_name)
    return writer_class(spark, **options)


__all__ = ["TableWriter", "LakeWriter", "create_writer", "delta_in_session", "SchemaEvolutionError"]
