"""Pipeline expectations: a table's GX suite checked on each micro-batch's change events before silver.

Configured per table (``lakecdc.config.ingest``)::

    table.mapping:
      shop.public.orders: {expectations: conf/expectations/orders.json, expectations_action: quarantine}

The suite (one GX 1.x suite JSON file, as the team keeps them; ``lakecdc.quality.team_suites``) runs on
the batch's Spark DataFrame through GX's Spark data source, on the events that carry a row
(``c``, ``u``, ``r``; a delete's before image is not new data). Failing events are identified by
their Kafka coordinates (GX's ``unexpected_index_column_names``: ``_topic``, ``_partition``, ``_offset``).
The bronze change log always receives every event; the action decides the rest, as pipeline
expectations do (Delta Live Tables' warn / drop / fail):

- ``warn``: the failing events are recorded in ``<silver>_quarantine`` with ``action`` warn and applied;
- ``quarantine``: they are recorded there and kept out of this batch's silver MERGE. Silver then
  equals the source as of the batch's position *except* the quarantined keys, which keep their
  previous silver state (or are absent) until a newer event of the key passes the suite -- that
  event replaces them (silver's ``_seq`` guard), so a corrected source row heals silver without
  operator action. A changed suite file applies from the job's next batch, which also validates
  the table's quarantined events again and merges those that pass now, with or without new events
  of the table (``lakecdc.quality.quarantine_retry``);
- ``fail``: the table stops, like an incompatible schema change (``BatchReport.failed_tables``);
  the other tables go on; nothing of this batch is committed for it, so a restart after the rule or
  the data is fixed reads the same events again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lakecdc.audit.tables import LakeTable
from lakecdc.quality.quarantine import append_quarantine
from lakecdc.quality.quarantine_retry import Retry, fingerprint, pending, retry_quarantined

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakecdc.config.ingest import IngestConfig
    from lakecdc.lake.batch import TableTarget

log = logging.getLogger(__name__)
Action = Literal["warn", "quarantine", "fail"]
EVENT_ID = ("_topic", "_partition", "_offset")


@dataclass(frozen=True)
class BatchVerdict:
    """What the pipeline expectations decided for one table's batch."""

    failure: str | None = None  # the table stops with this reason (action fail)
    held: list[dict[str, Any]] = field(default_factory=list)  # events kept out of silver (EVENT_ID values)
    failed_events: int = 0


def _suite(path: str) -> Any:
    """The suite at ``path``, read again when the file changes (a changed rule applies from the next batch)."""
    return _load_suite(path, Path(path).stat().st_mtime_ns)


@lru_cache(maxsize=64)
def _load_suite(path: str, mtime_ns: int) -> Any:
    from lakecdc.quality.team_suites import load_suites

    suites = load_suites(path)
    if len(suites) != 1:
        from lakecdc.errors import ConfigError

        raise ConfigError(f"pipeline expectations {path} must hold one suite, found {len(suites)}")
    return suites[0]


def check_batch(config: IngestConfig, target: TableTarget, rows: pa.Table | None, df: DataFrame) -> BatchVerdict:
    """The hook the processor calls before a table's writer: ``BatchVerdict()`` when the table has no
    pipeline expectations or every event passes. ``rows``: the batch's Arrow rows when the driver
    decoded it, None when it lives on the executors (only the failing events are then collected)."""
    override = config.table_overrides().get(target.topic)
    if override is None or not override.expectations or not target.has_key:
        return BatchVerdict()
    action: Action = override.expectations_action or "warn"
    failing = failing_events(_suite(override.expectations), df)
    if not failing:
        return BatchVerdict()
    table = target.source_name or target.topic
    summary = "; ".join(f"{rule}: {len(events)} events" for rule, events in failing.items())
    if action == "fail":
        return BatchVerdict(failure=f"pipeline expectations failed for {table} (action fail): {summary}",
                            failed_events=sum(len(e) for e in failing.values()))
    record(config, target, rows, failing, action, df, override.expectations)
    held = [dict(zip(EVENT_ID, key)) for key in {_event(e) for events in failing.values() for e in events}]
    log.warning("table %s: pipeline expectations failed (%s): %s", table, action, summary)
    return BatchVerdict(held=held if action == "quarantine" else [], failed_events=len(held))


def _retried(config: IngestConfig, target: TableTarget) -> tuple[str, str] | None:
    """``(suite file, action)`` when a change of the table's suite retries its quarantined events."""
    override = config.table_overrides().get(target.topic)
    if override is None or not override.expectations or not target.has_key or override.expectations_action == "fail":
        return None
    return override.expectations, override.expectations_action or "warn"


def retry_pending(config: IngestConfig, target: TableTarget, spark: SparkSession) -> bool:
    """True while the table's suite changed and this process has not retried its quarantined events."""
    retried = _retried(config, target)
    return retried is not None and pending(_lake_table(config, target, spark), retried[0])


def retry_held(config: IngestConfig, target: TableTarget, spark: SparkSession, layout: StructType | None,
               bronze_events: Callable[[list[str]], DataFrame | None]) -> Retry:
    """The table's quarantined events validated again when its suite changed (``Retry()``: none to
    merge); the processor merges ``released`` (shaped like ``layout``, the batch's events, when
    given) and settles the retry after the commit."""
    retried = _retried(config, target)
    if retried is None:
        return Retry()
    path, action = retried
    return retry_quarantined(_lake_table(config, target, spark), path, action, spark, layout, bronze_events,
                             lambda events: failing_events(_suite(path), events))


def failing_events(suite: Any, df: DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Per failed expectation (``type(column)``), the failing events' ``EVENT_ID`` values, by GX on Spark."""
    from lakecdc.quality.gx_suite import validate_on_spark

    rows = df.where("_op IN ('c', 'u', 'r')")
    result = validate_on_spark(rows, suite, result_format={
        "result_format": "COMPLETE", "unexpected_index_column_names": list(EVENT_ID)})
    failing: dict[str, list[dict[str, Any]]] = {}
    for item in result.results:
        if item.success:
            continue
        config = item.expectation_config
        target = config.kwargs.get("column") or ",".join(config.kwargs.get("column_list") or [])
        found = (item.result or {}).get("unexpected_index_list") or []
        if not found and item.exception_info and item.exception_info.get("raised_exception"):
            raise ValueError(f"pipeline expectation {config.type}({target}) could not run: "
                             f"{item.exception_info.get('exception_message')}")
        failing[f"{config.type}({target})"] = list(found)
    return failing


def _event(event: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(event[c] for c in EVENT_ID)


def record(config: IngestConfig, target: TableTarget, rows: pa.Table | None,
           failing: dict[str, list[dict[str, Any]]], action: Action, df: DataFrame, suite_path: str) -> int:
    """The failing events, in full, into ``<silver>_quarantine``: taken from the batch's Arrow rows, or
    (a batch on the executors, ``rows`` None) from ``df``, collecting only them."""
    ids = {_event(e): rule for rule, events in failing.items() for e in events}
    if rows is None:
        events = _failing_rows(df, list(ids))
    else:
        wanted = [i for i, key in enumerate(zip(*(rows.column(c).to_pylist() for c in EVENT_ID))) if key in ids]
        events = rows.take(wanted).to_pylist()
    now = datetime.now(timezone.utc)
    keys = target.key_columns
    suite = fingerprint(suite_path)  # names the suite that judged them: a changed one retries them
    out = [{"table_name": target.silver_table, "rule": ids[_event(e)],
            "reason": f"pipeline expectation failed ({action}) at position {e.get('_seq')}, suite {suite}",
            "row_key": json.dumps({k: e.get(k) for k in keys}, default=str, sort_keys=True),
            "row_json": json.dumps(e, default=str, sort_keys=True), "checked_at": now} for e in events]
    append_quarantine(_lake_table(config, target, df.sparkSession), out)
    return len(out)


def _failing_rows(df: DataFrame, ids: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The rows of ``df`` with these ``EVENT_ID`` values (a semi join: the batch stays on the executors)."""
    from lakecdc.lake.frames import spark_to_arrow

    wanted = df.sparkSession.createDataFrame(ids, "_topic string, _partition int, _offset long")
    return spark_to_arrow(df.join(wanted, list(EVENT_ID), "left_semi")).to_pylist()


def _lake_table(config: IngestConfig, target: TableTarget, spark: SparkSession) -> LakeTable:
    if target.format == "iceberg":
        return LakeTable.iceberg(spark, target.silver_table, config.catalog)
    return LakeTable.delta(config.warehouse, target.silver_table)
