"""A team's own GX 1.x suite (a GX project directory) run on a silver table through GX's Spark data
source, its per-expectation results kept in the lake's ``quality_results`` table."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from lake_fixture import build_lake  # noqa: E402

from lakecdc.audit import table_versions  # noqa: E402
from lakecdc.audit.tables import AuditError  # noqa: E402
from lakecdc.quality.team_suites import RESULTS_TABLE, load_suites, record_results, run_team_suite  # noqa: E402

pytestmark = pytest.mark.integration


def team_project(root: Path, table: str) -> Path:
    """A GX project as ``gx init`` lays it out, with one suite the team wrote for ``table``."""
    expectations = root / "gx" / "expectations"
    expectations.mkdir(parents=True)
    (expectations / f"{table}.json").write_text(json.dumps({"name": table, "meta": {"owner": "orders team"},
        "expectations": [
            {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"}},
            {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "name", "value_set": ["a3", "c"]}},
            {"type": "expect_column_values_to_be_between", "kwargs": {"column": "id", "min_value": 1, "max_value": 9}},
            {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1, "max_value": 1000}},
        ]}))
    return root


def check_results(lake_format: str, run, results) -> None:  # type: ignore[no-untyped-def]
    by_type = {r["expectation"]: r for r in results}
    assert not run.success
    assert by_type["expect_column_values_to_not_be_null"]["success"] is True
    in_set = by_type["expect_column_values_to_be_in_set"]
    assert in_set["success"] is False and in_set["unexpected_count"] == 1  # id 4's name "d"
    assert json.loads(in_set["kwargs"])["value_set"] == ["a3", "c"]
    between = by_type["expect_column_values_to_be_between"]
    assert between["success"] is True and between["unexpected_count"] == 0
    # an aggregate expectation's observed value is kept as JSON: here the silver table's row count
    row_count = by_type["expect_table_row_count_to_be_between"]
    assert row_count["success"] is True and json.loads(row_count["observed_value"]) == len(run.table.arrow(run.version))


def test_team_suite_runs_on_spark_and_lands_in_the_results_table(spark: SparkSession, tmp_path: Path) -> None:
    lake = build_lake("iceberg", spark, tmp_path / "lake")
    suites = load_suites(team_project(tmp_path / "project", lake.silver.name))
    assert [s.name for s in suites] == [lake.silver.name]
    run = run_team_suite(lake.silver, suites[0])
    newest = table_versions(lake.silver)[-1]
    assert run.version == newest.version and run.source_position
    assert record_results([run], run_id="run-1") == 4
    stored = lake.silver.sibling(f"{lake.silver.name.split('.')[0]}.{RESULTS_TABLE}").pandas()
    rows = stored.to_dict("records")
    assert {r["run_id"] for r in rows} == {"run-1"} and {r["table_version"] for r in rows} == {newest.version}
    check_results("iceberg", run, rows)
    # a second run appends: one row per run and expectation
    record_results([run_team_suite(lake.silver, suites[0])], run_id="run-2")
    assert len(lake.silver.sibling(f"{lake.silver.name.split('.')[0]}.{RESULTS_TABLE}").pandas()) == 8


def test_a_file_that_is_not_a_suite_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "orders.json"
    bad.write_text(json.dumps({"name": "x", "expectations": [{"type": "expect_nothing_real", "kwargs": {}}]}))
    with pytest.raises(AuditError, match="orders.json is not a great-expectations 1.x suite"):
        load_suites(bad)


def test_team_suite_on_a_delta_table_through_spark(connector_spark: SparkSession, tmp_path: Path) -> None:
    lake = build_lake("delta-rs", connector_spark, tmp_path / "lake")
    silver = lake.silver.__class__(lake.silver.name, "delta", connector_spark, warehouse=lake.silver.warehouse)
    run = run_team_suite(silver, load_suites(team_project(tmp_path / "project", silver.name))[0])
    record_results([run], run_id="run-1")
    stored = silver.sibling(f"{silver.name.split('.')[0]}.{RESULTS_TABLE}").pandas().to_dict("records")
    check_results("delta", run, stored)


def page_text(path: Path) -> str:
    """What a reader of a Data Docs page sees: its text without markup, styles and scripts."""
    html = re.sub(r"(?s)<style.*?</style>|<script.*?</script>", "", path.read_text())
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_cli_renders_gx_data_docs_of_a_real_run(spark: SparkSession, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    lake = build_lake("iceberg", spark, tmp_path / "lake")
    project = team_project(tmp_path / "project", lake.silver.name)
    config = tmp_path / "ingest.yaml"
    config.write_text("\n".join(f"{k}: {json.dumps(v)}" for k, v in {
        "name": "docs", "kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "docs",
        "warehouse": spark.conf.get("spark.sql.catalog.lake.warehouse")}.items()))
    docs = tmp_path / "docs"
    out = CliRunner().invoke(app, ["quality", "suites", "--config", str(config), "--suites", str(project),
                                   "--record", "--docs", str(docs)])
    assert out.exit_code == 1, out.output  # id 4's name "d" is not in the team's set
    stored = lake.silver.sibling(f"{lake.silver.name.split('.')[0]}.{RESULTS_TABLE}").pandas()
    stored = stored[stored["table_name"] == lake.silver.name]  # the schema's results table is shared
    run_id = stored["run_id"].iloc[0]
    assert f"GX Data Docs (run {run_id})" in out.output.replace("\n", ""), out.output
    assert (docs / "index.html").is_file() and (docs / "expectations").is_dir()
    # one validation page: <suite>/<run id>/<run time>/<table>@v<version>.html, linked from the index
    pages = list((docs / "validations").rglob("*.html"))
    version = table_versions(lake.silver)[-1].version
    assert [p.name for p in pages] == [f"{lake.silver.name}@v{version}.html"], pages
    assert run_id in pages[0].parts
    assert quote(pages[0].relative_to(docs).as_posix()) in (docs / "index.html").read_text()
    text = page_text(pages[0])
    assert f"Expectation Suite: {lake.silver.name}" in text and "Status: Failed" in text, text[:2000]
    assert "Evaluated Expectations 4 Successful Expectations 3 Unsuccessful Expectations 1" in text, text[:2000]
    # the failing expectation with its unexpected value, as stored in the results table
    failing = stored[~stored["success"]]
    assert list(failing["expectation"]) == ["expect_column_values_to_be_in_set"]
    assert "values must belong to this set: a3 c . 1 unexpected values found." in text, text
    assert "Unexpected Value Count d 1" in text, text
