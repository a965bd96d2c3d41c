"""Bronze: the append-only change log of one source table, idempotent on source position.

Every event is kept (inserts, updates, deletes, truncates) with its metadata columns. An event is
identified by its source position and key, ``(_seq, _op, _key_json)``: a batch replayed by the job
(same Kafka offsets) and an event re-sent by a restarted capture (new Kafka offsets, same source
position) are both recognised and add nothing. The anti-join only reads bronze rows whose
``_source_ts_ms`` lies in the batch's range (a re-sent event has the same source timestamp), so
file statistics prune it to the newest files.

Iceberg bronze is partitioned by ``days(_ingest_ts)``; Delta bronze by the ``_ingest_date`` column
(Delta has no hidden partitioning).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lakecdc.ingest.batch import METADATA_COLUMNS, SEQ_LENGTH

IDENTITY = ("_seq", "_op", "_key_json")
DELTA_PARTITION_COLUMN = "_ingest_date"
#: Iceberg reserves ``_partition`` (its partition metadata column): bronze names it differently.
BRONZE_RENAMES = {"_partition": "_kafka_partition"}


def bronze_columns(row_columns: list[str]) -> list[str]:
    return [*row_columns, *(BRONZE_RENAMES.get(name, name) for name, _ in METADATA_COLUMNS)]


def to_bronze_layout(batch: DataFrame, row_columns: list[str]) -> DataFrame:
    """The batch's rows as bronze stores them: row columns, then metadata (renamed where needed)."""
    return batch.select(*row_columns, *(F.col(name).alias(BRONZE_RENAMES.get(name, name))
                                        for name, _ in METADATA_COLUMNS))


def _identity_key(df: DataFrame) -> list[F.Column]:
    # _key_json is null for truncates: compare it null-safely by mapping null to "".
    return [F.col("_seq"), F.col("_op"), F.coalesce(F.col("_key_json"), F.lit("")).alias("__key")]


def spark_new_rows(batch: DataFrame, row_columns: list[str], stored: DataFrame | None,
                   min_ts: int | None, max_ts: int | None) -> DataFrame:
    """The batch's events not yet in bronze (``stored`` is the bronze table, or None if new)."""
    # An event delivered twice in one batch: keep its first delivery. (A window is cheaper here
    # than dropDuplicates, whose aggregate carries every column through ``first``.)
    first = Window.partitionBy(*IDENTITY).orderBy(F.col("_offset").asc())
    rows = (batch.select(*bronze_columns(row_columns)).withColumn("__n", F.row_number().over(first))
            .filter(F.col("__n") == 1).drop("__n"))
    if stored is None or min_ts is None or max_ts is None:
        return rows
    existing = (stored.filter(F.col("_source_ts_ms").between(min_ts, max_ts))
                .select(*_identity_key(stored)).distinct())
    keyed = rows.withColumn("__key", F.coalesce(F.col("_key_json"), F.lit("")))
    return keyed.join(existing, on=["_seq", "_op", "__key"], how="left_anti").drop("__key")


def _flat_identity(table: pa.Table) -> pa.Table:
    """Identity columns as join-able scalars: ``_seq`` split into 4 bigints, null key as ""."""
    seq = table["_seq"]
    columns = {f"__s{i}": pc.list_element(seq, i) for i in range(SEQ_LENGTH)}
    # delta-rs reads strings as string_view: cast so both sides of the join have one type
    columns["__op"] = table["_op"].cast(pa.string())
    columns["__key"] = pc.fill_null(table["_key_json"].cast(pa.string()), "")
    return pa.table(columns)


def arrow_new_rows(batch: pa.Table, stored: pa.Table | None) -> pa.Table:
    """Arrow version of ``spark_new_rows`` for delta-rs: ``batch`` minus events already in ``stored``.

    ``batch`` is already deduplicated (``spark_new_rows`` with ``stored=None``); ``stored`` holds the
    bronze rows of the batch's source time range (only ``_seq``, ``_op``, ``_key_json`` needed).
    """
    if stored is None or stored.num_rows == 0 or batch.num_rows == 0:
        return batch
    keys = [f"__s{i}" for i in range(SEQ_LENGTH)] + ["__op", "__key"]
    left = _flat_identity(batch).append_column("__row", pa.array(range(batch.num_rows), pa.int64()))
    right = _flat_identity(stored).group_by(keys).aggregate([])
    rows = left.join(right, keys=keys, join_type="left anti")["__row"].combine_chunks()
    return batch.take(rows.take(pc.sort_indices(rows)))  # keep the batch's order
