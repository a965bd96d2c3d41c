"""Where quality checks run: the query engine of the table's format, never pandas on the driver.

Rules are SQL the engine runs next to the data; only counts and a bounded sample of failing rows
come back (``Engine.sql`` is for small results). Two engines, one SQL with a few dialect hooks:

- ``SparkEngine``: Iceberg tables, and Delta tables when the session has Delta's Spark jars
  (``lakecdc.writers.base.delta_in_session``). Spark spills sorts and aggregates to disk, so the
  driver's memory does not bound the table.
- ``DataFusionEngine``: Delta tables without Delta in Spark (the delta-rs writer's tables). It runs
  Apache DataFusion in this process on delta-rs's table provider (``DeltaTable`` implements
  ``__datafusion_table_provider__``, so file pruning and deletion vectors are delta-rs's own) with a
  bounded spill pool (``memory_mb``): sorts and grouped aggregates go to disk beyond it. Chosen over
  Spark for these tables because it needs no JVM and no Delta jars (the main Spark session here has
  none), and over delta-rs's ``QueryBuilder`` because that one has no memory limit: a window over a
  1M-row table took the whole table into memory.

Example::

    engine = engine_for(LakeTable.delta("/lake", "silver.orders"))
    engine.register("silver", table)
    engine.sql("SELECT count(*) AS n FROM silver").to_pylist()   # [{"n": 1000000}]
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol

from lakecdc.audit.tables import LakeTable, spark_to_arrow
from lakecdc.errors import MissingExtraError
from lakecdc.spark.session import compiled

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

SEQ_PARTS = 4  # _seq is array<bigint> of 4 (docs/CONTRACTS.md)
NULL_TEXT = "\u2205"  # how a null takes part in a row hash (never equal to a stored text)


class Engine(Protocol):
    name: str

    def view(self, name: str) -> str: ...
    def register(self, view: str, table: LakeTable, version: int | None = None) -> None: ...
    def register_arrow(self, view: str, rows: pa.Table) -> None: ...
    def sql(self, query: str, small_join: bool = False) -> pa.Table: ...
    def schema(self, view: str) -> pa.Schema: ...
    def quote(self, name: str) -> str: ...
    def seq_key(self, column: str = "_seq") -> str: ...
    def row_hash(self, columns: list[tuple[str, pa.DataType]], prefix: str = "") -> str: ...
    def seq_part(self, column: str, index: int) -> str: ...
    def text(self, expr: str, type_: pa.DataType) -> str: ...
    def newest(self, expr: str, order: list[str]) -> str: ...
    def contains(self, array: str, value: str) -> str: ...
    def explode(self, array: str) -> str: ...
    def literal(self, value: str) -> str: ...


class _Common:
    def seq_key(self: Any, column: str = "_seq") -> str:
        """One sortable text per position: its parts zero-padded (positions are never negative), so
        string order is the position's order and ``max``/``<`` work in every engine."""
        parts = [f"lpad(cast({self.seq_part(column, i)} AS {self.string}), 20, '0')" for i in range(SEQ_PARTS)]
        return f"concat_ws('.', {', '.join(parts)})"

    def row_hash(self: Any, columns: list[tuple[str, pa.DataType]], prefix: str = "") -> str:
        """md5 of the columns' texts (null as ``NULL_TEXT``), computed by the engine."""
        if not columns:
            return "md5('')"
        texts = [f"coalesce({self.text(prefix + self.quote(c), t)}, '{NULL_TEXT}')" for c, t in columns]
        return f"md5(concat_ws(chr(31), {', '.join(texts)}))"

    def literal(self: Any, value: str) -> str:
        return "'" + value.replace("'", "''") + "'"


class SparkEngine(_Common):
    """Spark SQL; tables become temporary views named per check (several checks may share a session)."""

    name = "spark"
    string = "string"

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._tag = uuid.uuid4().hex[:8]

    def view(self, name: str) -> str:
        return f"q_{name}_{self._tag}"

    def register(self, view: str, table: LakeTable, version: int | None = None) -> None:
        if table.format == "iceberg":
            df = table.spark_df(version)
        else:
            reader = self.spark.read.format("delta")
            df = (reader.option("versionAsOf", version) if version is not None else reader).load(table.uri)
        df.createOrReplaceTempView(self.view(view))

    def register_arrow(self, view: str, rows: pa.Table) -> None:
        from pyspark.sql.pandas.types import from_arrow_schema

        self.spark.createDataFrame(rows.to_pylist(), from_arrow_schema(rows.schema)).createOrReplaceTempView(
            self.view(view))

    def sql(self, query: str, small_join: bool = False) -> pa.Table:
        # a rule reads whole tables: compiled code, whatever the session runs its micro-batches with
        with compiled(self.spark):
            return spark_to_arrow(self.spark.sql(query))  # Spark broadcasts a small side on its own

    def schema(self, view: str) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(self.spark.table(self.view(view)).schema)

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def seq_part(self, column: str, index: int) -> str:
        return f"{column}[{index}]"

    def text(self, expr: str, type_: pa.DataType) -> str:
        return f"cast({expr} AS string)"

    def newest(self, expr: str, order: list[str]) -> str:
        return f"max_by({expr}, struct({', '.join(order)}))"

    def contains(self, array: str, value: str) -> str:
        return f"array_contains({array}, {value})"

    def explode(self, array: str) -> str:
        return f"explode({array})"


class DataFusionEngine(_Common):
    """DataFusion in this process with a spill pool of ``memory_mb`` (see the module doc)."""

    name = "datafusion"
    string = "varchar"

    def __init__(self, memory_mb: int = 256) -> None:
        try:
            from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext
        except ImportError as error:
            raise MissingExtraError("quality checks on Delta tables", "quality", str(error)) from error
        runtime = RuntimeEnvBuilder().with_disk_manager_os().with_fair_spill_pool(memory_mb * 1024 * 1024)
        # sort-merge joins spill to disk beyond the pool; hash joins would fail instead
        config = SessionConfig().with_target_partitions(2).set("datafusion.optimizer.prefer_hash_join", "false")
        self.context = SessionContext(config, runtime)

    def view(self, name: str) -> str:
        return f"q_{name}"

    def register(self, view: str, table: LakeTable, version: int | None = None) -> None:
        self._drop(view)
        self.context.register_table(self.view(view), table.delta_table(version))

    def register_arrow(self, view: str, rows: pa.Table) -> None:
        self._drop(view)
        self.context.from_arrow(rows, self.view(view))

    def _drop(self, view: str) -> None:
        if self.context.table_exist(self.view(view)):
            self.context.deregister_table(self.view(view))

    def sql(self, query: str, small_join: bool = False) -> pa.Table:
        """``small_join``: one side of the query's join is a small in-memory table: a hash join
        builds on it and streams the large side (a sort-merge join would sort the large side's rows)."""
        import pyarrow as pa

        if small_join:
            self.context.sql("SET datafusion.optimizer.prefer_hash_join = true")
        try:
            rows = self.context.sql(query).to_arrow_table()
        finally:
            if small_join:
                self.context.sql("SET datafusion.optimizer.prefer_hash_join = false")
        return rows.cast(pa.schema([pa.field(f.name, _plain(f.type), f.nullable) for f in rows.schema]))

    def schema(self, view: str) -> pa.Schema:
        import pyarrow as pa

        return pa.schema(self.context.table(self.view(view)).schema())

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def seq_part(self, column: str, index: int) -> str:
        return f"{column}[{index + 1}]"

    def text(self, expr: str, type_: pa.DataType) -> str:
        """DataFusion casts lists and scalars to text but not structs: those are spelled field by field."""
        import pyarrow as pa

        if pa.types.is_struct(type_):
            fields = [f"coalesce({self.text(f'get_field({expr}, {self.literal(f.name)})', f.type)}, '{NULL_TEXT}')"
                      for f in type_]
            return f"CASE WHEN {expr} IS NULL THEN NULL ELSE concat_ws(chr(30), {', '.join(fields)}) END"
        return f"cast({expr} AS varchar)"

    def newest(self, expr: str, order: list[str]) -> str:
        return f"last_value({expr} ORDER BY {', '.join(order)})"

    def contains(self, array: str, value: str) -> str:
        return f"array_has({array}, {value})"

    def explode(self, array: str) -> str:
        return f"unnest({array})"


def _plain(type_: pa.DataType) -> pa.DataType:
    """DataFusion answers with view types (``string_view``) that pandas cannot convert inside lists."""
    import pyarrow as pa

    if type_ == pa.string_view():
        return pa.string()
    if type_ == pa.binary_view():
        return pa.binary()
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return pa.list_(_plain(type_.value_type))
    if pa.types.is_struct(type_):
        return pa.struct([pa.field(f.name, _plain(f.type), f.nullable) for f in type_])
    return type_


def engine_for(table: LakeTable, memory_mb: int = 256) -> SparkEngine | DataFusionEngine:
    """Spark for Iceberg and for Delta when the table's session has Delta; DataFusion otherwise."""
    if table.format == "iceberg":
        return SparkEngine(table.session)
    if table.spark is not None:
        from lakecdc.writers.base import delta_in_session

        if delta_in_session(table.spark):
            return SparkEngine(table.spark)
    return DataFusionEngine(memory_mb)
