"""Hostile column and table names end to end through both formats (Iceberg via Spark, Delta via
delta-rs, and Delta through Spark -- in the connector JVM, ``test_spark_connectors``; column names
only there: Spark's session catalog refuses table names beyond ``[A-Za-z0-9_]``, and names with a
space need Delta's column mapping): backticks, double quotes, spaces, dots, non-ASCII, SQL keywords
and injection attempts in column names (the key among them) and table names. Every write path
runs: bronze appends and its anti-join, the silver MERGE (Spark SQL and DataFusion), placeholders kept from stored rows,
a primary-key change whose create holds placeholders, deletes and the delete ledger, a truncate,
and an added column (schema evolution).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.lake.batch import ColumnSpec
from lakecdc.maintenance.delta import DeltaMaintainer
from lakecdc.maintenance.iceberg import IcebergMaintainer
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.run import maintain_tables
from lakecdc.writers.base import LakeWriter, create_writer
from lakecdc.writers.delta_spark import DeltaSparkWriter

pytestmark = pytest.mark.integration

KEY = "id`k"
TEXT = 'we"ird'
OTHERS = ["sp ace", "do.t", "select", "ünïcödé", "a`) ; DROP TABLE x; --"]
COLUMNS = [(KEY, LONG), (TEXT, STR), *((n, STR) for n in OTHERS)]


@pytest.fixture(params=["iceberg", "delta-rs", "delta-spark"])
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[LakeWriter]:
    if request.param == "delta-spark":  # Delta's own jars: names with a space need its column mapping
        made = create_writer("delta-spark", request.getfixturevalue("connector_spark"), catalog="spark_catalog")
    else:
        made = create_writer(request.param, spark, warehouse=str(tmp_path / "delta"))
    assert isinstance(made, LakeWriter)
    yield made


def row(key: int, text: str, **others: str) -> dict[str, Any]:
    return {KEY: key, TEXT: text, **{n: others.get("value", f"{n}-{key}") for n in OTHERS}}


def live(writer: LakeWriter, s: Stream) -> dict[Any, dict[str, Any]]:
    return {r[KEY]: r for r in TableReader(writer).rows(s.target.silver_table) if not r.get("_is_deleted")}


@pytest.mark.timeout(2400)  # Delta through Spark: each apply is several Delta commits in a local JVM
@pytest.mark.parametrize("delete_mode", ["hard", "soft"])
def test_hostile_names_end_to_end(writer: LakeWriter, spark: SparkSession, delete_mode: str) -> None:
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", COLUMNS, keys=(KEY,),
               delete_mode=delete_mode)
    suffix = s.target.table
    if not isinstance(writer, DeltaSparkWriter):  # Spark's session catalog takes table names of [A-Za-z0-9_]
        s.target = replace(s.target, bronze_table=f"bronze.`b {suffix}` select", silver_table=f'silver.s"{suffix}" ü')
    writer.apply(s.batch([Ev("c", 10, row(1, "one")), Ev("c", 11, row(2, "two")), Ev("c", 12, row(3, "three"))]), 1)
    assert {k: r[TEXT] for k, r in live(writer, s).items()} == {1: "one", 2: "two", 3: "three"}
    assert live(writer, s)[1]["do.t"] == "do.t-1" and live(writer, s)[2]["a`) ; DROP TABLE x; --"].endswith("-2")

    # an update whose TEXT is a placeholder keeps the stored value; a key change 2 -> 5 takes it
    # from the old key's row; a delete; an event re-sent (bronze anti-join)
    keep = Ev("u", 20, {KEY: 1, TEXT: None, "select": "upd"}, unavailable=(TEXT,))
    moved = [Ev("d", 21, {KEY: 2}), Ev("c", 21, {KEY: 5, "sp ace": "moved"}, unavailable=(TEXT,), old_key={KEY: 2})]
    result = writer.apply(s.batch([keep, *moved, Ev("d", 22, {KEY: 3}), Ev("c", 12, row(3, "three"))]), 2)
    assert result.bronze_rows == 4
    rows = live(writer, s)
    assert sorted(rows) == [1, 5]
    assert (rows[1][TEXT], rows[1]["select"]) == ("one", "upd")
    assert (rows[5][TEXT], rows[5]["sp ace"]) == ("two", "moved")

    # a column added mid-stream, with a hostile name too
    added = [*s.columns, ColumnSpec("new`col.x", STR, True)]
    writer.apply(s.batch([Ev("u", 30, {**row(5, "five"), "new`col.x": "n"})], columns=added), 3)
    assert live(writer, s)[5]["new`col.x"] == "n"

    # a truncate removes what is older
    writer.apply(s.batch([Ev("t", 40), Ev("c", 41, row(7, "seven"))]), 4)
    assert sorted(live(writer, s)) == [7]
    bronze = TableReader(writer).rows(s.target.bronze_table)
    assert len(bronze) == 10 and {r["_op"] for r in bronze} == {"c", "u", "d", "t"}

    if isinstance(writer, DeltaSparkWriter):
        for table in (s.target.bronze_table, s.target.silver_table):  # the names with a space need it
            props = spark_table_properties(writer, table)
            assert props.get("delta.columnMapping.mode") == "name", (table, props)
        return  # Spark's Delta tables are maintained by OPTIMIZE / VACUUM, not lakecdc (ingest.job)

    # maintenance finds the tables by listing the catalog and rewrites them, rows unchanged
    maintainer = (IcebergMaintainer(spark) if writer.format == "iceberg"
                  else DeltaMaintainer(writer.warehouse))  # type: ignore[attr-defined]
    tables = [s.target.bronze_table, s.target.silver_table]
    assert set(tables) <= set(maintainer.tables())
    assert [r.table for r in maintain_tables([maintainer], MaintenanceOptions(), tables)] == tables
    assert sorted(live(writer, s)) == [7] and len(TableReader(writer).rows(s.target.bronze_table)) == 10


def spark_table_properties(writer: DeltaSparkWriter, table: str) -> dict[str, str]:
    rows = writer.spark.sql(f"SHOW TBLPROPERTIES {writer.resolve(table)}").collect()
    return {r["key"]: r["value"] for r in rows}
