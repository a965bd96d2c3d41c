"""What the Spark SQL writers (Iceberg, Delta in Spark) share: names, bronze anti-join, MERGE.

Both formats run the same statements, rendered from ``lakecdc.lake.merge_plan``; they differ in
DDL, in how commit properties reach the table commit (``_committing``), and in how a table's
commit history is read back (``commit_properties``).
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from lakecdc.errors import TerminalError
from lakecdc.lake.batch import TableTarget, col
from lakecdc.lake.bronze import bronze_columns, spark_new_rows
from lakecdc.lake.frames import arrow_to_spark, spark_to_arrow
from lakecdc.lake.history_plan import ACTION, HistoryPlan, render_history_spark_sql
from lakecdc.lake.key_ranges import ranges_predicate
from lakecdc.lake.layout import LEDGER_META
from lakecdc.lake.merge_plan import SPARK, MergePlan, render_spark_sql
from lakecdc.writers.base import DEAD_LETTER_POSITION, LakeWriter

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession


def quote(name: str) -> str:
    """A Spark SQL identifier (column, or one part of a table name), escaped."""
    return SPARK.quoted(name)


def column_ddl(schema: StructType) -> str:
    return ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)


class SparkSqlWriter(LakeWriter):
    """A writer whose tables Spark itself reads and writes through a catalog."""

    def __init__(self, spark: SparkSession, catalog: str | None = None,
                 dead_letter_table: str = "lakecdc.dead_letters") -> None:
        super().__init__(spark, dead_letter_table)
        self.catalog = catalog
        # Delete ledgers known to hold no delete (``_has_deletes``): this job is their only writer.
        self._ledgers_without_deletes: set[str] = set()

    def resolve(self, name: str) -> str:
        """``schema.table`` -> ``<catalog>.schema.table``; three-part names are used as is. Every
        part is quoted: names come from configuration and topics, and SQL statements,
        ``spark.table`` and ``writeTo`` all parse them."""
        return ".".join(quote(part) for part in self._parts(name))

    def _parts(self, name: str) -> list[str]:
        parts = name.split(".")
        if len(parts) == 2 and all(parts):
            return [self.catalog, *parts] if self.catalog else parts
        if len(parts) == 3 and all(parts):
            return parts
        raise TerminalError(f"table name {name!r} must be schema.table or catalog.schema.table")

    @abstractmethod
    def _committing(self, props: dict[str, str], table: str, batch_id: int | None) -> AbstractContextManager[None]:
        """While open, statements on this thread commit with ``props`` (and the batch id)."""

    @abstractmethod
    def _last_commit(self, name: str) -> tuple[int | None, dict[str, int]]:
        """(version or snapshot id, operation metrics) of the table's newest commit."""

    @abstractmethod
    def _append_options(self, props: dict[str, str], table: str, batch_id: int) -> dict[str, str]:
        """DataFrameWriterV2 options that put ``props`` into an append's commit."""

    def _table_schema(self, name: str) -> StructType | None:
        full = self.resolve(name)
        if not self.spark.catalog.tableExists(full):
            return None
        return self.spark.table(full).schema

    def _ensure_namespace(self, name: str) -> None:
        namespace = ".".join(quote(part) for part in self._parts(name)[:-1])
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")

    def _append_bronze(self, target: TableTarget, rows: DataFrame, ts_range: tuple[int, int] | None,
                       props: dict[str, str], batch_id: int, arrow: pa.Table | None = None) -> tuple[int, int | None]:
        full = self.resolve(target.bronze_table)
        meta = set(bronze_columns([]))
        row_names = [c for c in rows.columns if c not in meta]
        fresh = spark_new_rows(rows, row_names, self.spark.table(full) if ts_range else None, ts_range,
                               target.connector)
        writer = fresh.writeTo(full)
        for key, value in self._append_options(props, target.bronze_table, batch_id).items():
            writer = writer.option(key, value)
        writer.append()
        version, metrics = self._last_commit(target.bronze_table)
        return metrics.get("appended", 0), version

    def _run_merge(self, sql_for_view: str, source: DataFrame, view: str) -> None:
        source.createOrReplaceTempView(view)
        try:
            self.spark.sql(sql_for_view)
        finally:
            self.spark.catalog.dropTempView(view)

    def _append_ledger(self, target: TableTarget, rows: DataFrame) -> None:
        # first: an append that fails may still have committed
        self._ledgers_without_deletes.discard(target.ledger_table)
        rows.writeTo(self.resolve(target.ledger_table)).append()

    def _stored_silver(self, target: TableTarget, keys: DataFrame) -> DataFrame | None:
        stored = self.spark.table(self.resolve(target.silver_table))
        return stored.join(F.broadcast(keys), on=list(target.key_columns), how="left_semi")

    def _bronze_events(self, target: TableTarget, key_json: list[str]) -> DataFrame | None:
        # file statistics on _key_json prune what they can; the filter is exact
        return self.spark.table(self.resolve(target.bronze_table)).filter(F.col("_key_json").isin(key_json))

    def _merge_silver(self, target: TableTarget, source: DataFrame, plan: MergePlan,
                      props: dict[str, str], batch_id: int, batch_keys: DataFrame) -> tuple[int, int, int | None]:
        guarded = (source.join(self._removals(target, plan, batch_keys), on=list(target.key_columns), how="left")
                   if self._has_deletes(target.ledger_table)
                   else source.withColumn("_removed_seq", F.lit(None).cast(dict(LEDGER_META)["_seq"])))
        view = f"lakecdc_silver_{abs(hash(target.silver_table))}"
        with self._committing(props, target.silver_table, batch_id):
            self._run_merge(render_spark_sql(plan, self.resolve(target.silver_table), view), guarded, view)
        version, metrics = self._last_commit(target.silver_table)
        return metrics.get("written", 0), metrics.get("removed", 0), version

    def _has_deletes(self, ledger: str) -> bool:
        """Whether the ledger holds a delete: until one of a table's keys is deleted, its MERGE source
        needs no ledger join (planning and running it on an empty table cost a batch ~0.1 s). A
        ledger without one is read again only after ``_append_ledger``."""
        if ledger in self._ledgers_without_deletes:
            return False
        if self.spark.table(self.resolve(ledger)).filter(F.col("_op") == "d").isEmpty():
            self._ledgers_without_deletes.add(ledger)
            return False
        return True

    def _removals(self, target: TableTarget, plan: MergePlan, batch_keys: DataFrame) -> DataFrame:
        """``_removed_seq`` of the batch's keys: the ``_seq`` of each one's newest delete in the ledger."""
        ledger = self.spark.table(self.resolve(target.ledger_table)).filter(F.col("_op") == "d")
        if plan.key_ranges:
            ledger = ledger.filter(ranges_predicate(quote(target.key_columns[0]), plan.key_ranges,
                                                    SPARK.string_literal))
        # Only the batch's keys' removals matter: the semi join (broadcast when the batch is small)
        # keeps the ledger's other rows out of the shuffle and the aggregate, whose cost would
        # otherwise grow with every delete ever recorded. The batch's cached keys rather than the
        # MERGE source's, which would compute the source's window a second time.
        keys = list(target.key_columns)
        ledger = ledger.join(batch_keys, on=keys, how="left_semi")
        return ledger.groupBy(*[col(k) for k in keys]).agg(F.max("_seq").alias("_removed_seq"))

    def _read_arrow(self, name: str, keys: tuple[str, ...], wanted: pa.Table | None,
                    truncates: bool = False) -> pa.Table:
        stored = self.spark.table(self.resolve(name))
        rows = stored
        if wanted is not None:
            key_schema = StructType([stored.schema[k] for k in keys])
            typed = wanted.select(list(keys)).cast(to_arrow_schema(key_schema))
            wanted_df = arrow_to_spark(self.spark, typed, key_schema)
            rows = stored.join(F.broadcast(wanted_df), on=list(keys), how="left_semi")
            if truncates:
                rows = rows.unionByName(stored.filter(F.col("_op") == "t"))
        return spark_to_arrow(rows)

    def _merge_history(self, target: TableTarget, source: pa.Table, plan: HistoryPlan, props: dict[str, str],
                       batch_id: int) -> int | None:
        stored = self._table_schema(target.history_table)
        assert stored is not None
        schema = StructType([*stored.fields, StructField(ACTION, StringType())])
        view = f"lakecdc_history_{abs(hash(target.history_table))}"
        if source.num_rows or plan.truncate_seq is not None:  # else nothing to change: progress only
            with self._committing(props, target.history_table, batch_id):
                self._run_merge(render_history_spark_sql(plan, self.resolve(target.history_table), view),
                                arrow_to_spark(self.spark, source, schema), view)
        committed = self.commit_properties(target.history_table)
        if any(committed.get(k) != v for k, v in props.items()):
            # the MERGE changed nothing and made no commit: the progress goes in an empty append
            writer = self.spark.createDataFrame([], stored).writeTo(self.resolve(target.history_table))
            for key, value in self._append_options(props, target.history_table, batch_id).items():
                writer = writer.option(key, value)
            writer.append()
        return self._last_commit(target.history_table)[0]

    def _stored_positions(self, name: str, topics: list[str]) -> DataFrame | None:
        stored = self.spark.table(self.resolve(name))
        return stored.filter(F.col("topic").isin(topics)).select(*DEAD_LETTER_POSITION)

    def _append_rows(self, name: str, rows: DataFrame) -> int:
        count = rows.count()
        rows.writeTo(self.resolve(name)).append()
        return count

    def _append_log(self, name: str, schema: StructType, rows: list[tuple[Any, ...]]) -> None:
        self.spark.createDataFrame(rows, schema).writeTo(self.resolve(name)).append()
