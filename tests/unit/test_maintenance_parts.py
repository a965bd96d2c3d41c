"""Maintenance's pure parts: retention durations, which tables are lakecdc's, result wording."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lakecdc.errors import ConfigError
from lakecdc.maintenance.delta import log_retention
from lakecdc.maintenance.options import MaintenanceOptions, parse_duration
from lakecdc.maintenance.result import MaintenanceResult
from lakecdc.maintenance.tables import lakecdc_tables, sort_keys


def test_parse_duration() -> None:
    assert parse_duration("7d") == timedelta(days=7)
    assert parse_duration(" 12h ") == timedelta(hours=12)
    assert parse_duration("1.5w") == timedelta(weeks=1.5)
    assert parse_duration("0s") == timedelta(0)
    for bad in ("7", "d7", "7 days", "-1d"):
        with pytest.raises(ConfigError):
            parse_duration(bad)
    with pytest.raises(ConfigError, match="ledger-retention: duration '30 days'"):
        parse_duration("30 days", "ledger-retention")


def test_options_reject_impossible_retention() -> None:
    with pytest.raises(ConfigError):
        MaintenanceOptions(retain_last=0)
    with pytest.raises(ConfigError):
        MaintenanceOptions(expire_older_than=timedelta(days=-1))
    with pytest.raises(ConfigError, match="ledger-retention"):
        MaintenanceOptions(ledger_retention=timedelta(days=-1))


def test_ledger_pruning_condition() -> None:
    from lakecdc.lake.merge_plan import DATAFUSION, SPARK
    from lakecdc.maintenance.ledger import obsolete_removals

    # nothing to prune without a truncate or a retention, nor for a table lakecdc did not commit
    assert obsolete_removals(SPARK, {"lakecdc.progress": "{}"}, MaintenanceOptions()) is None
    assert obsolete_removals(SPARK, None, MaintenanceOptions()) is None
    truncated = obsolete_removals(SPARK, {"lakecdc.progress": "{}", "lakecdc.truncated-through": "20,20,0,0"},
                                  MaintenanceOptions())
    assert truncated is not None and truncated.startswith("`_op` = 'd' AND (NOT (") and "_seq[0] > 20" in truncated
    aged = obsolete_removals(DATAFUSION, None, MaintenanceOptions(ledger_retention=timedelta(days=1)))
    assert aged is not None and '"_source_ts_ms" <' in aged and "_seq" not in aged


def test_lakecdc_tables_keeps_ledgers_of_lakecdc_tables_and_dead_letters() -> None:
    names = ["silver.a", "silver.a__deletes", "bronze.a", "other.b", "other.b__deletes", "lakecdc.dead_letters"]
    ours = lakecdc_tables(names, lambda n: n in {"silver.a", "bronze.a"})
    assert ours == ["bronze.a", "lakecdc.dead_letters", "silver.a", "silver.a__deletes"]


def test_sort_keys_from_the_ledger() -> None:
    columns = {"silver.a__deletes": ["id", "region", "_seq", "_op", "_source_ts_ms"]}
    assert sort_keys("silver.a", columns.get) == ("id", "region")
    assert sort_keys("silver.a__deletes", columns.get) == ("id", "region")
    assert sort_keys("bronze.a", columns.get) == ()


def test_log_retention() -> None:
    assert log_retention({}) == timedelta(days=30)
    assert log_retention({"delta.logRetentionDuration": "interval 2 days"}) == timedelta(days=2)
    assert log_retention({"delta.logRetentionDuration": "interval 36 hours"}) == timedelta(hours=36)
    assert log_retention({"delta.logRetentionDuration": "2 fortnights"}) is None  # unreadable: keep the log


def test_describe_in_the_users_words() -> None:
    done = MaintenanceResult("silver.a", "iceberg", 14, 2, 9, 0, 2_200_000, 1_900_000, history_removed=11,
                             files_deleted=20, seconds=3.2)
    assert done.describe() == ("silver.a (iceberg): 14 data files + 9 delete files (2.1 MB) -> 2 data files "
                               "(1.8 MB); 11 snapshots expired, 20 files deleted (3.2s)")
    dry = MaintenanceResult("silver.a", "delta", 5, 5, bytes_before=500, bytes_after=500, dry_run=True,
                            actions=["bin-pack 5 small files"])
    assert dry.describe() == "silver.a (delta): 5 data files (500 B); would: bin-pack 5 small files"
