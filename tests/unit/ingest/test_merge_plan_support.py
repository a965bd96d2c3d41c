"""Commit progress encoding and the schema evolution policy (pure logic behind the writers)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from lakecdc.errors import SchemaEvolutionError, TerminalError
from lakecdc.lake.batch import ColumnSpec
from lakecdc.lake.progress import CommitProgress
from lakecdc.lake.schema_evolution import plan_schema_change, widens_to


def test_progress_properties_round_trip() -> None:
    progress = CommitProgress({("shop.public.a", 0): 41, ("shop.public.a", 1): 17}, batch_id=12,
                              max_seq=(24023128, 24023200, 0, 0), max_source_ts_ms=1700000000123,
                              truncated_through=(24000000, 24000010, 0, 0))
    props = progress.to_properties()
    assert props == {"lakecdc.progress": '{"shop.public.a":{"0":41,"1":17}}', "lakecdc.batch-id": "12",
                     "lakecdc.max-seq": "24023128,24023200,0,0", "lakecdc.max-source-ts-ms": "1700000000123",
                     "lakecdc.truncated-through": "24000000,24000010,0,0"}
    assert CommitProgress.from_properties(props) == progress
    assert CommitProgress.from_properties({"added-records": "3"}) is None  # a compaction commit


def test_progress_advances_per_partition_and_never_back() -> None:
    done = CommitProgress({("t", 0): 10, ("t", 1): 5}, 1, (9, 9, 0, 0), 100)
    after = done.advanced({("t", 0): 20}, 2, (8, 0, 0, 0), 90, truncate_seq=(3, 3, 0, 0))
    assert after.truncated_through == (3, 3, 0, 0)
    assert after.advanced({}, 3, None, None, truncate_seq=(2, 0, 0, 0)).truncated_through == (3, 3, 0, 0)
    assert after.offsets == {("t", 0): 20, ("t", 1): 5}
    assert after.max_seq == (9, 9, 0, 0) and after.max_source_ts_ms == 100 and after.batch_id == 2
    assert after.covers({("t", 0): 20, ("t", 1): 5}) and after.covers({("t", 0): 3})
    assert not after.covers({("t", 0): 21}) and not after.covers({("t", 2): 0})
    assert not after.covers({})


def test_widening_rules() -> None:
    assert widens_to(IntegerType(), LongType()) and widens_to(ByteType(), IntegerType())
    assert widens_to(FloatType(), DoubleType())
    assert widens_to(DecimalType(10, 2), DecimalType(20, 2))
    assert not widens_to(DecimalType(10, 2), DecimalType(20, 3))  # scale change: not allowed
    assert not widens_to(LongType(), IntegerType())
    assert not widens_to(StringType(), LongType()) and not widens_to(LongType(), StringType())


def _spec(name: str, t: object) -> ColumnSpec:
    return ColumnSpec(name, t)  # type: ignore[arg-type]


def test_plan_adds_widens_casts_and_keeps() -> None:
    stored = StructType([StructField("id", LongType(), False), StructField("qty", IntegerType()),
                         StructField("big", LongType()), StructField("gone", StringType(), False)])
    change = plan_schema_change("silver.t", stored, [
        _spec("id", LongType()), _spec("qty", LongType()), _spec("big", IntegerType()), _spec("email", StringType())])
    assert [c.name for c in change.add] == ["email"]
    assert change.widen == (("qty", IntegerType(), LongType()),)
    assert change.cast_on_write == ("big",)
    assert change.make_nullable == ("gone",)
    assert change.describe() == ("added column email string", "widened column qty from int to bigint",
                                 "column gone no longer sent by the source: kept, nullable")


def test_incompatible_change_names_table_column_and_types() -> None:
    stored = StructType([StructField("id", LongType()), StructField("name", StringType())])
    with pytest.raises(SchemaEvolutionError) as error:
        plan_schema_change("silver.customers", stored, [_spec("id", LongType()), _spec("name", IntegerType())])
    assert str(error.value).startswith("table silver.customers: column name changed type from string to int")
    assert isinstance(error.value, TerminalError)
    assert (error.value.table, error.value.column, error.value.old_type, error.value.new_type) == (  # type: ignore[attr-defined]
        "silver.customers", "name", "string", "int")


def test_nested_types_must_match() -> None:
    stored = StructType([StructField("tags", ArrayType(StringType()))])
    assert plan_schema_change("t", stored, [_spec("tags", ArrayType(StringType()))]).empty
    with pytest.raises(SchemaEvolutionError):
        plan_schema_change("t", stored, [_spec("tags", ArrayType(LongType()))])


# -- Arrow helpers of the delta-rs path, and table naming ---------------------------------------
import pyarrow as pa  # noqa: E402

from lakecdc.writers.delta_rs import DeltaRsWriter, _with_removed_seq, arrow_to_spark  # noqa: E402
from lakecdc.writers.iceberg_spark import IcebergSparkWriter  # noqa: E402

SEQ = pa.list_(pa.int64())


def test_removed_seq_takes_newest_ledger_entry_per_key() -> None:
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    ledger = pa.table({"id": pa.array([1, 7, 1, 3], pa.int64()),  # 7: a removal of a key not in the batch
                       "_seq": pa.array([[5, 0, 0, 0], [99, 0, 0, 0], [9, 1, 0, 0], [2, 0, 0, 0]], SEQ)})
    out = _with_removed_seq(rows, ledger, ("id",))
    assert out["_removed_seq"].to_pylist() == [[9, 1, 0, 0], None, [2, 0, 0, 0]]
    assert out["name"].to_pylist() == ["a", "b", "c"]
    empty = _with_removed_seq(rows, ledger.slice(0, 0), ("id",))
    assert empty["_removed_seq"].to_pylist() == [None, None, None]


def test_arrow_types_map_to_spark() -> None:
    from pyspark.sql.types import ArrayType, DecimalType, LongType, StringType, TimestampNTZType, TimestampType
    assert arrow_to_spark(pa.string_view()) == StringType()
    assert arrow_to_spark(pa.timestamp("us", tz="UTC")) == TimestampType()
    assert arrow_to_spark(pa.timestamp("us")) == TimestampNTZType()
    assert arrow_to_spark(pa.decimal128(20, 2)) == DecimalType(20, 2)
    assert arrow_to_spark(pa.list_(pa.int64())) == ArrayType(LongType(), True)
    with pytest.raises(TerminalError, match="no Spark equivalent"):
        arrow_to_spark(pa.duration("s"))


def test_table_names_two_and_three_parts() -> None:
    iceberg = IcebergSparkWriter(None, catalog="lake")  # type: ignore[arg-type]
    assert iceberg.resolve("silver.customers") == "`lake`.`silver`.`customers`"
    assert iceberg.resolve("main.silver.customers") == "`main`.`silver`.`customers`"  # Unity Catalog style
    assert iceberg.resolve("silver.`x y") == "`lake`.`silver`.```x y`"
    with pytest.raises(TerminalError, match="must be schema.table"):
        iceberg.resolve("customers")
    delta = DeltaRsWriter(None, warehouse="/w")  # type: ignore[arg-type]
    assert delta.table_uri("silver.customers") == "/w/silver/customers"
    assert delta.table_uri("main.silver.customers") == "/w/main/silver/customers"
    assert DeltaRsWriter(None, warehouse="s3://b/lake").table_uri("a.b") == "s3://b/lake/a/b"  # type: ignore[arg-type]
