"""Quarantined events retried when a table's pipeline expectations change (``lakecdc.quality.pipeline``).

A quarantined event is judged by the suite that held it: its quarantine row names the suite file's
fingerprint (the first 12 hex digits of its SHA-256)::

    {"rule": "expect_column_values_to_not_match_regex(name)",
     "reason": "pipeline expectation failed (quarantine) at position [0, 12, 3], suite 3f2a9c01b7de", ...}

At the ingest job's next batch after a table's suite file changed -- an empty one when no record
is waiting (``BatchProcessor.waits_for_end_of_data``) -- the table's open quarantined events (those
whose newest quarantine row is such a verdict by another suite) are validated again, as bronze
stores them:

- those the suite passes now (every one when the action is now ``warn``) are merged into silver,
  with the table's events of that batch or alone. Silver's guards decide as for any late event: a
  newer change of the key in silver, a later delete (the ledger) or a later truncate wins, so a
  retried event brings a key up to its newest change that passes and never behind it;
- the others stay quarantined, judged again by the new suite.

The verdicts are appended to the quarantine table after silver's commit (``rule`` ``released``
for the ones applied): a crash before that retries the same events again, which the guards make
harmless. The bronze change log is untouched (it holds every event already).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakecdc.lake.layout import BRONZE_RENAMES, OCCURRENCE, ROW_HASH
from lakecdc.quality.quarantine import append_quarantine, quarantine_name

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from lakecdc.audit.tables import LakeTable

RELEASED = "released"
HELD_REASON = "pipeline expectation failed (quarantine)"
EVENT_ID = ("_topic", "_partition", "_offset")
_SUITE = re.compile(r"suite ([0-9a-f]{12})$")


def fingerprint(path: str) -> str:
    """What names a suite in its verdicts: the file's bytes, so any edit of a rule is a new suite."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


@dataclass
class Retry:
    """The outcome of re-validating a table's open quarantined events for one batch."""

    released: DataFrame | None = None  # events that pass now, in the batch's layout, for silver's MERGE
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # quarantine rows, appended after the commit
    table: LakeTable | None = None
    suite: str = ""

    def settle(self, silver_committed: bool) -> None:
        """Record the verdicts once silver holds the released events; when silver was not written
        (the batch was a replay) nothing is recorded and the next batch retries them."""
        if silver_committed and self.table is not None:
            append_quarantine(self.table, self.verdicts)
            _SETTLED.add((str(self.table), self.suite))


#: (silver table, suite) pairs this process has retried: the quarantine table is read once per suite
_SETTLED: set[tuple[str, str]] = set()


def open_events(quarantine: LakeTable, silver_table: str, suite: str) -> list[dict[str, Any]]:
    """The newest quarantine rows of ``silver_table``'s events that hold them back by a suite other
    than ``suite`` (each with its event parsed: ``"event"``)."""
    if not quarantine.exists():
        return []
    newest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in _verdicts(quarantine, silver_table).sort_by("checked_at").to_pylist():
        event = json.loads(row["row_json"])
        newest[_event_id(event)] = {**row, "event": event}
    return [row for row in newest.values()
            if row["rule"] != RELEASED and _judged_by(row["reason"]) != suite]


def _verdicts(quarantine: LakeTable, silver_table: str) -> pa.Table:
    """The table's held and released verdicts, filtered where the quarantine table is read: its warn
    records (one per failing event, for ever) and `lakecdc quality check --quarantine` rows stay there."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    columns = ["rule", "reason", "row_key", "row_json", "checked_at"]
    if quarantine.format == "iceberg":
        from pyspark.sql import functions as F

        from lakecdc.lake.frames import spark_to_arrow

        return spark_to_arrow(quarantine.spark_df().where(
            (F.col("table_name") == silver_table)
            & ((F.col("rule") == RELEASED) | F.col("reason").startswith(HELD_REASON))).select(*columns))
    wanted = (ds.field("table_name") == silver_table) & (
        (ds.field("rule") == RELEASED) | pc.starts_with(ds.field("reason"), HELD_REASON))
    return quarantine.delta_table().to_pyarrow_dataset().to_table(filter=wanted, columns=columns)


def _judged_by(reason: str | None) -> str | None:
    match = _SUITE.search(reason or "")  # verdicts written before suites were named: None, retried once
    return match.group(1) if match else None


def _event_id(event: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(event.get(c) for c in EVENT_ID)


def pending(silver: LakeTable, suite_path: str) -> bool:
    """True until this process has retried ``silver``'s quarantined events under the suite as it is now."""
    return (str(silver), fingerprint(suite_path)) not in _SETTLED


def retry_quarantined(silver: LakeTable, suite_path: str, action: str, spark: SparkSession,
                      layout: StructType | None, bronze_events: Callable[[list[str]], DataFrame | None],
                      failing_events: Callable[[DataFrame], dict[str, list[dict[str, Any]]]]) -> Retry:
    """The module docstring for one table: ``layout`` is the schema of the batch's events the
    released ones join (None: the table has none in this batch; bronze's own columns then),
    ``bronze_events`` reads bronze's events of a few ``_key_json`` values, ``failing_events`` runs
    the suite on events."""
    from pyspark.sql import functions as F

    suite = fingerprint(suite_path)
    if (str(silver), suite) in _SETTLED:
        return Retry()
    held = open_events(silver.sibling(quarantine_name(silver)), silver.name, suite)
    stored = bronze_events(sorted({row["event"]["_key_json"] for row in held})) if held else None
    if stored is None:
        _SETTLED.add((str(silver), suite))
        return Retry()
    ids = "_topic string, _partition int, _offset long"
    renamed = {v: k for k, v in BRONZE_RENAMES.items()}
    stored = stored.select(*[F.col(c).alias(renamed.get(c, c)) for c in stored.columns
                             if c not in (ROW_HASH, OCCURRENCE)])
    types = dict(stored.dtypes) if layout is None else {f.name: f.dataType for f in layout.fields}
    events = stored.join(spark.createDataFrame([_event_id(row["event"]) for row in held], ids), list(EVENT_ID),
                         "left_semi").select(*[(F.col(c) if c in stored.columns else F.lit(None)).cast(kind).alias(c)
                                               for c, kind in types.items()])
    failing = {} if action == "warn" else failing_events(events)
    still = {_event_id(e): rule for rule, found in failing.items() for e in found}
    now = datetime.now(timezone.utc)
    verdicts = [{"table_name": silver.name, "row_key": row["row_key"], "row_json": row["row_json"], "checked_at": now,
                 **({"rule": still[key], "reason": f"{HELD_REASON} again, suite {suite}"} if key in still else
                    {"rule": RELEASED, "reason": f"passes suite {suite} ({action}); applied to silver"})}
                for row in held for key in [_event_id(row["event"])]]
    if len(still) == len(held):
        return Retry(None, verdicts, silver, suite)
    released = events.join(spark.createDataFrame(list(still), ids), list(EVENT_ID), "left_anti") if still else events
    return Retry(released, verdicts, silver, suite)
