"""Delta tables through delta-rs (``deltalake``): used when the Spark session has no Delta jars.

Spark still prepares every batch (``lakecdc.lake.silver``, the same rows Iceberg gets); the
result crosses to Arrow once (``DataFrame._collect_as_arrow()``, which keeps decimals and time
zones) and delta-rs does the rest:

- bronze: the identity of ``lakecdc.lake.bronze`` against the bronze rows of the batch's source time
  range (parquet statistics prune the scan), then one append. For a batch the driver decoded
  (``ChangeBatch.rows``) the rules run in Arrow (``lakecdc.lake.bronze_arrow``) and Spark returns
  only the row hash and each row's Kafka position; otherwise in Spark, whose result crosses to Arrow;
- ledger: appended (the newest removal per key is what counts);
- silver: ``DeltaTable.merge`` with the clauses of the shared ``MergePlan`` rendered in DataFusion
  syntax (``_seq[1]`` is the first component there).

Exactly once: every commit carries ``CommitProperties(custom_metadata=<lakecdc.progress ...>,
app_transactions=[Transaction("lakecdc:<table>", batch_id)])``; ``commit_properties`` reads the
custom metadata back from the table history. A MERGE that changes nothing makes no commit in
delta-rs, so the progress then goes in an empty append commit of its own.

Table names map to directories: ``bronze.shop_customers`` -> ``<warehouse>/bronze/shop_customers``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Field, Transaction, write_deltalake
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lakecdc.errors import TerminalError
from lakecdc.lake.batch import TableTarget, col
from lakecdc.lake.bronze import STORED_IDENTITY, bronze_columns, spark_new_rows
from lakecdc.lake.bronze_arrow import arrow_new_rows, positions_comparable
from lakecdc.lake.frames import arrow_to_spark as arrow_to_dataframe
from lakecdc.lake.history_plan import ACTION, HistoryPlan, history_clauses, history_join
from lakecdc.lake.key_ranges import KeyRanges, arrow_in_filter, arrow_ranges_filter, arrow_read
from lakecdc.lake.layout import BRONZE_RENAMES, DELTA_PARTITION_COLUMN, OCCURRENCE, ROW_HASH, SEQ_LENGTH
from lakecdc.lake.merge_plan import (
    DATAFUSION,
    SOURCE,
    TARGET,
    MergeClause,
    MergePlan,
    join_condition,
    merge_clauses,
)
from lakecdc.lake.progress import PROGRESS_KEY
from lakecdc.lake.schema_evolution import SchemaChange
from lakecdc.lake.silver import BatchStats
from lakecdc.lake.silver_arrow import arrow_input_columns, arrow_ledger_rows, arrow_silver_source
from lakecdc.writers.base import BRONZE_META, DEAD_LETTER_POSITION, DEAD_LETTER_SCHEMA, LakeWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Target file size of key-sorted tables (silver, ledger).
SORTED_TARGET_FILE_BYTES = 8 * 1024 * 1024
#: How many commits back to look for the newest one carrying lakecdc progress.
HISTORY_LOOKBACK = 100


def arrow_to_spark(t: pa.DataType) -> DataType:
    """The Spark type of an Arrow type as delta-rs reports table schemas."""
    simple = {pa.int8(): ByteType(), pa.int16(): ShortType(), pa.int32(): IntegerType(), pa.int64(): LongType(),
              pa.float32(): FloatType(), pa.float64(): DoubleType(), pa.bool_(): BooleanType(),
              pa.string(): StringType(), pa.large_string(): StringType(), pa.string_view(): StringType(),
              pa.binary(): BinaryType(), pa.large_binary(): BinaryType(), pa.binary_view(): BinaryType(),
              pa.date32(): DateType()}
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz else TimestampNTZType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return ArrayType(arrow_to_spark(t.value_type), True)
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, arrow_to_spark(f.type), True) for f in t])
    if pa.types.is_map(t):
        return MapType(arrow_to_spark(t.key_type), arrow_to_spark(t.item_type), True)
    raise TerminalError(f"Delta column type {t} has no Spark equivalent in lakecdc")


def _arrow_schema(schema: StructType) -> pa.Schema:
    return to_arrow_schema(schema)


def _conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` in ``target``'s column order and types; missing columns null."""
    columns = []
    for field in target:
        if field.name in table.column_names:
            columns.append(table[field.name].cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.table(columns, schema=target)


def newest_lakecdc_commit(table: DeltaTable) -> dict[str, Any] | None:
    """The newest commit lakecdc made among the last ``HISTORY_LOOKBACK`` (history entry), or None."""
    for commit in table.history(HISTORY_LOOKBACK):  # newest first
        if PROGRESS_KEY in commit:
            return commit
    return None


def _lakecdc_version(table: DeltaTable) -> int:
    """The version of the newest lakecdc commit, the one just made (the table's current version
    may be a maintenance commit that came after it)."""
    commit = newest_lakecdc_commit(table)
    return int(commit["version"]) if commit else table.version()


class DeltaRsWriter(LakeWriter):
    format = "delta"

    def __init__(self, spark: SparkSession, warehouse: str | Path, dead_letter_table: str = "lakecdc.dead_letters",
                 storage_options: dict[str, str] | None = None, **_: object) -> None:
        super().__init__(spark, dead_letter_table)
        self.warehouse = str(warehouse)
        self.storage_options = storage_options

    def table_uri(self, name: str) -> str:
        parts = name.split(".")
        if not 2 <= len(parts) <= 3 or not all(parts):
            raise TerminalError(f"table name {name!r} must be schema.table or catalog.schema.table")
        return str(Path(self.warehouse, *parts)) if "://" not in self.warehouse else "/".join([self.warehouse, *parts])

    def _open(self, name: str) -> DeltaTable | None:
        uri = self.table_uri(name)
        if not DeltaTable.is_deltatable(uri, storage_options=self.storage_options):
            return None
        return DeltaTable(uri, storage_options=self.storage_options)

    def _commit(self, props: dict[str, str], name: str, batch_id: int | None) -> CommitProperties:
        txns = [Transaction(app_id=f"lakecdc:{name}", version=batch_id)] if batch_id is not None else None
        return CommitProperties(custom_metadata=props, app_transactions=txns)

    # -- storage primitives ------------------------------------------------------------------
    def _table_schema(self, name: str) -> StructType | None:
        table = self._open(name)
        if table is None:
            return None
        arrow = pa.schema(table.schema().to_arrow())
        return StructType([StructField(f.name, arrow_to_spark(f.type), f.nullable) for f in arrow
                           if f.name != DELTA_PARTITION_COLUMN])

    def _create_table(self, name: str, schema: StructType, kind: str, sort_by: tuple[str, ...] = ()) -> None:
        arrow = _arrow_schema(schema)
        partition_by = None
        if kind == "bronze":
            arrow = arrow.append(pa.field(DELTA_PARTITION_COLUMN, pa.date32()))
            partition_by = [DELTA_PARTITION_COLUMN]
        # delta-rs merges copy-on-write: a MERGE rewrites every file holding a matched key. Small
        # files of key-sorted rows keep that rewrite to the files a batch's key ranges reach (as
        # Databricks' tuneFileSizesForRewrites does for MERGE-heavy tables).
        configuration = {"delta.targetFileSize": str(SORTED_TARGET_FILE_BYTES)} if sort_by else None
        DeltaTable.create(self.table_uri(name), arrow, mode="ignore", partition_by=partition_by,
                          configuration=configuration, storage_options=self.storage_options)
        log.info("created Delta %s table %s", kind, self.table_uri(name))

    def _evolve(self, name: str, change: SchemaChange) -> None:
        table = self._open(name)
        assert table is not None
        if change.add:
            fields = [Field.from_arrow(pa.field(c.name, _arrow_schema(StructType([StructField(c.name, c.data_type)]))
                                                .field(0).type)) for c in change.add]
            table.alter.add_columns(fields)
        if change.widen:
            # delta-rs cannot change a column type in place: rewrite the table with the wider types
            # (rare: a source column was widened). The rewrite is one overwrite commit.
            current = pa.schema(table.schema().to_arrow())
            widened = {n: new for n, _, new in change.widen}
            target = pa.schema([pa.field(f.name, _arrow_schema(StructType([StructField(f.name, widened[f.name])]))
                                         .field(0).type) if f.name in widened else f for f in current])
            data = _conform(table.to_pyarrow_table(), target)
            partitions = table.metadata().partition_columns or None
            write_deltalake(table, data, mode="overwrite", schema_mode="overwrite", partition_by=partitions,
                            storage_options=self.storage_options)

    def commit_properties(self, name: str) -> dict[str, str]:
        table = self._open(name)
        if table is None:
            return {}
        commit = newest_lakecdc_commit(table)
        return {k: v for k, v in commit.items() if isinstance(v, str)} if commit else {}

    def _append_bronze(self, target: TableTarget, rows: DataFrame, ts_range: tuple[int, int] | None,
                       props: dict[str, str], batch_id: int, arrow: pa.Table | None = None) -> tuple[int, int | None]:
        table = self._open(target.bronze_table)
        assert table is not None
        meta = set(bronze_columns([]))
        row_names = [c for c in rows.columns if c not in meta]
        identity = None
        kept = StructType([f for f in BRONZE_META.fields if f.name in STORED_IDENTITY])
        if ts_range is not None:
            # the bronze rows of the batch's source time range (parquet statistics prune the scan),
            # identity columns only
            window = (pc.field("_source_ts_ms") >= ts_range[0]) & (pc.field("_source_ts_ms") <= ts_range[1])
            identity = _conform(arrow_read(table.to_pyarrow_dataset(), window, list(STORED_IDENTITY)),
                                _arrow_schema(kept))
        layout = _arrow_bronze(arrow, rows) if arrow is not None else None
        if layout is not None and positions_comparable(layout, *([identity] if identity is not None else [])):
            fresh = arrow_new_rows(layout, identity, target.connector)
        else:  # the batch only Spark holds: the same anti-join and numbering Iceberg gets
            stored = arrow_to_dataframe(self.spark, identity, kept) if identity is not None else None
            fresh = _to_arrow(spark_new_rows(rows, row_names, stored, ts_range, target.connector))
        fresh = fresh.append_column(DELTA_PARTITION_COLUMN, pc.cast(fresh["_ingest_ts"], pa.date32()))
        schema = pa.schema(table.schema().to_arrow())
        write_deltalake(table, _conform(fresh, schema), mode="append", partition_by=[DELTA_PARTITION_COLUMN],
                        commit_properties=self._commit(props, target.bronze_table, batch_id),
                        storage_options=self.storage_options)
        table.update_incremental()
        return fresh.num_rows, _lakecdc_version(table)

    def _merge(self, name: str, source: pa.Table, on: str, clauses: list[MergeClause],
               commit: CommitProperties | None) -> dict[str, Any]:
        table = self._open(name)
        assert table is not None
        merger = table.merge(source, on, source_alias=SOURCE, target_alias=TARGET, commit_properties=commit)
        for clause in clauses:
            # delta-rs parses the target column names too (DataFusion: "a.b" is column b of a)
            updates = {DATAFUSION.quoted(column): expression for column, expression in clause.assignments}
            if clause.kind == "matched_delete":
                merger = merger.when_matched_delete(predicate=clause.condition)
            elif clause.kind == "matched_update":
                merger = merger.when_matched_update(updates=updates, predicate=clause.condition)
            elif clause.kind == "not_matched_insert":
                merger = merger.when_not_matched_insert(updates=updates, predicate=clause.condition)
            elif clause.kind == "not_matched_by_source_delete":
                merger = merger.when_not_matched_by_source_delete(predicate=clause.condition)
            else:
                merger = merger.when_not_matched_by_source_update(updates=updates, predicate=clause.condition)
        return merger.execute()

    def _silver_rows(self, target: TableTarget, df: DataFrame, row_names: list[str],
                     stats: BatchStats) -> tuple[DataFrame | pa.Table | None, DataFrame | pa.Table]:
        if stats.has_placeholders:
            return super()._silver_rows(target, df, row_names, stats)
        # delta-rs takes Arrow: one collect of the batch instead of a Spark job per prepared frame
        keys = target.key_columns
        rows = _to_arrow(df.select(*[col(c) for c in arrow_input_columns(keys, row_names)]))
        return (arrow_ledger_rows(rows, keys) if stats.removals else None,
                arrow_silver_source(rows, keys, row_names, stats))

    def _append_ledger(self, target: TableTarget, rows: DataFrame | pa.Table) -> None:
        table = self._open(target.ledger_table)
        assert table is not None
        data = rows if isinstance(rows, pa.Table) else _to_arrow(rows)
        write_deltalake(table, _conform(data, pa.schema(table.schema().to_arrow())), mode="append",
                        storage_options=self.storage_options)

    def _ledger(self, target: TableTarget, op: str, ranges: KeyRanges | None = None) -> pa.Table:
        table = self._open(target.ledger_table)
        assert table is not None
        dataset = table.to_pyarrow_dataset()
        key = target.key_columns[0]
        where = arrow_ranges_filter(key, ranges, dataset.schema.field(key).type) if ranges else None
        rows = arrow_read(dataset, where, [*target.key_columns, "_seq", "_op"])
        return rows.filter(pc.equal(rows["_op"].cast(pa.string()), op)).drop_columns(["_op"])

    def _stored_silver(self, target: TableTarget, keys: DataFrame) -> DataFrame | None:
        table = self._open(target.silver_table)
        schema = self._table_schema(target.silver_table)
        wanted = _to_arrow(keys)
        if table is None or schema is None or wanted.num_rows == 0:
            return None
        # parquet statistics prune on each key column's values (typed as the table reads them back:
        # string_view, binary_view...); the exact match is the semi join
        dataset = table.to_pyarrow_dataset()
        where = None
        for key in target.key_columns:
            condition = arrow_in_filter(dataset.schema, key, wanted[key])
            if condition is not None:
                where = condition if where is None else where & condition
        stored = arrow_read(dataset, where)
        if stored.num_rows == 0:
            return None
        rows = arrow_to_dataframe(self.spark, _conform(stored, _arrow_schema(schema)), schema)
        return rows.join(F.broadcast(keys), on=list(target.key_columns), how="left_semi")

    def _bronze_events(self, target: TableTarget, key_json: list[str]) -> DataFrame | None:
        table = self._open(target.bronze_table)
        schema = self._table_schema(target.bronze_table)
        if table is None or schema is None or not key_json:
            return None
        # parquet statistics on _key_json prune what they can; the filter is exact (the values typed
        # as the table reads the column back: string_view in delta-rs)
        dataset = table.to_pyarrow_dataset()
        stored = arrow_read(dataset, arrow_in_filter(dataset.schema, "_key_json", pa.array(key_json, pa.string())))
        if stored.num_rows == 0:
            return None
        return arrow_to_dataframe(self.spark, _conform(stored, _arrow_schema(schema)), schema)

    def _merge_silver(self, target: TableTarget, source: DataFrame | pa.Table, plan: MergePlan,
                      props: dict[str, str], batch_id: int, batch_keys: DataFrame) -> tuple[int, int, int | None]:
        # sorted by key: the files the MERGE writes then cover narrow key ranges (``_create_table``);
        # ``arrow_silver_source`` sorts already
        rows = source if isinstance(source, pa.Table) else _to_arrow(source).sort_by(
            [(k, "ascending") for k in target.key_columns])
        rows = _with_removed_seq(rows, self._ledger(target, "d", plan.key_ranges), target.key_columns)
        table = self._open(target.silver_table)
        assert table is not None
        metrics = self._merge(target.silver_table, rows, join_condition(plan, DATAFUSION),
                              merge_clauses(plan, DATAFUSION), self._commit(props, target.silver_table, batch_id))
        self._commit_unchanged(table, props, target.silver_table, batch_id)
        written = metrics["num_target_rows_inserted"] + metrics["num_target_rows_updated"]
        return written, metrics["num_target_rows_deleted"], _lakecdc_version(table)

    def _commit_unchanged(self, table: DeltaTable, props: dict[str, str], name: str, batch_id: int) -> None:
        """After a MERGE: when it made no commit (nothing changed, every event stale), commit the
        progress on its own. Whether it committed, its properties tell, not the version
        (maintenance may have committed meanwhile)."""
        table.update_incremental()
        newest = newest_lakecdc_commit(table) or {}
        if any(newest.get(k) != v for k, v in props.items()):
            write_deltalake(table, pa.schema(table.schema().to_arrow()).empty_table(), mode="append",
                            commit_properties=self._commit(props, name, batch_id),
                            storage_options=self.storage_options)
            table.update_incremental()

    def _read_arrow(self, name: str, keys: tuple[str, ...], wanted: pa.Table | None,
                    truncates: bool = False) -> pa.Table:
        table = self._open(name)
        assert table is not None
        dataset = table.to_pyarrow_dataset()
        if wanted is None:
            return arrow_read(dataset)
        # statistics prune on each key column's values; the exact match is the semi join below
        where = None
        for key in keys:
            condition = arrow_in_filter(dataset.schema, key, wanted[key])
            if condition is not None:
                where = condition if where is None else where & condition
        if truncates:
            where = None if where is None else where | (pc.field("_op") == "t")
        rows = arrow_read(dataset, where)
        # Arrow's join takes no list columns beside the keys: join the keys and row numbers only
        index = rows.select(list(keys)).append_column("__row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        found = index.join(wanted.select(list(keys)).cast(index.select(list(keys)).schema), keys=list(keys),
                           join_type="left semi")
        matched = rows.take(pc.take(found["__row"], pc.sort_indices(found["__row"])))
        if truncates:
            matched = pa.concat_tables([matched, rows.filter(pc.equal(rows["_op"].cast(pa.string()), "t"))])
        return matched

    def _merge_history(self, target: TableTarget, source: pa.Table, plan: HistoryPlan, props: dict[str, str],
                       batch_id: int) -> int | None:
        table = self._open(target.history_table)
        assert table is not None
        stored = pa.schema(table.schema().to_arrow())
        rows = _conform(source, stored.append(pa.field(ACTION, pa.string())))
        if rows.num_rows or plan.truncate_seq is not None:  # else nothing to change: progress only
            self._merge(target.history_table, rows, history_join(plan, DATAFUSION),
                        history_clauses(plan, DATAFUSION), self._commit(props, target.history_table, batch_id))
        self._commit_unchanged(table, props, target.history_table, batch_id)
        return _lakecdc_version(table)

    def _stored_positions(self, name: str, topics: list[str]) -> DataFrame | None:
        table = self._open(name)
        if table is None or not topics:
            return None
        stored = table.to_pyarrow_dataset().to_table(columns=list(DEAD_LETTER_POSITION),
                                                     filter=pc.field("topic").isin(topics))
        if stored.num_rows == 0:
            return None
        schema = StructType([f for f in DEAD_LETTER_SCHEMA.fields if f.name in DEAD_LETTER_POSITION])
        return arrow_to_dataframe(self.spark, _conform(stored, _arrow_schema(schema)), schema)

    def _append_rows(self, name: str, rows: DataFrame) -> int:
        return self._append_arrow(name, _to_arrow(rows))

    def _append_log(self, name: str, schema: StructType, rows: list[tuple[Any, ...]]) -> None:
        self._append_arrow(name, pa.Table.from_pylist([dict(zip(schema.fieldNames(), r)) for r in rows],
                                                      _arrow_schema(schema)))

    def _append_arrow(self, name: str, data: pa.Table) -> int:
        table = self._open(name)
        assert table is not None
        write_deltalake(table, _conform(data, pa.schema(table.schema().to_arrow())), mode="append",
                        storage_options=self.storage_options)
        return data.num_rows


def _to_arrow(df: DataFrame) -> pa.Table:
    """Spark -> Arrow without pandas (keeps decimals, time zones and nested types)."""
    batches = df._collect_as_arrow()
    if not batches:
        return _arrow_schema(df.schema).empty_table()
    table = pa.Table.from_batches(batches)
    # Spark sends an empty child string array of a list column with a zero-length offsets buffer,
    # which delta-rs' partitioned writer reads out of bounds (a Rust panic): rebuilding nested
    # columns with ``take`` gives them canonical buffers.
    positions = None
    for index, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            if positions is None:
                positions = pa.array(np.arange(table.num_rows, dtype=np.int64))
            table = table.set_column(index, field, pc.take(table.column(index), positions))
    return table


def _arrow_bronze(arrow: pa.Table, rows: DataFrame) -> pa.Table | None:
    """The driver's rows of a batch in bronze layout (``lakecdc.lake.bronze.to_bronze_layout``), with the
    row hash Spark computes on ``rows`` (the same batch in bronze layout): Spark's JSON and ``xxhash64``
    stay the one definition of the hash, and only that column crosses back, with each row's Kafka position
    to check the order. None when ``rows`` is not in ``arrow``'s order (then the identity runs in Spark)."""
    hashed = _to_arrow(rows.select("_kafka_partition", "_offset", ROW_HASH))
    if hashed.num_rows != arrow.num_rows or not (
            hashed["_offset"].equals(arrow["_offset"].cast(pa.int64()))
            and hashed["_kafka_partition"].equals(arrow["_partition"].cast(pa.int32()))):
        log.debug("the Spark rows of a batch are not in its Arrow order: bronze identity in Spark")
        return None
    names = [BRONZE_RENAMES.get(n, n) for n in arrow.column_names]
    return (arrow.rename_columns(names).append_column(ROW_HASH, hashed[ROW_HASH])
            .append_column(OCCURRENCE, pa.nulls(arrow.num_rows, pa.int64())))


def _with_removed_seq(rows: pa.Table, ledger: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    """Add ``_removed_seq``: the ``_seq`` of the key's newest delete in the ledger (or null)."""
    seq_type = pa.list_(pa.int64())
    if ledger.num_rows == 0 or rows.num_rows == 0:
        return rows.append_column("_removed_seq", pa.nulls(rows.num_rows, seq_type))
    index = rows.select(list(keys)).append_column("__row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    flat = ledger.select(list(keys)).cast(rows.select(list(keys)).schema)  # string_view -> string
    for i in range(SEQ_LENGTH):
        flat = flat.append_column(f"__l{i}", pc.list_element(ledger["_seq"], i))
    # only the batch's keys' removals matter: the ledger's other rows never reach the sort
    flat = flat.join(rows.select(list(keys)), keys=list(keys), join_type="left semi")
    # the ledger is append-only: keep each key's newest removal
    newest_first = flat.sort_by([(f"__l{i}", "descending") for i in range(SEQ_LENGTH)])
    flat = newest_first.group_by(list(keys), use_threads=False).aggregate(
        [(f"__l{i}", "first") for i in range(SEQ_LENGTH)]).rename_columns(
        [*keys, *(f"__l{i}" for i in range(SEQ_LENGTH))])
    joined = index.join(flat, keys=list(keys), join_type="left outer").sort_by("__row")
    missing = pc.is_null(joined["__l0"]).to_numpy(zero_copy_only=False)
    matrix = np.column_stack([pc.fill_null(joined[f"__l{i}"], 0).to_numpy() for i in range(SEQ_LENGTH)])
    offsets = pa.array(np.arange(0, SEQ_LENGTH * rows.num_rows + 1, SEQ_LENGTH, dtype=np.int32))
    removed = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)), mask=pa.array(missing))
    return rows.append_column("_removed_seq", removed)
