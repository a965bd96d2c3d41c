"""Run the rules on a silver table (and its bronze) and collect a typed report.

Example::

    report = check_table(LakeTable.iceberg(spark, "silver.customers"),
                         bronze=LakeTable.iceberg(spark, "bronze.customers"))
    report.passed, [r.rule for r in report.failures]

As JSON (``report.as_dict()``)::

    {"table": "silver.customers", "passed": false, "results": [
      {"rule": "unique_keys", "passed": false, "failed_rows": 2,
       "reason": "2 silver rows share their key with another row", "checked": 40,
       "failing": [{"id": 7, "_problem": "duplicate key"}, ...]}]}

``failing`` is the rule's bounded sample of failing rows (keys and what is wrong), values as JSON
text where JSON has no type for them (decimals, dates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecdc.audit.tables import AuditError, LakeTable, key_columns
from lakecdc.audit.versions import table_versions
from lakecdc.quality import reconcile, replay_rules  # noqa: F401 - register their rules
from lakecdc.quality.engine import engine_for
from lakecdc.quality.rules import RULES, CheckContext, RuleResult

#: Rules run when none are named (source reconciliation runs when a source is given).
DEFAULT_RULES = ("not_null_keys", "unique_keys", "no_resurrected_deletes", "bronze_positions_increasing",
                 "silver_matches_bronze_replay", "freshness")


@dataclass(frozen=True)
class QualityReport:
    table: str
    results: tuple[RuleResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[RuleResult]:
        return [r for r in self.results if not r.passed]

    def result(self, name: str) -> RuleResult:
        for r in self.results:
            if r.rule == name:
                return r
        raise KeyError(f"rule {name!r} was not run on {self.table}")

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "passed": self.passed, "results": [
            {"rule": r.rule, "passed": r.passed, "failed_rows": r.failed_rows, "reason": r.reason,
             "checked": r.checked, **({"failing": sample_records(r.failing)} if r.failing is not None else {})}
            for r in self.results]}


def sample_records(frame: Any) -> list[dict[str, Any]]:
    """A failing-rows sample as JSON-safe records (what the CLI's ``--json`` prints)."""
    import json

    return list(json.loads(frame.to_json(orient="records", date_format="iso", default_handler=str)))


def check_table(silver: LakeTable, bronze: LakeTable | None = None, rules: list[str] | tuple[str, ...] | None = None,
                keys: tuple[str, ...] | list[str] | None = None, **options: Any) -> QualityReport:
    """Run ``rules`` (default ``DEFAULT_RULES``, plus ``source_reconciliation`` when
    ``source_connection`` is given) on ``silver``; ``options`` reach the rules."""
    chosen = list(rules) if rules else [*DEFAULT_RULES, *(["source_reconciliation"]
                                                         if options.get("source_connection") is not None else [])]
    unknown = [r for r in chosen if r not in RULES]
    if unknown:
        raise AuditError(f"unknown quality rule(s) {unknown}: known rules are {sorted(RULES)}")
    engine = options.pop("engine", None) or engine_for(silver, int(options.get("memory_mb", 256)))
    engine.register("silver", silver)
    if bronze is not None:
        engine.register("bronze", bronze)
    context = CheckContext(engine, key_columns(silver, keys), silver.name, bronze is not None,
                           table_versions(silver), options, silver)
    return QualityReport(silver.name, tuple(RULES[name](context) for name in chosen))
