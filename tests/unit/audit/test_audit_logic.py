"""Pure audit logic: position parsing, cell equality, frame diffs, version fields, plots."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lakecdc.audit import AuditError, TableVersion, parse_position
from lakecdc.audit.diff import diff_frames, same_value
from lakecdc.audit.notation import MAX
from lakecdc.audit.plots import plot_lag, plot_versions
from lakecdc.audit.tables import LakeTable, row_columns
from lakecdc.cli.audit import parse_key
from lakecdc.events.positions import PostgresPosition


def test_positions_in_every_accepted_form() -> None:
    assert parse_position("0/16B3748") == (0x16B3748, MAX, MAX, MAX)
    assert parse_position("1/0", "postgres") == (1 << 32, MAX, MAX, MAX)
    assert parse_position(42) == (42, MAX, MAX, MAX)
    assert parse_position("5,6,0,0") == (5, 6, 0, 0)
    assert parse_position([5, 6]) == (5, 6, MAX, MAX)
    with pytest.raises(AuditError, match="expected an LSN"):
        parse_position("yesterday")
    with pytest.raises(AuditError, match="00000027:00000758:0005"):
        parse_position("0/16B3748", "sqlserver")
    with pytest.raises(AuditError):
        parse_position(True)


def test_a_position_object_gives_its_seq() -> None:
    position = PostgresPosition(lsn=0x2050, commit_lsn=0x2000)
    assert parse_position(position) == tuple(position.seq())
    assert parse_position(position)[:2] == (0x2000, 0x2050)


def test_a_short_position_covers_every_seq_starting_with_it() -> None:
    assert (12, 12, 0, 0) <= parse_position(12) and (12, 99, 1, 7) <= parse_position(12)
    assert not (13, 0, 0, 0) <= parse_position(12)


def test_same_value_treats_nulls_nans_and_arrays_sensibly() -> None:
    assert same_value(None, float("nan"))
    assert not same_value(None, 0)
    assert same_value(np.array([1, 2]), [1, 2])
    assert not same_value([1, 2], [2, 1])
    assert same_value(np.int64(3), 3)


def test_diff_frames_by_compound_key() -> None:
    before = pd.DataFrame([{"a": 1, "b": "x", "v": 1.0}, {"a": 1, "b": "y", "v": 2.0}, {"a": 2, "b": "x", "v": None}])
    after = pd.DataFrame([{"a": 1, "b": "x", "v": 1.0}, {"a": 2, "b": "x", "v": 5.0}, {"a": 3, "b": "z", "v": 0.0}])
    added, removed, changed = diff_frames(before, after, ("a", "b"), ["a", "b", "v"])
    assert added.to_dict("records") == [{"a": 3, "b": "z", "v": 0.0}]
    assert removed.to_dict("records") == [{"a": 1, "b": "y", "v": 2.0}]
    assert changed.to_dict("records") == [{"a": 2, "b": "x", "column": "v", "before": None, "after": 5.0}]


def test_version_lag_and_dict() -> None:
    committed = datetime(2026, 11, 22, 10, 0, 5, tzinfo=timezone.utc)
    source_ms = int((committed - timedelta(seconds=4)).timestamp() * 1000)
    v = TableVersion(7, committed, "append", (1, 2, 0, 0), source_ms, 3, {("t", 0): 9})
    assert v.lag_seconds == 4.0
    assert v.as_dict()["kafka_progress"] == {"t[0]": 9}
    assert TableVersion(8, committed, "create").lag_seconds is None


def test_table_names_map_like_the_writers() -> None:
    assert LakeTable.delta("/lake", "silver.customers").uri == "/lake/silver/customers"
    assert LakeTable.delta("s3://b/lake/", "silver.c").uri == "s3://b/lake/silver/c"
    assert LakeTable(name="silver.c", format="iceberg").qualified == "`lake`.`silver`.`c`"
    assert LakeTable(name="uc.silver.c", format="iceberg").qualified == "`uc`.`silver`.`c`"
    # a part holding a space, a backtick or a keyword stays one identifier, as the writers name it
    assert LakeTable(name="bronze.`b x` select", format="iceberg").qualified == "`lake`.`bronze`.```b x`` select`"
    with pytest.raises(AuditError, match="must be schema.table"):
        LakeTable(name="nodots", format="iceberg").qualified
    assert row_columns(["id", "_seq", "_op", "_kafka_partition", "_underscore_col"]) == ["id", "_underscore_col"]


def test_cli_key_parsing() -> None:
    assert parse_key(["id=1001", "region=eu"]) == {"id": 1001, "region": "eu"}
    import typer
    with pytest.raises(typer.BadParameter, match="column=value"):
        parse_key(["1001"])


def test_plots_without_positions_still_render(tmp_path: Path) -> None:
    now = datetime.now(timezone.utc)
    versions = [TableVersion(0, now, "create")]
    assert plot_lag(versions, tmp_path / "lag.png").read_bytes()[:4] == b"\x89PNG"
    assert plot_versions(versions, tmp_path / "v.png").stat().st_size > 1000
