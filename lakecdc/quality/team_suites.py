"""The team's own great-expectations (1.x) suites, run on a lake table through GX's Spark data source.

Suites come from a GX project directory (``<dir>/gx/expectations/*.json`` or ``<dir>/expectations/*.json``)
or suite JSON files (a file, or a directory of them), in GX 1.x's stored form::

    {"name": "silver.orders", "expectations": [
      {"type": "expect_column_values_to_be_between", "kwargs": {"column": "amount", "min_value": 0}}]}

A suite applies to the table its name names, unless a mapping says otherwise. ``run_team_suite``
validates the table's Spark DataFrame in an ephemeral GX context: Spark evaluates the expectations'
metrics, only they come back. Iceberg tables are read through the session's catalog, Delta tables
with ``spark.read.format("delta")`` (the session needs Delta's Spark jars; GX has no DataFusion source).

``record_results`` appends one row per expectation to ``<namespace>.quality_results`` beside the
table (``RESULT_COLUMNS``): run id and time, table, table version, source position, suite,
expectation, its kwargs, success, observed value and unexpected count -- a table a dashboard queries.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lakecdc.audit.notation import format_position
from lakecdc.audit.tables import AuditError, LakeTable
from lakecdc.audit.versions import table_versions
from lakecdc.quality.gx_suite import _gx, validate_on_spark

RESULTS_TABLE = "quality_results"
RESULT_COLUMNS = ("run_id", "run_at", "table_name", "table_version", "source_position", "suite", "expectation",
                  "kwargs", "success", "observed_value", "unexpected_count")


def load_suites(path: str | Path) -> list[Any]:
    """Every suite under ``path`` (see the module doc); an error names a file that is not a GX suite."""
    from great_expectations.core.expectation_suite import ExpectationSuite

    root = Path(path)
    if root.is_dir():
        for candidate in (root / "gx" / "expectations", root / "expectations"):
            if candidate.is_dir():
                root = candidate
                break
        files = sorted(root.rglob("*.json"))
    else:
        files = [root]
    if not files:
        raise AuditError(f"no great-expectations suite (*.json) under {path}")
    suites = []
    for file in files:
        try:
            data = json.loads(file.read_text())
            suite = ExpectationSuite(**{k: v for k, v in data.items() if k in ("name", "expectations", "meta")})
        except Exception as error:  # noqa: BLE001 - JSON and GX errors alike: name the file
            raise AuditError(f"{file} is not a great-expectations 1.x suite: {error}") from None
        # GX logs an expectation it does not know and leaves it out: a silently shorter suite
        if len(suite.expectations) != len(data.get("expectations") or []):
            known = {e.expectation_type for e in suite.expectations}
            unknown = sorted({e.get("type") for e in data["expectations"]} - known)
            raise AuditError(f"{file} is not a great-expectations 1.x suite: unknown expectation(s) {unknown}")
        suites.append(suite)
    return suites


@dataclass(frozen=True)
class SuiteRun:
    table: LakeTable
    suite: str
    version: int | None
    source_position: str | None
    result: Any  # GX's ExpectationSuiteValidationResult

    @property
    def success(self) -> bool:
        return bool(self.result.success)

    def rows(self, run_id: str, run_at: datetime) -> list[dict[str, Any]]:
        rows = []
        for item in self.result.results:
            config, outcome = item.expectation_config, item.result or {}
            rows.append({"run_id": run_id, "run_at": run_at, "table_name": self.table.name,
                         "table_version": self.version, "source_position": self.source_position,
                         "suite": self.suite, "expectation": config.type,
                         "kwargs": json.dumps({k: v for k, v in config.kwargs.items() if k != "batch_id"},
                                              default=str, sort_keys=True),
                         "success": bool(item.success),
                         "observed_value": json.dumps(outcome.get("observed_value"), default=str),
                         "unexpected_count": outcome.get("unexpected_count")})
        return rows


def _spark_frame(table: LakeTable) -> Any:
    if table.format == "iceberg":
        return table.spark_df()
    from lakecdc.writers.base import delta_in_session

    if table.spark is None or not delta_in_session(table.spark):
        raise AuditError(f"{table}: team suites run through GX's Spark data source, and this Spark session "
                         "cannot read Delta (start it with the delta connector: LAKECDC_SPARK_CONNECTORS=delta)")
    return table.spark.read.format("delta").load(table.uri)


def run_team_suite(table: LakeTable, suite: Any) -> SuiteRun:
    """Validate ``table`` (its current version) against the team's ``suite`` on Spark."""
    _gx()
    versions = table_versions(table)
    newest = versions[-1] if versions else None
    result = validate_on_spark(_spark_frame(table), suite)
    position = None
    if newest is not None:
        position = format_position(newest.connector, newest.complete_through or newest.source_position)
    return SuiteRun(table, suite.name, newest.version if newest else None, position, result)


def record_results(runs: list[SuiteRun], run_id: str | None = None) -> int:
    """Append the runs' per-expectation rows to ``quality_results`` beside each table; how many rows."""
    run_id = run_id or uuid.uuid4().hex
    run_at = datetime.now(timezone.utc)
    written = 0
    for run in runs:
        rows = run.rows(run_id, run_at)
        target = run.table.sibling(f"{run.table.name.rsplit('.', 1)[0]}.{RESULTS_TABLE}")
        _append(target, rows)
        written += len(rows)
    return written


def _append(target: LakeTable, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa

    schema = pa.schema([("run_id", pa.string()), ("run_at", pa.timestamp("us", tz="UTC")), ("table_name", pa.string()),
                        ("table_version", pa.int64()), ("source_position", pa.string()), ("suite", pa.string()),
                        ("expectation", pa.string()), ("kwargs", pa.string()), ("success", pa.bool_()),
                        ("observed_value", pa.string()), ("unexpected_count", pa.int64())])
    data = pa.Table.from_pylist(rows, schema=schema)
    if target.format == "iceberg":
        from pyspark.sql.pandas.types import from_arrow_schema

        spark = target.session
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {target.qualified.rsplit('.', 1)[0]}")
        frame = spark.createDataFrame([tuple(r[c] for c in RESULT_COLUMNS) for r in rows], from_arrow_schema(schema))
        if target.exists():
            frame.writeTo(target.qualified).append()
        else:
            frame.writeTo(target.qualified).using("iceberg").create()
        return
    from deltalake import write_deltalake

    write_deltalake(target.uri, data, mode="append", storage_options=target.storage_options)
