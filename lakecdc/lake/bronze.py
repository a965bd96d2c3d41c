"""Bronze: the append-only change log of one source table; every source change exactly once.

Identity. A bronze row is one event, identified by ``(_seq, _op, _key_json, _row_hash,
_occurrence)``: its source position, operation and key, a hash of its row image (``_row_hash``:
xxhash64 of the row's non-null columns as JSON, so an event re-sent with more columns in its batch,
all null, hashes the same), and an ordinal (``_occurrence``). Two ways an event reaches the job
twice must add nothing, and neither may drop a distinct event:

- a replay: the job re-reads Kafka offsets it already applied (a crash between the bronze and
  silver commits, a restart from an older checkpoint). The record is the same Kafka record:
  ``(_topic, _kafka_partition, _offset)`` is stored already, and that alone removes it.
- a re-send: the capture re-sends an event at a new Kafka offset after its own crash (Kafka
  Connect's at-least-once delivery; lakecdc's coordinator re-sends what follows its stored offset).

Streaming events (``c``/``u``/``d``/``t``) and snapshot reads of keyed tables carry a position that
no other change of the table shares: PostgreSQL's event LSN, MySQL's binlog file/position/row,
SQL Server's change LSN + sequence value + event serial, Oracle's SCN/RS_ID/SSN -- or, for a
snapshot read, the row's key. For them ``_occurrence`` is 0, and an event whose
``(_seq, _op, _key_json, _row_hash)`` is stored is a re-send.

Snapshot reads (``r``) of a table without a key have neither: every row of one snapshot shares
the snapshot's position, and identical rows are identical events, which must all be kept. Their
``_occurrence`` numbers the rows of one ``(_seq, _op, _row_hash)`` group in the order they were
delivered (Kafka partition, offset), continuing from the highest one bronze holds: a group split
across micro-batches numbers on (its first part is stored when the second is read), and a replay
is removed by its Kafka position before counting, so it cannot shift the numbers. Such a row
cannot be told from a re-send by anything it carries -- a table holding the row twice and a
capture sending it twice produce the same records -- so these rows are identified by delivery,
not content: a re-sent one is kept. This is how interrupted snapshots behave in practice, so
nothing is lost and no duplicate is made by the captures lakecdc reads:

- lakecdc's coordinator stores the snapshot's offset only after every row is durable; a crash
  mid-snapshot restarts the snapshot from the first table. PostgreSQL's restart drops and
  recreates the slot, so its rows carry a new consistent point (a new ``_seq``): a second,
  complete reading, kept as such (as for keyed tables, whose key does not match across positions).
- Debezium restarts an interrupted initial snapshot from the start too (its offsets mark the
  snapshot incomplete until the last row; "if interrupted, it must be executed from start",
  DDD-3), at the position it reads then, with a new ``source.ts_ms`` (the source's current time,
  per table: ``getSnapshotSourceTimestamp``). The rows it re-sends are a new reading; where the
  position did not move (MySQL or SQL Server without writes meanwhile) they share ``_seq`` with the
  first reading and are kept as a second reading of those rows.
- What remains is an identical record delivered twice by one run: a non-idempotent producer's
  retry (lakecdc's transport and Kafka Connect since Kafka 3.0 enable idempotence) -- kept twice.

Numbering needs bronze's stored groups: the anti-join reads the bronze rows whose
``_source_ts_ms`` lies in the batch's range (a re-send and the rest of a group have the same
source timestamp), so file statistics prune the scan to the newest files. When bronze's last commit
says that everything it holds is older than the batch (``stored_window``), there is nothing to read
and the anti-join is left out: planning and running it was a third of a one-event batch on Iceberg.
Tables written before these columns existed get them by schema evolution (null in old rows): an old
row without a hash still identifies its events by ``(_seq, _op, _key_json)``, as it did.

Iceberg bronze is partitioned by ``days(_ingest_ts)``; Delta bronze by the ``_ingest_date`` column
(Delta has no hidden partitioning).

For PostgreSQL the identity compares ``_seq`` without its rank (``event_position``): the commit-LSN
rank depends on whether the job read the transaction's END marker, the event LSN does not.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakecdc.lake.batch import col
from lakecdc.lake.layout import (
    BRONZE_IDENTITY_COLUMNS,
    BRONZE_RENAMES,
    METADATA_COLUMNS,
    OCCURRENCE,
    ROW_HASH,
)
from lakecdc.lake.progress import CommitProgress

#: What identifies a bronze row (see the module docstring).
IDENTITY = ("_seq", "_op", "_key_json", ROW_HASH, OCCURRENCE)
#: What identifies an event of a keyed table (a key and a position): key changes match batch rows by it.
KEYED_IDENTITY = ("_seq", "_op", "_key_json")
#: The Kafka record a bronze row came from: what a replay repeats.
KAFKA_POSITION = ("_topic", "_kafka_partition", "_offset")
#: The bronze columns ``spark_new_rows`` reads from stored rows.
STORED_IDENTITY = ("_seq", "_op", "_key_json", "_source_ts_ms", ROW_HASH, OCCURRENCE, *KAFKA_POSITION)
#: JSON options of the row hash: the same text whatever the session's time zone.
_HASH_JSON = {"timeZone": "UTC", "ignoreNullFields": "true"}


def stored_window(done: CommitProgress | None, min_ts: int | None, max_ts: int | None) -> tuple[int, int] | None:
    """The ``_source_ts_ms`` range of the stored bronze rows that may hold a batch's events again (a
    replay or a re-send keeps its first copy's source timestamp), or None when none can.

    ``done`` is bronze's last lakecdc commit: its ``max_source_ts_ms`` is the newest source timestamp
    of every event bronze ever took (cumulative, ``CommitProgress.advanced``), so a batch whose oldest
    event is newer repeats nothing stored. Without that commit (a new table, or one whose lakecdc
    commits lie beyond ``PROGRESS_LOOKBACK`` maintenance commits) the range is read.

    >>> stored_window(CommitProgress(max_source_ts_ms=1000), 1001, 1500) is None
    True
    >>> stored_window(CommitProgress(max_source_ts_ms=1000), 1000, 1500)
    (1000, 1500)
    >>> stored_window(None, 1001, 1500)
    (1001, 1500)
    """
    if min_ts is None or max_ts is None:
        return None
    if done is not None and done.max_source_ts_ms is not None and done.max_source_ts_ms < min_ts:
        return None
    return min_ts, max_ts


def bronze_columns(row_columns: list[str]) -> list[str]:
    return [*row_columns, *(BRONZE_RENAMES.get(name, name) for name, _ in METADATA_COLUMNS),
            *(name for name, _ in BRONZE_IDENTITY_COLUMNS)]


def to_bronze_layout(batch: DataFrame, row_columns: list[str]) -> DataFrame:
    """The batch's rows as bronze stores them: row columns, metadata (renamed where needed), the
    row hash, and ``_occurrence`` still null (``spark_new_rows`` numbers the rows)."""
    return batch.select(*[col(c) for c in row_columns], *(F.col(name).alias(BRONZE_RENAMES.get(name, name))
                                        for name, _ in METADATA_COLUMNS),
                        row_hash(row_columns).alias(ROW_HASH), F.lit(None).cast("bigint").alias(OCCURRENCE))


def row_hash(row_columns: list[str]) -> Column:
    """xxhash64 of the row image as JSON: columns by name (sorted), null ones left out."""
    if not row_columns:
        return F.xxhash64(F.lit("{}"))
    return F.xxhash64(F.to_json(F.struct(*[col(c) for c in sorted(row_columns)]), _HASH_JSON))


def _key() -> Column:
    """An event's key for matching: ``_key_json`` is null for truncates and keyless tables."""
    return F.coalesce(F.col("_key_json"), F.lit(""))


def _counted() -> Column:
    """The events numbered by delivery: snapshot reads without a key."""
    return (F.col("_op") == "r") & F.col("_key_json").isNull()


def event_position(connector: str) -> Column:
    """The part of ``_seq`` that names an event whatever its rank: a PostgreSQL event's ``_seq[0]`` is
    raised to its transaction's commit LSN only when the job read the END marker
    (``ordering.rank_by_commit``), so a re-sent copy read without it ranks lower; its LSN and index
    (``_seq[1:]``) name it alike every time. Other connectors' ``_seq`` is never re-ranked."""
    return F.slice("_seq", 2, 3) if connector == "postgres" else F.col("_seq")


def spark_new_rows(batch: DataFrame, row_columns: list[str], stored: DataFrame | None,
                   ts_range: tuple[int, int] | None, connector: str = "") -> DataFrame:
    """The batch's events (in bronze layout) not yet in bronze, with ``_occurrence`` set.

    ``stored`` is the bronze table (or its ``STORED_IDENTITY`` columns), None when new; ``ts_range`` the
    source-time range of its rows that may repeat the batch's events (``stored_window``); ``connector``
    (``TableTarget.connector``) says which part of ``_seq`` names an event (``event_position``).
    """
    columns = bronze_columns(row_columns)
    counted = _counted()
    # Every DataFrame step is analysed by the JVM as it is built, which on a small batch costs more
    # than running the plan: the common case -- nothing stored can repeat the batch -- is three steps
    # (building the plan for a 10-column table: 0.22 -> 0.08 s from a dozen), the rare one adds joins.
    group = [F.col("__pos"), F.col("_op"), F.col(ROW_HASH), F.col("__counted")]
    rows = batch.select(*[col(c) for c in columns if c != OCCURRENCE], event_position(connector).alias("__pos"),
                        _key().alias("__key"), counted.alias("__counted"))
    # One row per event: a re-sent event within the batch keeps its first delivery, a Kafka record
    # of a counted event is one event. (A window is cheaper here than dropDuplicates, whose
    # aggregate carries every column through ``first``.)
    delivery = F.when(F.col("__counted"), F.concat_ws(":", "_topic", "_kafka_partition", "_offset"))
    first = Window.partitionBy(*group, "__key", delivery).orderBy("_kafka_partition", "_offset")
    rows = rows.withColumn("__n", F.row_number().over(first)).filter(F.col("__n") == 1)
    next_occurrence: Column = F.lit(0)
    if stored is not None and ts_range is not None:
        rows, next_occurrence = _not_stored(rows, stored, ts_range, connector)
    in_batch = Window.partitionBy(*group).orderBy("_kafka_partition", "_offset")
    occurrence = F.when(F.col("__counted"), next_occurrence + F.row_number().over(in_batch) - 1).otherwise(0)
    return rows.select(*[occurrence.cast("bigint").alias(c) if c == OCCURRENCE else col(c) for c in columns])


def _not_stored(rows: DataFrame, stored: DataFrame, ts_range: tuple[int, int],
                connector: str) -> tuple[DataFrame, Column]:
    """``rows`` without the events ``stored`` holds (replays by Kafka position, re-sends of positioned
    events by identity), and the column that continues the numbering of stored counted groups."""
    window = (stored.filter(F.col("_source_ts_ms").between(*ts_range)).select(*STORED_IDENTITY)
              .withColumn("__pos", event_position(connector)))
    rows = rows.join(window.select(*KAFKA_POSITION).distinct(), list(KAFKA_POSITION), "left_anti")  # replays
    stored_key = _key().alias("__key")
    hashed = (window.filter(F.col(ROW_HASH).isNotNull()).select("__pos", "_op", stored_key, ROW_HASH).distinct()
              .withColumn("__counted", F.lit(False)))
    legacy = (window.filter(F.col(ROW_HASH).isNull()).select("__pos", "_op", stored_key).distinct()
              .withColumn("__counted", F.lit(False)))
    rows = (rows.join(hashed, ["__pos", "_op", "__key", ROW_HASH, "__counted"], "left_anti")
            .join(legacy, ["__pos", "_op", "__key", "__counted"], "left_anti"))
    numbered_before = (window.filter(_counted() & F.col(ROW_HASH).isNotNull() & F.col(OCCURRENCE).isNotNull())
                       .groupBy("__pos", "_op", ROW_HASH).agg((F.max(OCCURRENCE) + 1).alias("__next"))
                       .withColumn("__counted", F.lit(True)))
    rows = rows.join(numbered_before, ["__pos", "_op", ROW_HASH, "__counted"], "left")
    return rows, F.coalesce(F.col("__next"), F.lit(0))
