"""Delta-in-Spark writer: the SQL and session settings it renders (Delta's jars cannot run here)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from lakecdc.lake.batch import ColumnSpec
from lakecdc.lake.merge_plan import MergePlan, render_spark_sql
from lakecdc.lake.schema_evolution import SchemaChange
from lakecdc.writers.delta_spark import (
    create_table_sql,
    evolve_sql,
    needs_column_mapping,
    properties_from_user_metadata,
    user_metadata,
)

MAPPING = ("TBLPROPERTIES ('delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5', "
           "'delta.columnMapping.mode' = 'name')")


def test_bronze_create_has_generated_date_partition() -> None:
    schema = StructType([StructField("id", LongType()), StructField("_ingest_ts", StringType())])
    sql = create_table_sql("main.bronze.customers", schema, "bronze")
    assert sql == ("CREATE TABLE IF NOT EXISTS main.bronze.customers (`id` bigint, `_ingest_ts` string, "
                   "`_ingest_date` date GENERATED ALWAYS AS (CAST(_ingest_ts AS DATE))) USING delta "
                   "PARTITIONED BY (`_ingest_date`)")
    assert create_table_sql("main.silver.c", schema, "silver").endswith("USING delta")


def test_evolution_statements() -> None:
    change = SchemaChange(add=(ColumnSpec("email", StringType()),),
                          widen=(("qty", IntegerType(), LongType()),
                                 ("amount", DecimalType(10, 2), DecimalType(12, 2))))
    assert evolve_sql("m.s.t", change) == [
        "ALTER TABLE m.s.t ADD COLUMNS (`email` string)",
        "ALTER TABLE m.s.t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        "ALTER TABLE m.s.t ALTER COLUMN `qty` TYPE bigint",
        "ALTER TABLE m.s.t ALTER COLUMN `amount` TYPE decimal(12,2)",
    ]


@pytest.mark.parametrize("char", list(" ,;{}()\n\t="))
def test_a_column_name_delta_cannot_store_gets_column_mapping(char: str) -> None:
    """Delta's ``checkFieldNames`` refuses these characters without column mapping, nested names too."""
    named = f"a{char}b"
    for field in (StructField(named, StringType()), StructField("s", StructType([StructField(named, LongType())])),
                  StructField("l", ArrayType(StructType([StructField(named, LongType())]))),
                  StructField("m", MapType(StringType(), StructType([StructField(named, LongType())])))):
        schema = StructType([StructField("id", LongType()), field])
        assert needs_column_mapping(schema.fields)
        assert create_table_sql("m.s.t", schema, "silver").endswith(f"USING delta {MAPPING}")
        assert create_table_sql("m.s.t", schema, "bronze").endswith(f"PARTITIONED BY (`_ingest_date`) {MAPPING}")
    added = evolve_sql("m.s.t", SchemaChange(add=(ColumnSpec(named, StringType()),)))
    assert added == [f"ALTER TABLE m.s.t SET {MAPPING}", f"ALTER TABLE m.s.t ADD COLUMNS (`{named}` string)"]


def test_names_delta_stores_as_they_are_get_no_column_mapping() -> None:
    schema = StructType([StructField(n, StringType()) for n in ("id", "do.t", 'we"ird', "id`k", "ünïcödé", "sel-ect")])
    assert not needs_column_mapping(schema.fields)
    assert "TBLPROPERTIES" not in create_table_sql("m.s.t", schema, "silver")
    assert evolve_sql("m.s.t", SchemaChange(add=(ColumnSpec("do.t", StringType()),))) == [
        "ALTER TABLE m.s.t ADD COLUMNS (`do.t` string)"]


def test_user_metadata_carries_the_progress_and_reads_back() -> None:
    props = {"lakecdc.progress": '{"t":{"0":4}}', "lakecdc.batch-id": "9"}
    assert json.loads(user_metadata(props)) == props
    assert properties_from_user_metadata(user_metadata(props)) == props
    assert properties_from_user_metadata("nightly backfill by ops") == {}
    assert properties_from_user_metadata('{"other": 1}') == {}
    assert properties_from_user_metadata(None) == {}


def test_delta_spark_merge_is_the_shared_plan() -> None:
    plan = MergePlan(keys=("id",), columns=("id", "name"), truncate_seq=(3, 3, 0, 0), placeholders=True)
    sql = render_spark_sql(plan, "main.silver.customers", "src")
    assert sql.startswith("MERGE INTO main.silver.customers AS t\nUSING src AS s\nON t.`id` = s.`id`")
    assert "WHEN NOT MATCHED BY SOURCE AND (3 > t.`_seq`[0]" in sql
