"""Data-quality rules for lakecdc tables: small functions in a registry (databrickslabs/dqx style).

A rule takes a ``CheckContext`` (the engine that holds the silver and bronze tables as views, the
key columns, options) and returns a ``RuleResult``: passed or not, a reason in words, how many rows
fail, and a bounded sample of them (``sample_rows`` option, default 100; the quarantine gets them).
Every count is computed by the engine (``lakecdc.quality.engine``) next to the data: nothing
proportional to the table comes to the driver. Register one with ``@rule("name")``.

Rules here: ``not_null_keys``, ``unique_keys``, ``bronze_positions_increasing``, ``freshness``;
``no_resurrected_deletes`` and ``silver_matches_bronze_replay`` live in ``lakecdc.quality.replay_rules``,
``source_reconciliation`` in ``lakecdc.quality.reconcile``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lakecdc.audit.tables import LakeTable, row_columns, to_pandas
from lakecdc.audit.versions import TableVersion
from lakecdc.quality.engine import Engine

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

DEFAULT_SAMPLE_ROWS = 100


@dataclass
class CheckContext:
    """What the rules look at: views ``silver`` (and ``bronze``, when ``has_bronze``) in ``engine``."""

    engine: Engine
    keys: tuple[str, ...]
    table: str = "silver"  # the silver table's name, for messages
    has_bronze: bool = False
    versions: list[TableVersion] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    silver_table: LakeTable | None = None

    @property
    def sample(self) -> int:
        return int(self.options.get("sample_rows", DEFAULT_SAMPLE_ROWS))

    @property
    def silver(self) -> str:
        return self.engine.view("silver")

    @property
    def bronze(self) -> str:
        return self.engine.view("bronze")

    @cached_property
    def silver_schema(self) -> pa.Schema:
        return self.engine.schema("silver")

    @cached_property
    def bronze_schema(self) -> pa.Schema:
        return self.engine.schema("bronze")

    def live(self) -> str:
        """Silver rows a reader sees (soft-deleted rows excluded), as a subquery."""
        if "_is_deleted" in self.silver_schema.names:
            return f"(SELECT * FROM {self.silver} WHERE _is_deleted IS NOT TRUE)"
        return self.silver

    def key_list(self, alias: str = "") -> str:
        return ", ".join(f"{alias}{self.engine.quote(k)}" for k in self.keys)

    def key_match(self, left: str, right: str) -> str:
        """Null-safe equality of the key columns of two aliases (a null key is a key too)."""
        q = self.engine.quote
        return " AND ".join(f"({left}.{q(k)} IS NOT DISTINCT FROM {right}.{q(k)})" for k in self.keys)

    def count(self, query: str) -> int:
        rows = self.engine.sql(f"SELECT count(*) AS n FROM {query} counted").column(0).to_pylist()
        return int(rows[0] or 0)

    def rows(self, query: str) -> pd.DataFrame:
        """At most ``sample`` rows of ``query``, as pandas."""
        return to_pandas(self.engine.sql(f"SELECT * FROM {query} sampled LIMIT {self.sample}"))

    def sample_keys(self, query: str, columns: tuple[str, ...] | None = None) -> pa.Table:
        """At most ``sample`` rows of the (narrow) ``query``'s ``columns`` (default: the key columns)."""
        chosen = ", ".join(self.engine.quote(c) for c in (columns or self.keys))
        return self.engine.sql(f"SELECT {chosen} FROM {query} keyed LIMIT {self.sample}")

    def rows_for(self, source: str, keys: pa.Table, alias: str = "s") -> pd.DataFrame:
        """The rows of ``source`` whose ``keys.column_names`` values are among ``keys`` (a sample):
        the wide rows are read only for those keys, the small side of the join."""
        q = self.engine.quote
        self.engine.register_arrow("sample_keys", keys)
        match = " AND ".join(f"({alias}.{q(c)} IS NOT DISTINCT FROM k.{q(c)})" for c in keys.column_names)
        return to_pandas(self.engine.sql(f"SELECT {alias}.* FROM {source} {alias} "
                                         f"JOIN {self.engine.view('sample_keys')} k ON {match}", small_join=True))

    def compared_columns(self) -> list[tuple[str, pa.DataType]]:
        """Silver's source columns that bronze also has (the values the replay must reproduce)."""
        bronze = set(self.bronze_schema.names)
        return [(f.name, f.type) for f in self.silver_schema
                if f.name in row_columns(self.silver_schema.names) and f.name in bronze]


@dataclass(frozen=True)
class RuleResult:
    rule: str
    passed: bool
    reason: str
    failing: pd.DataFrame | None = None  # a bounded sample of the offending rows (silver or bronze shaped)
    checked: int = 0
    failed_count: int | None = None  # all offending rows (the sample may hold fewer)

    @property
    def failed_rows(self) -> int:
        if self.failed_count is not None:
            return self.failed_count
        return 0 if self.failing is None else len(self.failing)


Rule = Callable[[CheckContext], RuleResult]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn
    return register


def result(name: str, failed: int, sample: Callable[[], pd.DataFrame], checked: int, ok: str,
           bad: str) -> RuleResult:
    """Passed when nothing failed; else the reason (``{n}`` = how many) and the sample, read only then."""
    if failed == 0:
        return RuleResult(name, True, ok, None, checked, 0)
    return RuleResult(name, False, bad.format(n=failed), sample().reset_index(drop=True), checked, failed)


def needs_bronze(name: str, ctx: CheckContext) -> RuleResult | None:
    if not ctx.has_bronze:
        return RuleResult(name, False, "no bronze table given: this rule replays the bronze change log")
    return None


@rule("not_null_keys")
def not_null_keys(ctx: CheckContext) -> RuleResult:
    q = ctx.engine.quote
    failing = f"(SELECT * FROM {ctx.live()} s WHERE {' OR '.join(f'{q(k)} IS NULL' for k in ctx.keys)})"
    return result("not_null_keys", ctx.count(failing), lambda: ctx.rows(failing), ctx.count(ctx.live()),
                  f"no null in key columns {list(ctx.keys)}",
                  f"{{n}} silver rows have a null key column ({', '.join(ctx.keys)})")


@rule("unique_keys")
def unique_keys(ctx: CheckContext) -> RuleResult:
    repeated = (f"(SELECT {ctx.key_list()}, count(*) AS n FROM {ctx.live()} s "
                f"GROUP BY {ctx.key_list()} HAVING count(*) > 1)")
    failed = ctx.engine.sql(f"SELECT sum(n) AS n FROM {repeated} r").column(0).to_pylist()[0] or 0
    return result("unique_keys", int(failed), lambda: ctx.rows_for(ctx.live(), ctx.sample_keys(repeated)),
                  ctx.count(ctx.live()),
                  "every key appears once in silver", "{n} silver rows share their key with another row")


@rule("bronze_positions_increasing")
def bronze_positions_increasing(ctx: CheckContext) -> RuleResult:
    """Per key, in Kafka order (partition, offset), each event's position is above every earlier one:
    a repeat means a duplicated event, a step back an out-of-order delivery."""
    missing = needs_bronze("bronze_positions_increasing", ctx)
    if missing:
        return missing
    events = (f"(SELECT {ctx.key_list()}, {ctx.engine.seq_key()} AS sk, _kafka_partition AS kp, _offset AS ko "
              f"FROM {ctx.bronze} WHERE _op <> 't')")
    before = (f"(SELECT *, max(sk) OVER (PARTITION BY {ctx.key_list()} ORDER BY kp, ko "
              f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM {events} e)")
    bad = (f"(SELECT kp AS _kafka_partition, ko AS _offset FROM {before} w "
           f"WHERE before IS NOT NULL AND sk <= before)")
    sample = ("_kafka_partition", "_offset")  # one bronze row per Kafka record
    return result("bronze_positions_increasing", ctx.count(bad),
                  lambda: ctx.rows_for(ctx.bronze, ctx.sample_keys(bad, sample)), ctx.count(events),
                  "every key's bronze positions increase strictly in Kafka order",
                  "{n} bronze events repeat or go back behind an earlier position of their key")


@rule("freshness")
def freshness(ctx: CheckContext) -> RuleResult:
    """The newest source change the table holds is at most ``max_lag_seconds`` (default 900) old
    (option ``now_ms`` fixes "now" for reproducible checks). Read from commit metadata: no scan."""
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
    return RuleResult("freshness", False, f"lag {lag:.1f}s exceeds {limit:.0f}s", row, 1, 1)
