"""The hand-off between the ingest reader and the table writers: one ``ChangeBatch`` per source table.

The reader side (Kafka -> decoded Debezium events) builds a ``ChangeBatch`` for every source table
that received events in a micro-batch; a ``TableWriter`` applies it to that table's bronze change
log and silver current-state table, recording ``progress`` in the same table commits.

Row layout of ``ChangeBatch.df`` (one row per change event, tombstones already dropped):

- the source table's columns, typed as ``columns`` says: the after image for ``r``/``c``/``u``,
  the before image for ``d`` (at least the key columns), all null for ``t`` (truncate);
- metadata: the columns of ``lakecdc.lake.layout.METADATA_COLUMNS``, in that order (names, types
  and meaning listed there).

Example row (PostgreSQL update of ``inventory.customers`` with an unchanged TOAST column)::

    {"id": 1001, "email": "sally@example.com", "notes": null,
     "_op": "u", "_seq": [24023128, 24023200, 0, 0], "_source_ts_ms": 1700000000123,
     "_tx_id": "571:24023128", "_tx_total_order": 2, "_topic": "shop.inventory.customers",
     "_partition": 0, "_offset": 42, "_ingest_ts": "2026-11-22T09:41:12Z",
     "_unavailable": ["notes"], "_key_json": "{\\"id\\":1001}", "_old_key_json": null}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from lakecdc.lake.layout import HISTORY_SUFFIX, LEDGER_SUFFIX

if TYPE_CHECKING:  # Spark is only needed where a batch is actually built or written
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

    from lakecdc.lake.progress import CommitPositions
    from lakecdc.lake.silver import BatchStats

TableFormat = Literal["iceberg", "delta"]
DeleteMode = Literal["hard", "soft"]

def col(name: str) -> Column:
    """The DataFrame column called ``name``, whatever it holds: a bare ``F.col("a.b")`` reads the
    dot as a struct field and stumbles on backticks, and source columns may have either.

    One column object per name and JVM: a column reference is an unresolved name, bound to no
    DataFrame, so it can be reused; making one is a round trip to the JVM and releasing it another,
    which for a batch's few hundred references was most of building a 40-column table's bronze
    plan (0.16 -> 0.07 s)."""
    from pyspark import SparkContext

    return _column(name, id(SparkContext._gateway))


@lru_cache(maxsize=16384)
def _column(name: str, gateway: int) -> Column:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


@dataclass(frozen=True)
class TableTarget:
    """Where one source table lands, and how.

    ``bronze_table`` / ``silver_table`` are Spark SQL identifiers: ``catalog.schema.table`` (Unity
    Catalog style, used as is) or ``schema.table`` (the writer prefixes its configured catalog).
    The delta-rs writer maps the same names to directories under its warehouse
    (``bronze.shop_inventory_customers`` -> ``<warehouse>/bronze/shop_inventory_customers``).

    ``key_columns`` is empty for a source table without a primary key: such a table gets a bronze
    change log only (the writer logs a warning once) unless key columns are configured.
    """

    topic: str
    connector: str  # "postgres" | "mysql" | "sqlserver" | "oracle"
    database: str | None
    schema: str | None
    table: str
    bronze_table: str
    silver_table: str
    format: TableFormat = "iceberg"
    key_columns: tuple[str, ...] = ()
    delete_mode: DeleteMode = "hard"
    #: ``"scd2"``: keep a history table of every version beside silver (``lakecdc.writers.history``)
    history: Literal["scd2"] | None = None
    track_history_columns: tuple[str, ...] = ()  # only these make a new version (empty: all)
    track_history_except_columns: tuple[str, ...] = ()  # changes only in these update the version in place

    @property
    def source_name(self) -> str:
        """Dotted source name for messages: ``inventory.public.customers``."""
        return ".".join(p for p in (self.database, self.schema, self.table) if p)

    @property
    def has_key(self) -> bool:
        return bool(self.key_columns)

    @property
    def ledger_table(self) -> str:
        """The delete ledger beside silver: keys (and truncates) with the ``_seq`` they were removed at."""
        return self.silver_table + LEDGER_SUFFIX

    @property
    def history_table(self) -> str:
        """The SCD2 history beside silver (``history: scd2``): one row per version of a key."""
        return self.silver_table + HISTORY_SUFFIX


@dataclass(frozen=True)
class ColumnSpec:
    """One source column as the decoder typed it.

    ``data_type`` is a ``pyspark.sql.types.DataType``; ``connect_schema`` is the Kafka Connect
    field schema it came from (``{"type": "int64", "optional": false, "field": "id"}``), kept for
    type-mapping decisions such as decimals without a fixed scale.
    """

    name: str
    data_type: DataType
    nullable: bool = True
    connect_schema: dict[str, Any] | None = None


@dataclass
class ChangeBatch:
    """The changes of one source table in one micro-batch (see the module docstring for ``df``).

    ``progress`` maps each Kafka ``(topic, partition)`` this batch read to the last offset it covers,
    for example ``{("shop.inventory.customers", 0): 41}``; the writer commits it with the data.

    ``event_offsets`` maps the same partitions to the highest offset of an event in ``df``. It can be
    above ``progress``: events of a transaction released after a hold sit behind an earlier
    transaction still held back, and progress stays below that one (``{..: 41}`` progress,
    ``{..: 57}`` events). The writer treats the batch as a replay only when its stored progress
    reaches ``event_offsets`` (empty: ``progress`` is used).

    ``stats`` (optional) are ``df``'s figures when the builder has them already
    (``lakecdc.lake.silver.arrow_batch_stats`` of the rows ``df`` was made from); without them
    the writer computes them with a Spark job.
    """

    table: TableTarget
    columns: list[ColumnSpec]
    df: DataFrame
    progress: dict[tuple[str, int], int] = field(default_factory=dict)
    event_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    stats: BatchStats | None = None
    #: the source positions the table commits record (``lakecdc.lake.progress.CommitPositions``)
    positions: CommitPositions | None = None
    #: events bronze keeps but silver must not apply (``_topic``, ``_partition``, ``_offset``): the
    #: ones pipeline expectations quarantined (``lakecdc.quality.pipeline``)
    held_from_silver: DataFrame | None = None
    #: ``df``'s rows as Arrow, in ``df``'s order, when the driver decoded them (else None): a writer whose
    #: engine takes Arrow uses them instead of collecting ``df`` (``lakecdc.lake.bronze_arrow``)
    rows: pa.Table | None = None

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


@dataclass(frozen=True)
class ApplyResult:
    """What one ``TableWriter.apply`` did to one source table's tables.

    ``skipped`` is true when the tables already held this batch (a replay): nothing was written.
    ``bronze_version`` / ``silver_version`` are the Iceberg snapshot id or Delta version committed
    (None when that table was not written). ``schema_changes`` lists what evolution did, in words.
    """

    table: TableTarget
    batch_id: int
    events: int
    bronze_rows: int
    silver_upserts: int
    silver_deletes: int
    skipped: bool = False
    bronze_version: int | None = None
    silver_version: int | None = None
    max_seq: tuple[int, ...] | None = None
    max_source_ts_ms: int | None = None
    schema_changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0
