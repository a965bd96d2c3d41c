"""Data-quality rules for lakecdc tables: small functions in a registry (databrickslabs/dqx style).

A rule takes a ``CheckContext`` (silver and bronze rows as pandas, key columns, options) and returns
a ``RuleResult``: passed or not, a reason in words, and the offending rows (the quarantine gets
them). Register one with ``@rule("name")``; ``RULES`` maps names to functions.

Rules here: ``not_null_keys``, ``unique_keys``, ``no_resurrected_deletes``,
``bronze_positions_increasing``, ``silver_matches_bronze_replay``, ``freshness``; ``source_reconciliation``
lives in ``lakecdc.quality.reconcile`` (it needs the source database).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakecdc.audit.diff import same_value
from lakecdc.audit.tables import LakeTable, describe_value, row_columns
from lakecdc.audit.versions import TableVersion

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class CheckContext:
    """What the rules look at. ``bronze`` may be None (rules that need it then fail, saying so)."""

    silver_table: LakeTable
    silver: pd.DataFrame
    keys: tuple[str, ...]
    bronze: pd.DataFrame | None = None
    versions: list[TableVersion] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def live_silver(self) -> pd.DataFrame:
        """Silver rows a reader sees (soft-deleted rows excluded)."""
        if "_is_deleted" in self.silver.columns:
            return self.silver[self.silver["_is_deleted"] != True]  # noqa: E712 - element-wise
        return self.silver


@dataclass(frozen=True)
class RuleResult:
    rule: str
    passed: bool
    reason: str
    failing: pd.DataFrame | None = None  # offending rows (silver or bronze shaped)
    checked: int = 0

    @property
    def failed_rows(self) -> int:
        return 0 if self.failing is None else len(self.failing)


Rule = Callable[[CheckContext], RuleResult]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn
    return register


def _seq(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in describe_value(value))


def _key(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(describe_value(row[k]) for k in keys)


def _result(name: str, failing: pd.DataFrame, checked: int, ok: str, bad: str) -> RuleResult:
    if failing.empty:
        return RuleResult(name, True, ok, None, checked)
    return RuleResult(name, False, bad.format(n=len(failing)), failing.reset_index(drop=True), checked)


def _needs_bronze(name: str, ctx: CheckContext) -> RuleResult | None:
    if ctx.bronze is None:
        return RuleResult(name, False, "no bronze table given: this rule replays the bronze change log")
    return None


@rule("not_null_keys")
def not_null_keys(ctx: CheckContext) -> RuleResult:
    silver = ctx.live_silver()
    failing = silver[silver[list(ctx.keys)].isna().any(axis=1)]
    return _result("not_null_keys", failing, len(silver), f"no null in key columns {list(ctx.keys)}",
                   f"{{n}} silver rows have a null key column ({', '.join(ctx.keys)})")


@rule("unique_keys")
def unique_keys(ctx: CheckContext) -> RuleResult:
    silver = ctx.live_silver()
    failing = silver[silver.duplicated(subset=list(ctx.keys), keep=False)]
    return _result("unique_keys", failing, len(silver), "every key appears once in silver",
                   "{n} silver rows share their key with another row")


def _latest_events(bronze: pd.DataFrame, keys: tuple[str, ...]) -> tuple[dict[tuple[Any, ...], dict[str, Any]],
                                                                            tuple[int, ...] | None]:
    """Per key, the newest bronze event (with unavailable columns carried from older events);
    and the position of the newest truncate."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    truncate: tuple[int, ...] | None = None
    records = bronze.to_dict("records")
    records.sort(key=lambda r: _seq(r["_seq"]))
    for r in records:
        position = _seq(r["_seq"])
        if r["_op"] == "t":
            truncate = position if truncate is None else max(truncate, position)
            continue
        key = _key(r, keys)
        previous = latest.get(key)
        unavailable = set(describe_value(r.get("_unavailable")) or [])
        if previous is not None and unavailable and previous["_op"] != "d":
            r = {**r, **{c: previous.get(c) for c in unavailable}}  # placeholders keep the stored value
        latest[key] = r
    return latest, truncate


def _gone(event: dict[str, Any], truncate: tuple[int, ...] | None) -> bool:
    return event["_op"] == "d" or (truncate is not None and _seq(event["_seq"]) < truncate)


@rule("no_resurrected_deletes")
def no_resurrected_deletes(ctx: CheckContext) -> RuleResult:
    missing = _needs_bronze("no_resurrected_deletes", ctx)
    if missing:
        return missing
    latest, truncate = _latest_events(ctx.bronze, ctx.keys)  # type: ignore[arg-type]
    silver = ctx.live_silver()
    newest = [latest.get(_key(r, ctx.keys)) for r in silver.to_dict("records")]
    flags = [event is not None and _gone(event, truncate) for event in newest]
    failing = silver[flags] if len(silver) else silver
    return _result("no_resurrected_deletes", failing, len(silver),
                   "no silver row was deleted or truncated later in bronze",
                   "{n} silver rows whose newest bronze event is a delete (or older than a truncate)")


@rule("bronze_positions_increasing")
def bronze_positions_increasing(ctx: CheckContext) -> RuleResult:
    """Per key, in Kafka order (partition, offset), each event's position is above the previous one:
    a repeat means a duplicated event, a step back an out-of-order delivery."""
    missing = _needs_bronze("bronze_positions_increasing", ctx)
    if missing:
        return missing
    import pandas as pd

    bronze = ctx.bronze
    assert bronze is not None
    ordered = bronze[bronze["_op"] != "t"].sort_values(["_kafka_partition", "_offset"], kind="stable")
    last: dict[tuple[Any, ...], tuple[int, ...]] = {}
    bad = []
    for index, r in zip(ordered.index, ordered.to_dict("records")):
        key, position = _key(r, ctx.keys), _seq(r["_seq"])
        if key in last and position <= last[key]:
            bad.append(index)
        last[key] = max(position, last.get(key, position))
    failing = ordered.loc[bad] if bad else pd.DataFrame(columns=bronze.columns)
    return _result("bronze_positions_increasing", failing, len(ordered),
                   "every key's bronze positions increase strictly in Kafka order",
                   "{n} bronze events repeat or go back behind an earlier position of their key")


@rule("silver_matches_bronze_replay")
def silver_matches_bronze_replay(ctx: CheckContext) -> RuleResult:
    """Silver equals the replay of bronze: per key the newest non-delete event newer than the last
    truncate, with the same source column values. Failing rows carry ``_problem``."""
    missing_bronze = _needs_bronze("silver_matches_bronze_replay", ctx)
    if missing_bronze:
        return missing_bronze
    import pandas as pd

    latest, truncate = _latest_events(ctx.bronze, ctx.keys)  # type: ignore[arg-type]
    expected = {k: e for k, e in latest.items() if not _gone(e, truncate)}
    silver = ctx.live_silver()
    columns = row_columns(list(silver.columns))
    problems: list[dict[str, Any]] = []
    seen = set()
    for r in silver.to_dict("records"):
        key = _key(r, ctx.keys)
        seen.add(key)
        want = expected.get(key)
        if want is None:
            problems.append({**r, "_problem": "in silver but not in the bronze replay"})
            continue
        differing = [c for c in columns if c in want and not same_value(want.get(c), r.get(c))]
        if differing:
            problems.append({**r, "_problem": f"differs from the replay in {', '.join(differing)}"})
    for key, event in expected.items():
        if key not in seen:
            problems.append({**{c: event.get(c) for c in columns}, "_problem": "in the bronze replay but not in silver"})
    failing = pd.DataFrame(problems) if problems else pd.DataFrame(columns=[*silver.columns, "_problem"])
    return _result("silver_matches_bronze_replay", failing, len(silver),
                   f"silver equals the replay of bronze ({len(expected)} live keys)",
                   "{n} keys differ between silver and the replay of bronze")


@rule("freshness")
def freshness(ctx: CheckContext) -> RuleResult:
    """The newest source change the table holds is at most ``max_lag_seconds`` (default 900) old
    (option ``now_ms`` fixes "now" for reproducible checks)."""
    import pandas as pd

    limit = float(ctx.options.get("max_lag_seconds", 900))
    now_ms = int(ctx.options.get("now_ms", time.time() * 1000))
    times = [v.source_ts_ms for v in ctx.versions if v.source_ts_ms is not None]
    if not times:
        return RuleResult("freshness", False, "no lakecdc commit with a source time: cannot tell the lag")
    lag = (now_ms - max(times)) / 1000
    if lag <= limit:
        return RuleResult("freshness", True, f"lag {lag:.1f}s <= {limit:.0f}s", None, 1)
    row = pd.DataFrame([{"newest_source_ts_ms": max(times), "lag_seconds": lag, "max_lag_seconds": limit}])
    return RuleResult("freshness", False, f"lag {lag:.1f}s exceeds {limit:.0f}s", row, 1)
