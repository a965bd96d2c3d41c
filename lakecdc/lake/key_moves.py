"""Primary-key changes whose new row holds placeholders: the values come from the old key's row.

A source UPDATE that changes the key reaches the job as delete(old key) + create(new key) at one
source position (one ``_seq``: every connector emits both from the one row change); the create
names the old key (header ``__debezium.oldkey`` -> ``_old_key_json``). A column the UPDATE did not
change may arrive as the placeholder (PostgreSQL does not resend an unchanged TOASTed value), and
"keep the stored value" would look under the NEW key, while the value lives under the OLD key,
which the delete removes. So before silver preparation, the create's placeholder columns are
filled with the old key's row just before the change, taken from (newest first):

1. the old key's earlier events in this batch that carried the value (a delete carries none: with
   REPLICA IDENTITY DEFAULT its before image holds only the key);
2. the old key's stored silver row (read for these keys only, through the writer). In soft-delete
   mode that row may be marked deleted: it still holds the values it had before its delete, which
   are the row just before the change only if that delete is the change's own (at the create's
   ``_seq``, e.g. applied by an earlier micro-batch); a row deleted before the change is no source;
3. where the old key was itself the target of an earlier key change (A -> B -> C), that change's
   filled values: one round per link of the longest chain;
4. only if placeholders are still unresolved after these: the old key's events in bronze, which
   keeps every event (read for these keys only, through the writer; followed further back along
   the key changes they show). This is what finds the row when the delete was applied in an
   earlier micro-batch and hard-delete mode removed it from silver: without transaction metadata
   (``provide.transaction.metadata``) a batch boundary may fall between the delete and the create,
   or a delete in another partition be read ahead of the create.

A delete of the old key before the change (not the change's own) ends what its earlier events
say: values from before it are not the row just before the change. Columns still unknown after
all this stay in ``_unavailable`` (the MERGE then keeps what the new key holds, as before): the old
key's events are missing from bronze too (rows deleted from it). They never lie in a partition not
read yet: the ingest holds such a create back until its old key's partition is read to the change
(``lakecdc.ingest.key_move_holds``). Runs only for batches that have such creates (``BatchStats.moved_placeholders``).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from lakecdc.lake.batch import col
from lakecdc.lake.bronze import KEYED_IDENTITY
from lakecdc.lake.frames import arrow_to_spark, spark_to_arrow
from lakecdc.lake.layout import BRONZE_RENAMES

#: Internal op of a stored silver row taken in as the old key's earliest state (never leaves here).
STORED_OP = "s"

#: The stored silver rows of some keys (given as a DataFrame of key columns), or None.
StoredRows = Callable[[DataFrame], "DataFrame | None"]
#: The bronze events of some keys (given as ``_key_json`` values), in bronze's layout, or None.
KeyHistory = Callable[[list[str]], "DataFrame | None"]
#: A key change: (new key, old key, ``_seq``, ``_offset``) of its create.
Link = tuple[str, str, list[int], int]


def _unavailable() -> Column:
    return F.coalesce(F.col("_unavailable"), F.array().cast("array<string>"))


def is_moved_placeholder() -> Column:
    """The create of a key change that still holds placeholders."""
    return F.col("_old_key_json").isNotNull() & (F.size(_unavailable()) > 0)


def arrow_moved_placeholders(rows: pa.Table) -> pa.ChunkedArray:
    """``is_moved_placeholder`` over Arrow rows (never null)."""
    has_unavailable = pc.greater(pc.fill_null(pc.list_value_length(rows.column("_unavailable")), 0), 0)
    return pc.and_(pc.is_valid(rows.column("_old_key_json")), has_unavailable)


def chain_rounds(moves: list[tuple[str, str]]) -> int:
    """Rounds needed: the longest chain of key changes, ``moves`` as (new key, old key) in source order."""
    depth: dict[str, int] = {}
    longest = 0
    for new_key, old_key in moves:
        depth[new_key] = depth.get(old_key, 0) + 1
        longest = max(longest, depth[new_key])
    return longest


def fill_moved_placeholders(rows: DataFrame, keys: tuple[str, ...], columns: list[str],
                            stored_rows: StoredRows | None, key_history: KeyHistory | None = None) -> DataFrame:
    """``rows`` (batch events, truncates removed) with the placeholders of key-change creates filled."""
    links = _links(rows)
    if not links:
        return rows
    values = [c for c in columns if c not in keys]
    events = rows.withColumn("__stored", F.lit(False))
    stored = _stored_states(rows, links, keys, stored_rows)
    if stored is not None:
        events = events.unionByName(stored)
    events = _fill_rounds(events, values, links)
    if key_history is not None:
        # The rare case (source 4): one small job finds the creates still unresolved.
        unresolved = [r[0] for r in events.filter(is_moved_placeholder() & ~F.col("__stored"))
                      .select("_old_key_json").distinct().collect()]
        if unresolved:
            history, history_links = _history_events(rows, unresolved, key_history)
            if history is not None:
                events = _fill_rounds(events.unionByName(history), values, links + history_links)
    return events.filter(~F.col("__stored")).drop("__stored")


def _links(events: DataFrame) -> list[Link]:
    moved = events.filter(is_moved_placeholder()).select("_key_json", "_old_key_json", "_seq", "_offset")
    return [(r[0], r[1], list(r[2]), r[3]) for r in moved.collect()]


def _fill_rounds(events: DataFrame, values: list[str], links: list[Link]) -> DataFrame:
    """``events`` after one round per link of the longest chain.

    A round changes only the creates still holding placeholders (``moving``); the other events
    (``settled``) pass through. Each round's creates are held on the driver (they are the rows
    ``_links`` already collected, now with their filled values): a round reads its input twice
    (states and creates), so chaining rounds lazily doubled the plan per round and the MERGE
    then re-ran every copy of the batch, stored-row and bronze reads (measured: the silver MERGE
    of a batch whose create needed its old key's chain from bronze ran 141 Spark jobs lazily, 4
    with the rounds held)."""
    ordered = sorted(links, key=lambda link: (link[2], link[3]))
    rounds = chain_rounds([(new, old) for new, old, _, _ in ordered])
    if rounds == 0:
        return events
    settled = events.filter(~is_moved_placeholder())
    moving = events.filter(is_moved_placeholder())
    for _ in range(rounds):
        filled = _fill_round(settled.unionByName(moving), values)
        filled = arrow_to_spark(filled.sparkSession, spark_to_arrow(filled), filled.schema)
        settled = settled.unionByName(filled.filter(~is_moved_placeholder()))
        moving = filled.filter(is_moved_placeholder())
    return settled.unionByName(moving)


def _stored_states(rows: DataFrame, links: list[Link], keys: tuple[str, ...],
                   stored_rows: StoredRows | None) -> DataFrame | None:
    """The stored silver rows of the old keys, shaped as events of those keys (op ``s``).

    A soft-deleted row becomes two events at its ``_seq`` (the delete's): its values, then the
    delete, so it is a source only for a create at that same ``_seq`` (its own key change)."""
    if stored_rows is None:
        return None
    old = rows.sparkSession.createDataFrame([(o,) for o in sorted({old for _, old, _, _ in links})],
                                            "_old_key_json string")
    # Typed old keys: from an event of that key in the batch (the change's own delete is one),
    # else parsed from the JSON (exact for the common key types: numbers, text).
    key_struct = StructType([StructField(k, rows.schema[k].dataType, True) for k in keys])
    seen = (rows.filter(F.col("_key_json").isNotNull()).select(F.col("_key_json").alias("_old_key_json"),
                                                                 *[col(k).alias(f"__k_{k}") for k in keys])
            .dropDuplicates(["_old_key_json"]))
    parsed = F.from_json(F.col("_old_key_json"), key_struct)
    old_keys = old.join(seen, "_old_key_json", "left").select(
        "_old_key_json", *[F.coalesce(col(f"__k_{k}"), parsed.getField(k)).alias(k) for k in keys])
    found = stored_rows(old_keys.select(*[col(k) for k in keys]))
    if found is None:
        return None
    found = found.join(old_keys, list(keys))
    deleted = F.coalesce(F.col("_is_deleted"), F.lit(False)) if "_is_deleted" in found.columns else F.lit(False)
    given = {"_op": F.lit(STORED_OP), "_key_json": F.col("_old_key_json"), "_old_key_json": F.lit(None),
             "_unavailable": F.array(), "_offset": F.lit(-2)}
    states = _shaped(rows, found, given)
    marks = _shaped(rows, found.filter(deleted), {**given, "_op": F.lit("d"), "_offset": F.lit(-1)})
    return states.unionByName(marks)


def _shaped(rows: DataFrame, found: DataFrame, given: dict[str, Column]) -> DataFrame:
    """``found`` in the layout of ``rows`` (columns it lacks null), flagged ``__stored``."""
    shaped = []
    for field in rows.schema.fields:
        name = field.name
        if name == "_seq":  # orders the stored event among the batch's events of its key
            shaped.append(col(name))  # (a cast would fail on the arrays' element nullability)
            continue
        value = given.get(name, col(name) if name in found.columns else F.lit(None))
        shaped.append(value.cast(field.dataType).alias(name))
    return found.select(*shaped, F.lit(True).alias("__stored"))


def _history_events(rows: DataFrame, old_keys: list[str],
                    key_history: KeyHistory) -> tuple[DataFrame | None, list[Link]]:
    """The bronze events of ``old_keys`` (and of the keys their own key changes came from) that
    the batch does not hold, shaped as stored events; with the key changes among them."""
    spark = rows.sparkSession
    renamed = {stored: name for name, stored in BRONZE_RENAMES.items()}
    wanted, read = set(old_keys), set()
    parts: list[DataFrame] = []
    links: list[Link] = []
    while wanted:
        read |= wanted
        found = key_history(sorted(wanted))
        if found is None:
            break
        found = found.select(*[col(c).alias(renamed.get(c, c)) for c in found.columns])
        # Held on the driver: a few keys' events, read once instead of by every step below.
        found = arrow_to_spark(spark, spark_to_arrow(found), found.schema)
        part = _shaped(rows, found, {}).join(rows.select(*KEYED_IDENTITY), list(KEYED_IDENTITY), "left_anti")
        parts.append(part)
        found_links = _links(part)
        links += found_links
        wanted = {old for _, old, _, _ in found_links} - read
    if not parts:
        return None, []
    history = parts[0]
    for part in parts[1:]:
        history = history.unionByName(part)
    return history, links


def _fill_round(events: DataFrame, values: list[str]) -> DataFrame:
    """One link: each key-change create takes what its old key held just before it (returns
    those creates only; the other events are unchanged by a round).

    A key's history is cut at each delete (``__epoch``): a state carries only values seen since
    the key's last delete. The create's own delete (the old key's delete at the create's
    ``_seq``) is not a state: what counts is the row just before it."""
    unavailable = _unavailable()
    order = (F.col("_seq").asc(), F.col("_offset").asc())
    so_far = Window.partitionBy("_key_json").orderBy(*order).rowsBetween(Window.unboundedPreceding,
                                                                           Window.currentRow)
    epochs = events.withColumn("__epoch", F.sum(F.when(F.col("_op") == "d", 1).otherwise(0)).over(so_far))
    history = Window.partitionBy("_key_json", "__epoch").orderBy(*order).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    carried = [F.last(F.when((F.col("_op") != "d") & ~F.array_contains(unavailable, c), F.struct(col(c).alias("v"))),
                      ignorenulls=True).over(history).alias(f"__p_{c}") for c in values]
    states = epochs.select(F.col("_key_json").alias("__pk"), F.col("_seq").alias("__pseq"),
                           F.col("_offset").alias("__poff"), (F.col("_op") == "d").alias("__pdel"), *carried)
    moves = events.filter(is_moved_placeholder()).withColumn("__move", F.struct("_partition", "_offset", "__stored"))
    earlier = ((F.col("__pseq") < F.col("_seq"))
               | ((F.col("__pseq") == F.col("_seq")) & (F.col("__poff") < F.col("_offset"))))
    own_delete = F.col("__pdel") & (F.col("__pseq") == F.col("_seq"))
    joined = moves.join(states, (F.col("__pk") == F.col("_old_key_json")) & earlier & ~own_delete, "left")
    newest = Window.partitionBy("__move").orderBy(F.col("__pseq").desc_nulls_last(), F.col("__poff").desc_nulls_last())
    prior = joined.withColumn("__n", F.row_number().over(newest)).filter(F.col("__n") == 1)

    def missing(name: Column) -> Column:
        check = F.lit(True)
        for c in values:
            check = F.when(name == F.lit(c), col(f"__p_{c}").isNull()).otherwise(check)
        return check

    filled = []
    for name in events.columns:
        if name in values:
            take = F.array_contains(unavailable, name) & col(f"__p_{name}").isNotNull()
            filled.append(F.when(take, col(f"__p_{name}").getField("v")).otherwise(col(name)).alias(name))
        elif name == "_unavailable":
            filled.append(F.filter(unavailable, missing).alias(name))
        else:
            filled.append(col(name))
    return prior.select(*filled)
