"""Data quality for lakecdc tables: rules run in the table's engine, team GX suites, pipeline
expectations, quarantine, and source reconciliation by key-range checksums.

- ``check_table(silver, bronze=..., rules=..., **options) -> QualityReport`` (``report``): the rules
  in ``RULES`` (``rules``, ``replay_rules``, ``reconcile``) as SQL in Spark or DataFusion (``engine``):
  not-null and unique keys, no resurrected deletes, bronze positions increasing per key, silver
  equals the bronze replay, freshness, source reconciliation; counts plus a bounded sample;
- ``quarantine(table, report, keys)`` writes failing sample rows to ``<table>_quarantine`` (``quarantine``);
- ``load_suites`` / ``run_team_suite`` / ``record_results``: the team's GX 1.x suites on Spark, results
  in ``<namespace>.quality_results`` (``team_suites``); ``build_data_docs``: GX Data Docs of the runs
  (``data_docs``);
- ``check_batch``: pipeline expectations on each ingest batch, warn / quarantine / fail (``pipeline``);
  a changed suite retries the quarantined events (``quarantine_retry``);
- ``bisect``: key-range checksum reconciliation (``reconcile``, SQL per dialect in ``range_checksums``,
  the canonical text of values in ``canonical``);
- ``silver_suite`` / ``run_suite``: a great-expectations suite generated from a silver table's Spark
  DataFrame (keys, Spark column types), validated by GX on Spark like the team's suites (``gx_suite``).
"""

from lakecdc.quality.quarantine import quarantine, quarantine_name
from lakecdc.quality.report import DEFAULT_RULES, QualityReport, check_table
from lakecdc.quality.rules import RULES, CheckContext, RuleResult, rule

__all__ = ["DEFAULT_RULES", "RULES", "CheckContext", "QualityReport", "RuleResult", "check_table", "quarantine",
           "quarantine_name", "rule"]
