"""Quality rules, quarantine, the GX bridge, reconciliation against real PostgreSQL, and the CLIs,
on Iceberg and Delta tables written by the real writers (the audit tests' three-batch history)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from lake_fixture import FORMATS, Lake, build_lake  # noqa: E402

from lakecdc.audit import table_versions  # noqa: E402
from lakecdc.cli.main import app  # noqa: E402
from lakecdc.quality import DEFAULT_RULES, check_table, quarantine, quarantine_name  # noqa: E402
from lakecdc.quality.gx_suite import failed_expectations, run_suite, silver_suite  # noqa: E402

pytestmark = pytest.mark.integration
TABLE_RULES = [r for r in DEFAULT_RULES if r != "freshness"]


@pytest.fixture(scope="module", params=FORMATS)
def lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    return build_lake(request.param, spark, tmp_path_factory.mktemp(f"quality-{request.param}"))


def warehouse_of(lake: Lake) -> str:
    if lake.silver.format == "delta":
        return str(lake.silver.warehouse)
    return lake.silver.session.conf.get("spark.sql.catalog.lake.warehouse")


def append_silver_row(lake: Lake, row: dict) -> None:
    """Corrupt silver behind the writers' back, the way a manual fix or a buggy job would."""
    if lake.silver.format == "iceberg":
        seq = ",".join(f"{v}L" for v in row["_seq"])
        lake.silver.session.sql(
            f"INSERT INTO {lake.silver.qualified} VALUES ({row['id']}, '{row['name']}', array({seq}), "
            f"'{row['_op']}', {row['_source_ts_ms']}, '{row['_tx_id']}')")
        return
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = lake.silver.delta_table().to_pyarrow_table().schema
    write_deltalake(lake.silver.uri, pa.Table.from_pylist([row], schema=schema), mode="append")


@pytest.mark.spark4
def test_clean_tables_pass_then_a_resurrected_row_is_caught_and_quarantined(lake: Lake, spark: SparkSession) -> None:
    clean = check_table(lake.silver, lake.bronze, rules=TABLE_RULES)
    assert clean.passed, clean.as_dict()
    assert clean.result("silver_matches_bronze_replay").reason == "silver equals the replay of bronze (3 live keys)"
    newest = table_versions(lake.silver)[-1].source_ts_ms
    fresh = check_table(lake.silver, rules=["freshness"], now_ms=newest + 5_000, max_lag_seconds=60)
    assert fresh.passed and not check_table(lake.silver, rules=["freshness"], now_ms=newest + 600_000,
                                            max_lag_seconds=60).passed

    append_silver_row(lake, {"id": 2, "name": "b", "_seq": [11, 11, 0, 0], "_op": "c",
                             "_source_ts_ms": 1_700_000_000_011, "_tx_id": "11:11"})
    report = check_table(lake.silver, lake.bronze, rules=TABLE_RULES)
    failed = {r.rule for r in report.failures}
    assert failed == {"no_resurrected_deletes", "silver_matches_bronze_replay"}
    assert list(report.result("no_resurrected_deletes").failing["id"]) == [2]
    assert quarantine(lake.silver, report, ("id",)) == 2
    stored = lake.silver.sibling(quarantine_name(lake.silver)).pandas()
    assert sorted(stored["rule"]) == ["no_resurrected_deletes", "silver_matches_bronze_replay"]
    assert set(stored["row_key"]) == {'{"id": 2}'}
    assert "in silver but not in the bronze replay" in set(stored["reason"])

    duplicate = check_table(lake.silver, rules=["unique_keys"])
    assert duplicate.passed  # id 2 is in silver once: the duplicate rule is not what catches this
    append_silver_row(lake, {"id": 3, "name": "c", "_seq": [12, 12, 0, 0], "_op": "c",
                             "_source_ts_ms": 1_700_000_000_012, "_tx_id": "12:12"})
    assert list(check_table(lake.silver, rules=["unique_keys"]).result("unique_keys").failing["id"]) == [3, 3]
    df = silver_frame(lake, spark)
    result = run_suite(df, silver_suite(df, ("id",)))
    assert not result.success
    assert failed_expectations(result) == ["expect_column_values_to_be_unique(id)"]


@pytest.mark.parametrize("lake", ["iceberg"], indirect=True)  # Delta's rules run in DataFusion here
def test_rules_on_spark_run_compiled_and_leave_the_session_interpreted(lake: Lake, spark: SparkSession,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules read whole tables: Spark's compiled code runs them (``lakecdc.spark.session.compiled``),
    while the session goes on evaluating a micro-batch's statements interpreted."""
    import lakecdc.quality.engine as engine
    from lakecdc.spark.session import INTERPRETED

    modes = []
    collect = engine.spark_to_arrow

    def watched(df):  # type: ignore[no-untyped-def]
        modes.append(spark.conf.get("spark.sql.codegen.wholeStage"))
        return collect(df)

    monkeypatch.setattr(engine, "spark_to_arrow", watched)
    assert check_table(lake.silver, lake.bronze, rules=TABLE_RULES).results
    assert modes and set(modes) == {"true"}
    assert {name: spark.conf.get(name) for name in INTERPRETED} == INTERPRETED


@pytest.mark.spark4
def test_gx_suite_passes_on_the_table_and_checks_types(spark: SparkSession, tmp_path: Path) -> None:
    lake = build_lake("iceberg", spark, tmp_path)
    df = lake.silver.spark_df()
    suite = silver_suite(df, ("id",), name=lake.silver.name)
    kinds = [e.expectation_type for e in suite.expectations]
    assert kinds[:2] == ["expect_column_values_to_not_be_null", "expect_column_values_to_be_unique"]
    assert {e.column: e.type_ for e in suite.expectations
            if e.expectation_type == "expect_column_values_to_be_of_type"} == {"id": "LongType", "name": "StringType"}
    result = run_suite(df, suite)
    assert result.success, failed_expectations(result)
    assert suite.name == lake.silver.name  # each run validates its own copy
    drifted = df.withColumn("id", df["id"].cast("string"))
    assert failed_expectations(run_suite(drifted, suite)) == ["expect_column_values_to_be_of_type(id)"]
    duplicated = df.unionByName(df.where("id = 3"))
    assert failed_expectations(run_suite(duplicated, suite)) == ["expect_column_values_to_be_unique(id)"]
    # a job validates every batch: no run leaves a cached frame, a data source or a suite behind
    assert not any(f.is_cached for f in (df, drifted, duplicated))
    from lakecdc.quality.gx_suite import _context

    assert not [s.name for s in _context().data_sources.all().values() if s.name.startswith("lakecdc_spark_")]
    assert not [s.name for s in _context().suites.all() if s.name.startswith(f"{suite.name}_")]


def silver_frame(lake: Lake, spark: SparkSession) -> DataFrame:
    """Silver as a Spark DataFrame: Iceberg through the catalog; Delta from delta-rs's rows (this
    session has no Delta jars to read it with)."""
    if lake.silver.format == "iceberg":
        return lake.silver.spark_df()
    from pyspark.sql.pandas.types import from_arrow_schema

    rows = lake.silver.arrow()
    return spark.createDataFrame(rows.to_pylist(), from_arrow_schema(rows.schema))


def reconcile_against(lake: Lake, conn) -> None:  # type: ignore[no-untyped-def]
    """Silver holds ids 1 (a3), 3 (c), 4 (d), through position 31; ``conn``'s ``items`` starts equal."""
    same = check_table(lake.silver, rules=["source_reconciliation"], source_connection=conn,
                       source_table="items", source_position=31).results[0]
    assert same.passed, same.reason
    assert same.reason.startswith("3 silver rows, 3 source rows (silver version"), same.reason
    assert "every key range's checksum matches" in same.reason
    cursor = conn.cursor()
    cursor.execute("UPDATE items SET name = 'changed' WHERE id = 3")
    cursor.execute("INSERT INTO items VALUES (5, 'new')")
    cursor.execute("DELETE FROM items WHERE id = 1")
    conn.commit()
    drift = check_table(lake.silver, rules=["source_reconciliation"], source_connection=conn,
                        source_table="items", source_position=31).results[0]
    assert not drift.passed and drift.failed_rows == 3
    assert dict(zip(drift.failing["id"], drift.failing["_problem"])) == {
        1: "missing at the source", 3: "differs", 5: "missing in silver"}


def test_source_reconciliation_against_postgres(spark: SparkSession, tmp_path: Path, pg) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    lake = build_lake("delta-rs", spark, tmp_path)
    dsn = pg.create_database("quality_reconcile")
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE public.items (id bigint PRIMARY KEY, name text)")
        conn.execute("INSERT INTO public.items VALUES (1, 'a3'), (3, 'c'), (4, 'd')")
        conn.commit()
        reconcile_against(lake, conn)


def test_source_reconciliation_against_mariadb(spark: SparkSession, tmp_path: Path, mariadb) -> None:  # type: ignore[no-untyped-def]
    lake = build_lake("iceberg", spark, tmp_path)
    import pymysql

    conn = pymysql.connect(**mariadb.connect_kwargs())
    cursor = conn.cursor()
    cursor.execute("DROP TABLE IF EXISTS items")
    cursor.execute("CREATE TABLE items (id bigint PRIMARY KEY, name text)")
    cursor.execute("INSERT INTO items VALUES (1, 'a3'), (3, 'c'), (4, 'd')")
    conn.commit()
    try:
        reconcile_against(lake, conn)
    finally:
        conn.close()


def test_cli_audit_and_quality_commands(lake: Lake, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["--format", "iceberg" if lake.silver.format == "iceberg" else "delta", "-w", warehouse_of(lake)]
    v1, v2, v3 = lake.silver_versions
    plot = tmp_path / "versions.png"
    out = runner.invoke(app, ["audit", "versions", lake.silver.name, *common, "--plot", str(plot)])
    assert out.exit_code == 0, out.output
    # positions in the source's notation: _seq (31, 31, 0, 0) of the PostgreSQL harness is LSN 0/1F
    assert "0/1F" in out.output and plot.exists() and (tmp_path / "versions-lag.png").exists()
    # 20 lies inside batch 2's commit (20-21), without --config: bronze (found by the writers' names)
    # replays the update at 20 on version 1, not the delete at 21 (exact, as with --config)
    out = runner.invoke(app, ["audit", "as-of", lake.silver.name, *common, "--position", "20"])
    assert out.exit_code == 0, out.output
    # (how many bronze events: the audit's replay also reads those at the version's own last position)
    assert re.search(rf"version {v1} \(complete through 0/C\) \+ \d bronze events up to 0/14", out.output), out.output
    assert "a2" in out.output and "│ b " in out.output and "(3 rows)" in out.output, out.output
    out = runner.invoke(app, ["audit", "history", lake.bronze.name, *common, "--key", "id=2"])
    assert out.exit_code == 0 and "2 rows" in out.output, out.output
    out = runner.invoke(app, ["audit", "diff", lake.silver.name, str(v1), str(v3), *common])
    assert out.exit_code == 0 and "1 added, 1 removed, 1 changed" in out.output, out.output
    out = runner.invoke(app, ["audit", "as-of", lake.silver.name, *common, "--position", "999"])
    assert out.exit_code == 1 and "has not reached source position 0/3E7" in out.output  # 999 as an LSN
    out = runner.invoke(app, ["quality", "check", lake.silver.name, "--bronze", lake.bronze.name, *common,
                              "--rule", "not_null_keys", "--rule", "bronze_positions_increasing", "--json"])
    assert out.exit_code == 0 and '"rule": "bronze_positions_increasing"' in out.output, out.output
    # the module's lake may carry the corruption test's rows: the exit code follows the report
    expected = check_table(lake.silver, lake.bronze, rules=["silver_matches_bronze_replay"])
    out = runner.invoke(app, ["quality", "check", lake.silver.name, "--bronze", lake.bronze.name, *common,
                              "--rule", "silver_matches_bronze_replay"])
    assert out.exit_code == (0 if expected.passed else 1), out.output
    assert ("FAIL" in out.output) != expected.passed
    out = runner.invoke(app, ["quality", "check", lake.silver.name, *common, "--rule", "nope"])
    assert out.exit_code == 2 and "unknown quality rule" in out.output


def test_rules_on_delta_run_in_spark_when_the_session_has_delta(connector_spark: SparkSession, tmp_path: Path) -> None:
    from dataclasses import replace

    from lakecdc.quality.engine import SparkEngine, engine_for

    lake = build_lake("delta-rs", connector_spark, tmp_path)
    silver, bronze = (replace(t, spark=connector_spark) for t in (lake.silver, lake.bronze))
    assert isinstance(engine_for(silver), SparkEngine)
    report = check_table(silver, bronze, rules=TABLE_RULES, keys=("id",))
    assert report.passed, report.as_dict()
    assert report.result("silver_matches_bronze_replay").reason == "silver equals the replay of bronze (3 live keys)"
