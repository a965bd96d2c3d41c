"""Primary-key changes whose new row holds placeholders: the values come from the old key's row.

A source UPDATE that changes the key reaches the job as delete(old key) + create(new key); the
create names the old key (header ``__debezium.oldkey`` -> ``_old_key_json``). A column the UPDATE
did not change may arrive as the placeholder (PostgreSQL does not resend an unchanged TOASTed
value), and "keep the stored value" would look under the NEW key, while the value lives under
the OLD key, which the delete removes. So before silver preparation, the create's placeholder
columns are filled with the old key's values just before the change, taken from (newest first):

1. the old key's earlier events in this batch that carried the value (a delete carries none: with
   REPLICA IDENTITY DEFAULT its before image holds only the key);
2. the old key's stored silver row (read for these keys only, through the writer);
3. where the old key was itself the target of an earlier key change in the batch (A -> B -> C),
   that change's filled values: one round per link of the longest chain.

Columns still unknown after this stay in ``_unavailable`` (the MERGE then keeps what the new
key holds, as before). Runs only for batches that have such creates (``BatchStats.moved_placeholders``).

The old row must still be readable when the create is applied: the delete and the create share a
transaction, which the job applies whole when transaction metadata is on
(``provide.transaction.metadata``). Without it, a batch boundary that falls between them after the
delete (or a delete in another partition read ahead of the create) leaves the column unknown.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

#: Internal op of a stored silver row taken in as the old key's earliest state (never leaves here).
STORED_OP = "s"

StoredRows = Callable[[DataFrame], "DataFrame | None"]


def _unavailable() -> Column:
    return F.coalesce(F.col("_unavailable"), F.array().cast("array<string>"))


def is_moved_placeholder() -> Column:
    """The create of a key change that still holds placeholders."""
    return F.col("_old_key_json").isNotNull() & (F.size(_unavailable()) > 0)


def chain_rounds(moves: list[tuple[str, str]]) -> int:
    """Rounds needed: the longest chain of key changes, ``moves`` as (new key, old key) in source order."""
    depth: dict[str, int] = {}
    longest = 0
    for new_key, old_key in moves:
        depth[new_key] = depth.get(old_key, 0) + 1
        longest = max(longest, depth[new_key])
    return longest


def fill_moved_placeholders(rows: DataFrame, keys: tuple[str, ...], columns: list[str],
                            stored_rows: StoredRows | None) -> DataFrame:
    """``rows`` (batch events, truncates removed) with the placeholders of key-change creates filled."""
    moved = rows.filter(is_moved_placeholder())
    links = moved.select("_key_json", "_old_key_json", "_seq", "_offset").orderBy("_seq", "_offset").collect()
    if not links:
        return rows
    values = [c for c in columns if c not in keys]
    events = rows.withColumn("__stored", F.lit(False))
    stored = _stored_states(rows, moved, keys, stored_rows)
    if stored is not None:
        events = events.unionByName(stored)
    for _ in range(chain_rounds([(r["_key_json"], r["_old_key_json"]) for r in links])):
        events = _fill_round(events, values)
    return events.filter(~F.col("__stored")).drop("__stored")


def _stored_states(rows: DataFrame, moved: DataFrame, keys: tuple[str, ...],
                   stored_rows: StoredRows | None) -> DataFrame | None:
    """The stored silver rows of the old keys, shaped as events of those keys (op ``s``)."""
    if stored_rows is None:
        return None
    old = moved.select("_old_key_json").distinct()
    # Typed old keys: from an event of that key in the batch (the change's own delete is one),
    # else parsed from the JSON (exact for the common key types: numbers, text).
    key_struct = StructType([StructField(k, rows.schema[k].dataType, True) for k in keys])
    seen = (rows.filter(F.col("_key_json").isNotNull()).select(F.col("_key_json").alias("_old_key_json"),
                                                                 *[F.col(k).alias(f"__k_{k}") for k in keys])
            .dropDuplicates(["_old_key_json"]))
    parsed = F.from_json(F.col("_old_key_json"), key_struct)
    old_keys = old.join(seen, "_old_key_json", "left").select(
        "_old_key_json", *[F.coalesce(F.col(f"__k_{k}"), parsed.getField(k)).alias(k) for k in keys])
    found = stored_rows(old_keys.select(*keys))
    if found is None:
        return None
    if "_is_deleted" in found.columns:
        found = found.filter(~F.coalesce(F.col("_is_deleted"), F.lit(False)))
    found = found.join(old_keys, list(keys))
    shaped = []
    for field in rows.schema.fields:
        name = field.name
        if name == "_op":
            value = F.lit(STORED_OP)
        elif name == "_key_json":
            value = F.col("_old_key_json")
        elif name == "_old_key_json":
            value = F.lit(None)
        elif name == "_unavailable":
            value = F.array()
        elif name == "_offset":
            value = F.lit(-1)
        elif name == "_seq":  # orders the stored row before the batch's events of its key
            shaped.append(F.col(name))  # (a cast would fail on the arrays' element nullability)
            continue
        elif name in found.columns:
            value = F.col(name)
        else:
            value = F.lit(None)
        shaped.append(value.cast(field.dataType).alias(name))
    return found.select(*shaped, F.lit(True).alias("__stored"))


def _fill_round(events: DataFrame, values: list[str]) -> DataFrame:
    """One link: each key-change create takes what its old key held just before it."""
    unavailable = _unavailable()
    history = Window.partitionBy("_key_json").orderBy(F.col("_seq").asc(), F.col("_offset").asc()).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    carried = [F.last(F.when((F.col("_op") != "d") & ~F.array_contains(unavailable, c), F.struct(F.col(c).alias("v"))),
                      ignorenulls=True).over(history).alias(f"__p_{c}") for c in values]
    states = (events.filter(F.col("_op") != "d")
              .select(F.col("_key_json").alias("__pk"), F.col("_seq").alias("__pseq"),
                      F.col("_offset").alias("__poff"), *carried))
    moves = events.filter(is_moved_placeholder() & ~F.col("__stored")).withColumn(
        "__move", F.struct("_partition", "_offset"))
    earlier = (F.col("__pseq") < F.col("_seq")) | ((F.col("__pseq") == F.col("_seq")) & (F.col("__poff") < F.col("_offset")))
    joined = moves.join(states, (F.col("__pk") == F.col("_old_key_json")) & earlier, "left")
    newest = Window.partitionBy("__move").orderBy(F.col("__pseq").desc_nulls_last(), F.col("__poff").desc_nulls_last())
    prior = joined.withColumn("__n", F.row_number().over(newest)).filter(F.col("__n") == 1)

    def missing(name: Column) -> Column:
        check = F.lit(True)
        for c in values:
            check = F.when(name == F.lit(c), F.col(f"__p_{c}").isNull()).otherwise(check)
        return check

    filled = []
    for name in events.columns:
        if name in values:
            take = F.array_contains(unavailable, name) & F.col(f"__p_{name}").isNotNull()
            filled.append(F.when(take, F.col(f"__p_{name}").getField("v")).otherwise(F.col(name)).alias(name))
        elif name == "_unavailable":
            filled.append(F.filter(unavailable, missing).alias(name))
        else:
            filled.append(F.col(name))
    rest = events.filter(~(is_moved_placeholder() & ~F.col("__stored")))
    return rest.unionByName(prior.select(*filled))
