"""Silver preparation in Spark: one source row per key for the MERGE, plus the delete-ledger rows.

Runs before any engine-specific code, so Iceberg and Delta get the same rows:

1. truncates leave the MERGE source; events older than the batch's newest truncate go too
   (the truncate removed what they describe);
2. placeholders (``_unavailable``) are filled from the newest earlier event of the same key in this
   batch that carried the real value; what is still unavailable keeps the stored value in the MERGE;
   the create of a primary-key change first takes them from the OLD key (``lakecdc.lake.key_moves``);
3. the newest event per key by ``_seq`` wins (Spark's MERGE would otherwise fail with
   MERGE_CARDINALITY_VIOLATION on two source rows for one key).

``batch_stats`` is the single aggregate pass per batch that sizes everything else (max ``_seq``,
source time range, whether placeholders or truncates occur); ``arrow_batch_stats`` gives the same
figures from the Arrow rows the processor builds the batch from, without a Spark job.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegralType, StringType

from lakecdc.lake.batch import col
from lakecdc.lake.key_moves import (
    KeyHistory,
    StoredRows,
    arrow_moved_placeholders,
    fill_moved_placeholders,
    is_moved_placeholder,
)
from lakecdc.lake.key_ranges import KeyRanges, arrow_key_ranges
from lakecdc.lake.layout import SEQ_LENGTH, SILVER_META_COLUMNS


@dataclass(frozen=True)
class BatchStats:
    """Figures of one batch, computed in one Spark job."""

    events: int
    max_seq: tuple[int, ...] | None
    min_source_ts_ms: int | None
    max_source_ts_ms: int | None
    has_placeholders: bool
    truncate_seq: tuple[int, ...] | None
    truncate_ts_ms: int | None
    removals: int = 0  # deletes + truncates
    moved_placeholders: bool = False  # a key change's create holds placeholders (``key_moves``)
    key_ranges: KeyRanges | None = None  # where the first key column's values lie (``key_ranges``)

    @property
    def has_truncate(self) -> bool:
        return self.truncate_seq is not None


def batch_stats(df: DataFrame, keys: tuple[str, ...] = ()) -> BatchStats:
    """The figures in one Spark job; the key range is the first key column's ``[min, max]`` (one
    range: splitting at gaps needs the keys at hand, as ``arrow_batch_stats`` has them)."""
    is_truncate = F.col("_op") == "t"
    ranged = keys[0] if keys and keys[0] in df.columns and isinstance(
        df.schema[keys[0]].dataType, (IntegralType, StringType)) else None
    bounds = [F.min(col(ranged)).alias("key_min"), F.max(col(ranged)).alias("key_max")] if ranged else []
    row = df.agg(
        F.count(F.lit(1)).alias("events"),
        F.max("_seq").alias("max_seq"),
        F.min("_source_ts_ms").alias("min_ts"),
        F.max("_source_ts_ms").alias("max_ts"),
        F.max(F.when(F.size(F.coalesce("_unavailable", F.array())) > 0, 1).otherwise(0)).alias("placeholders"),
        F.max(F.when(is_truncate, F.struct("_seq", "_source_ts_ms"))).alias("truncate"),
        F.sum(F.when(F.col("_op").isin("d", "t"), 1).otherwise(0)).alias("removals"),
        F.max(F.when(is_moved_placeholder(), 1).otherwise(0)).alias("moved"),
        *bounds,
    ).collect()[0]
    truncate = row["truncate"]
    return BatchStats(
        events=int(row["events"]),
        max_seq=tuple(row["max_seq"]) if row["max_seq"] is not None else None,
        min_source_ts_ms=row["min_ts"],
        max_source_ts_ms=row["max_ts"],
        has_placeholders=bool(row["placeholders"]),
        truncate_seq=tuple(truncate["_seq"]) if truncate is not None else None,
        truncate_ts_ms=truncate["_source_ts_ms"] if truncate is not None else None,
        removals=int(row["removals"] or 0),
        moved_placeholders=bool(row["moved"]),
        key_ranges=((row["key_min"], row["key_max"]),) if ranged and row["key_min"] is not None else None,
    )


def arrow_batch_stats(rows: pa.Table, keys: tuple[str, ...] = ()) -> BatchStats:
    """``batch_stats`` of a batch whose rows are at hand in Arrow (``ChangeBatch.df`` built from
    ``rows``): the same figures, compared the same way (``_seq`` lexicographically; the newest
    truncate by ``_seq``, then ``_source_ts_ms``), at the cost of an Arrow pass instead of a Spark job."""
    ts = pc.min_max(rows.column("_source_ts_ms"))
    ops = rows.column("_op")
    has_unavailable = pc.greater(pc.fill_null(pc.list_value_length(rows.column("_unavailable")), 0), 0)
    truncates = rows.filter(pc.equal(ops, "t"))
    truncate = _newest(truncates)
    return BatchStats(
        events=rows.num_rows,
        max_seq=_newest_seq(rows),
        min_source_ts_ms=ts["min"].as_py(),
        max_source_ts_ms=ts["max"].as_py(),
        has_placeholders=bool(pc.any(has_unavailable).as_py()),
        truncate_seq=tuple(truncate["_seq"]) if truncate is not None else None,
        truncate_ts_ms=truncate["_source_ts_ms"] if truncate is not None else None,
        removals=pc.sum(pc.is_in(ops, pa.array(["d", "t"]))).as_py() or 0,
        moved_placeholders=bool(pc.any(arrow_moved_placeholders(rows)).as_py()),
        key_ranges=arrow_key_ranges(rows.column(keys[0])) if keys and keys[0] in rows.column_names else None,
    )


def _newest(rows: pa.Table) -> dict | None:
    """The row with the largest (``_seq``, ``_source_ts_ms``), as a dict (None for no rows)."""
    if rows.num_rows == 0:
        return None
    seq = rows.column("_seq")
    keys = {f"__s{i}": pc.list_element(seq, i) for i in range(SEQ_LENGTH)}
    keys["__ts"] = rows.column("_source_ts_ms")
    order = pc.sort_indices(pa.table(keys), sort_keys=[(k, "descending") for k in keys])
    return rows.select(["_seq", "_source_ts_ms"]).take(order.slice(0, 1)).to_pylist()[0]


def _newest_seq(rows: pa.Table) -> tuple[int, ...] | None:
    newest = _newest(rows)
    return tuple(newest["_seq"]) if newest is not None else None


def _seq_not_older_than(seq: tuple[int, ...]) -> F.Column:
    """``_seq >= seq`` (Spark compares arrays element by element, numerically)."""
    return F.col("_seq") >= F.array(*[F.lit(int(v)).cast("bigint") for v in seq])


def silver_source(df: DataFrame, keys: tuple[str, ...], columns: list[str], stats: BatchStats,
                  stored_rows: StoredRows | None = None, key_history: KeyHistory | None = None) -> DataFrame:
    """One row per key: the newest event, placeholders filled from earlier events in the batch.

    ``stored_rows`` reads the stored silver rows of given keys (a DataFrame of key columns), and
    ``key_history`` the bronze events of given keys; they are called only when a key change's
    create holds placeholders, the second only when the first left some unresolved (``key_moves``).

    Output columns: ``columns`` (row columns, keys included) + ``_seq``, ``_op``,
    ``_source_ts_ms``, ``_tx_id``, ``_unavailable``.
    """
    rows = df.filter(F.col("_op") != "t")
    if stats.truncate_seq is not None:
        rows = rows.filter(_seq_not_older_than(stats.truncate_seq))
    if stats.moved_placeholders:
        rows = fill_moved_placeholders(rows, keys, columns, stored_rows, key_history)
    order = [F.col("_seq").desc(), F.col("_offset").desc()]
    by_key = Window.partitionBy(*[col(k) for k in keys])
    if stats.has_placeholders:
        # Carry each column's newest available value forward to the winning row.
        history = by_key.orderBy(F.col("_seq").asc(), F.col("_offset").asc()).rowsBetween(
            Window.unboundedPreceding, Window.currentRow)
        unavailable = F.coalesce(F.col("_unavailable"), F.array().cast("array<string>"))
        carried = []
        for name in columns:
            if name in keys:
                carried.append(col(name))
                continue
            available = F.when(~F.array_contains(unavailable, name), F.struct(col(name).alias("v")))
            carried.append(F.last(available, ignorenulls=True).over(history).alias(f"__carry_{name}"))
        rows = rows.select("*", *[c for c, n in zip(carried, columns) if n not in keys])
        still_unavailable = F.filter(unavailable, lambda c: _carry_is_null(c, columns, keys))
        rows = rows.select(
            *[col(f"__carry_{n}").getField("v").alias(n) if n not in keys else col(n) for n in columns],
            *[c for c in SILVER_META_COLUMNS], F.col("_offset"), still_unavailable.alias("_unavailable"))
    else:
        rows = rows.select(*[col(c) for c in columns], *SILVER_META_COLUMNS, "_offset", "_unavailable")
    ranked = rows.withColumn("__rank", F.row_number().over(by_key.orderBy(*order)))
    return ranked.filter(F.col("__rank") == 1).drop("__rank", "_offset")


def _carry_is_null(name: F.Column, columns: list[str], keys: tuple[str, ...]) -> F.Column:
    """True when column ``name`` (a string element of ``_unavailable``) found no value in the batch."""
    checks = F.lit(False)
    for column in columns:
        if column in keys:
            continue
        checks = F.when(name == F.lit(column), col(f"__carry_{column}").isNull()).otherwise(checks)
    return checks


def ledger_rows(df: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """Removals to remember: every delete (key + ``_seq``) and truncate (null keys) of the batch.

    The ledger is append-only; readers take the newest removal per key, so a replayed batch that
    appends the same rows again changes nothing.
    """
    return df.filter(F.col("_op").isin("d", "t")).select(*[col(k) for k in keys], "_seq", "_op", "_source_ts_ms")
