"""One handle over an Iceberg (Spark SQL) or Delta (delta-rs) table, for audits and quality checks.

``LakeTable`` names a table the way the writers do (``silver.customers``) and knows how to reach it:
Iceberg through a SparkSession's catalog, Delta through its directory under the warehouse
(``<warehouse>/silver/customers``, the mapping ``lakecdc.writers.delta_rs`` uses). Reads come back
as pandas DataFrames, the form analysts work with, whatever the format.

Example::

    customers = LakeTable.iceberg(spark, "silver.customers")
    orders = LakeTable.delta("/lake", "silver.orders")
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lakecdc.errors import TerminalError
from lakecdc.lake.layout import LEDGER_SUFFIX, META_COLUMNS
from lakecdc.lake.merge_plan import SPARK

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

AuditFormat = Literal["iceberg", "delta"]


#: rows of table versions read lately (``LakeTable.arrow``), oldest first
_VERSION_CACHE: dict[tuple[Any, ...], pa.Table] = {}
_CACHED_VERSIONS = 64


class AuditError(TerminalError):
    """An audit question the table cannot answer (no such version, position not reached yet...)."""


@dataclass(frozen=True)
class LakeTable:
    """Where one bronze or silver table lives. Build with ``LakeTable.iceberg`` / ``LakeTable.delta``."""

    name: str
    format: AuditFormat
    spark: SparkSession | None = None
    catalog: str | None = "lake"
    warehouse: str | None = None
    storage_options: dict[str, str] | None = None

    @classmethod
    def iceberg(cls, spark: SparkSession, name: str, catalog: str | None = "lake") -> LakeTable:
        return cls(name=name, format="iceberg", spark=spark, catalog=catalog)

    @classmethod
    def delta(cls, warehouse: str | Path, name: str, storage_options: dict[str, str] | None = None) -> LakeTable:
        return cls(name=name, format="delta", warehouse=str(warehouse), storage_options=storage_options)

    @classmethod
    def open(cls, name: str, format: str, *, spark: SparkSession | None = None, warehouse: str | Path | None = None,
             catalog: str | None = "lake") -> LakeTable:
        """``format`` ``iceberg`` needs ``spark``; ``delta`` / ``delta-rs`` need ``warehouse``."""
        if format == "iceberg":
            if spark is None:
                raise AuditError(f"table {name}: Iceberg tables are read through Spark; pass a session")
            return cls.iceberg(spark, name, catalog)
        if format in ("delta", "delta-rs"):
            if warehouse is None:
                raise AuditError(f"table {name}: Delta tables are read from a warehouse directory; pass one")
            return cls.delta(warehouse, name)
        raise AuditError(f"table {name}: unknown format {format!r} (use iceberg or delta)")

    def sibling(self, name: str) -> LakeTable:
        """The same catalog or warehouse, another table (silver -> its ledger, bronze, quarantine)."""
        return replace(self, name=name)

    # -- names -------------------------------------------------------------------------------
    @property
    def qualified(self) -> str:
        """Iceberg: the Spark SQL name, each part quoted (```lake`.`silver`.`customers```)."""
        return ".".join(SPARK.quoted(part) for part in self.parts)

    @property
    def parts(self) -> list[str]:
        """Iceberg: catalog, namespace and table, unquoted (a part may hold spaces or quotes: the
        writers split names the same way, on the dots)."""
        parts = self.name.split(".")
        if len(parts) == 2 and all(parts):
            return [self.catalog, *parts] if self.catalog else parts
        if len(parts) == 3 and all(parts):
            return parts
        raise AuditError(f"table name {self.name!r} must be schema.table or catalog.schema.table")

    @property
    def uri(self) -> str:
        """Delta: the table directory (``<warehouse>/silver/customers``)."""
        parts = self.name.split(".")
        if not 2 <= len(parts) <= 3 or not all(parts) or self.warehouse is None:
            raise AuditError(f"table name {self.name!r} must be schema.table or catalog.schema.table")
        if "://" in self.warehouse:
            return "/".join([self.warehouse.rstrip("/"), *parts])
        return str(Path(self.warehouse, *parts))

    def __str__(self) -> str:
        return f"{self.format} table {self.name}"

    # -- access ------------------------------------------------------------------------------
    @property
    def session(self) -> SparkSession:
        if self.spark is None:
            raise AuditError(f"{self}: no Spark session to read it with")
        return self.spark

    def exists(self) -> bool:
        if self.format == "iceberg":
            return bool(self.session.catalog.tableExists(self.qualified))
        from deltalake import DeltaTable
        return bool(DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options))

    def delta_table(self, version: int | str | datetime | None = None) -> DeltaTable:
        from deltalake import DeltaTable
        if not self.exists():
            raise AuditError(f"{self} does not exist at {self.uri}")
        table = DeltaTable(self.uri, storage_options=self.storage_options)
        if version is not None:
            table.load_as_version(version)
        return table

    def spark_df(self, version: int | None = None, timestamp: datetime | None = None) -> DataFrame:
        """Iceberg: the table (or one snapshot of it) as a Spark DataFrame."""
        if not self.exists():
            raise AuditError(f"{self} does not exist")
        if version is not None:
            return self.session.sql(f"SELECT * FROM {self.qualified} VERSION AS OF {int(version)}")
        if timestamp is not None:
            literal = timestamp.isoformat(sep=" ")
            return self.session.sql(f"SELECT * FROM {self.qualified} TIMESTAMP AS OF '{literal}'")
        return self.session.table(self.qualified)

    def arrow(self, version: int | None = None, timestamp: datetime | None = None) -> pa.Table:
        """The whole table (optionally as of a version or time) as Arrow. A version never changes,
        so its rows are kept for the next read (audits read the same versions many times)."""
        cache_key = (self.format, self.name, self.warehouse, self.catalog, id(self.spark), version)
        if version is not None and cache_key in _VERSION_CACHE:
            return _VERSION_CACHE[cache_key]
        if self.format == "iceberg":
            rows = spark_to_arrow(self.spark_df(version, timestamp))
        else:
            target: int | datetime | None = version if version is not None else timestamp
            rows = self.delta_table(target).to_pyarrow_table()
        if version is not None:
            _VERSION_CACHE[cache_key] = rows
            while len(_VERSION_CACHE) > _CACHED_VERSIONS:
                _VERSION_CACHE.pop(next(iter(_VERSION_CACHE)))
        return rows

    def pandas(self, version: int | None = None, timestamp: datetime | None = None) -> pd.DataFrame:
        return to_pandas(self.arrow(version, timestamp))

    def column_names(self) -> list[str]:
        if self.format == "iceberg":
            return list(self.spark_df().columns)
        import pyarrow as pa
        return [f.name for f in pa.schema(self.delta_table().schema().to_arrow())]


def spark_to_arrow(df: DataFrame) -> pa.Table:
    """Spark -> Arrow without pandas' zone loss (``_collect_as_arrow`` keeps decimals and zones)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()
    if not batches:
        return to_arrow_schema(df.schema).empty_table()
    return pa.Table.from_batches(batches)


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow -> pandas with plain Python objects for nested values (lists stay lists)."""
    import pyarrow as pa

    # string_view (delta-rs) is not understood by every pandas version: read it as string.
    fields = [pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in table.schema]
    return table.cast(pa.schema(fields)).to_pandas(maps_as_pydicts="strict")


def key_columns(table: LakeTable, given: tuple[str, ...] | list[str] | None = None) -> tuple[str, ...]:
    """The key columns of a silver table: those given, else the ones its delete ledger
    (``<silver>__deletes``: key columns + ``_seq``, ``_op``, ``_source_ts_ms``) is keyed by."""
    if given:
        return tuple(given)
    ledger = table.sibling(table.name + LEDGER_SUFFIX)
    if ledger.exists():
        keys = tuple(c for c in ledger.column_names() if c not in META_COLUMNS)
        if keys:
            return keys
    raise AuditError(f"{table}: cannot tell its key columns (no delete ledger {ledger.name}); pass them")


def row_columns(columns: list[str]) -> list[str]:
    """The source row's columns among a table's columns (without lakecdc's ``META_COLUMNS``)."""
    return [c for c in columns if c not in META_COLUMNS]


def describe_value(value: Any) -> Any:
    """A plain Python form of a cell (numpy scalars and arrays unwrapped, NaN as None)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return [describe_value(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [describe_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:  # pandas' NaN for a missing number is a null
        return None
    return value
