"""Data quality for lakecdc tables: registered rules, source reconciliation, quarantine, a GX bridge.

- ``check_table(silver, bronze=..., rules=..., **options) -> QualityReport`` (``report``);
- rules in ``RULES`` (``rules``, ``reconcile``): not-null and unique keys, no resurrected deletes,
  bronze positions increasing per key, silver equals the bronze replay, freshness, source reconciliation;
- ``quarantine(table, report, keys)`` writes failing rows to ``<table>_quarantine`` (``quarantine``);
- ``silver_suite`` / ``run_suite``: a great-expectations suite for a silver table (``gx_suite``).
"""

from lakecdc.quality.quarantine import quarantine, quarantine_name
from lakecdc.quality.report import DEFAULT_RULES, QualityReport, check_table
from lakecdc.quality.rules import RULES, CheckContext, RuleResult, rule

__all__ = ["DEFAULT_RULES", "RULES", "CheckContext", "QualityReport", "RuleResult", "check_table", "quarantine",
           "quarantine_name", "rule"]
