"""Audits over real Iceberg (Spark SQL) and Delta (delta-rs) tables written by the real writers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from lake_fixture import FORMATS, Lake, build_lake
from pyspark.sql import SparkSession

from lakecdc.audit import (
    AuditError,
    LakeTable,
    diff_versions,
    key_columns,
    read_as_of,
    row_history,
    table_versions,
    version_for_position,
)
from lakecdc.audit.plots import plot_lag, plot_versions

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=FORMATS)
def lake(request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    return build_lake(request.param, spark, tmp_path_factory.mktemp(f"audit-{request.param}"))


def names(df) -> dict[int, str]:  # type: ignore[no-untyped-def]
    return {int(r["id"]): r["name"] for r in df.to_dict("records")}


@pytest.mark.spark4
def test_versions_carry_position_batch_and_kafka_progress(lake: Lake) -> None:
    versions = table_versions(lake.silver)
    ours = [v for v in versions if v.batch_id is not None]
    assert [v.batch_id for v in ours] == [1, 2, 3]
    assert [v.version for v in ours] == lake.silver_versions
    assert [v.source_position for v in ours] == [(12, 12, 0, 0), (21, 21, 0, 0), (31, 31, 0, 0)]
    assert [v.kafka_progress for v in ours] == [{(lake.stream.topic, 0): o} for o in (2, 4, 6)]
    assert ours[0].source_ts_ms == 1_700_000_000_012
    assert all(v.committed_at.tzinfo is not None for v in versions)
    assert [v.committed_at for v in versions] == sorted(v.committed_at for v in versions)
    assert ours[1].rows_removed and ours[1].rows_removed >= 1
    assert all(v.lag_seconds is not None and v.lag_seconds > 0 for v in ours)


@pytest.mark.spark4
def test_read_as_of_version_time_and_source_position(lake: Lake) -> None:
    v1, v2, v3 = lake.silver_versions
    assert names(read_as_of(lake.silver, version=v1)) == {1: "a", 2: "b", 3: "c"}
    assert names(read_as_of(lake.silver, version=v3)) == {1: "a3", 3: "c", 4: "d"}
    # LSN 15 lies between batch 1 (complete through 12) and batch 2 (20-21): the state after
    # every change at or before 15 is batch 1's, not batch 2's (which holds later changes).
    assert version_for_position(lake.silver, 15).version == v1
    assert names(read_as_of(lake.silver, source_position=15)) == {1: "a", 2: "b", 3: "c"}
    assert names(read_as_of(lake.silver, source_position=(12, 12))) == {1: "a", 2: "b", 3: "c"}
    assert names(read_as_of(lake.silver, source_position="0/C")) == {1: "a", 2: "b", 3: "c"}  # LSN 12
    # 20 falls inside batch 2's commit: version 1 plus batch 2's bronze events at or below 20.
    assert names(read_as_of(lake.silver, source_position=20)) == {1: "a2", 2: "b", 3: "c"}
    assert names(read_as_of(lake.silver, source_position=21)) == {1: "a2", 3: "c"}
    assert names(read_as_of(lake.silver, source_position=31)) == {1: "a3", 3: "c", 4: "d"}  # the newest
    second = next(v for v in table_versions(lake.silver) if v.version == v2)
    assert names(read_as_of(lake.silver, timestamp=second.committed_at)) == {1: "a2", 3: "c"}
    assert names(read_as_of(lake.silver, timestamp=second.committed_at + timedelta(milliseconds=1))) == \
        {1: "a2", 3: "c"}


def test_as_of_errors_name_what_is_wrong(lake: Lake) -> None:
    with pytest.raises(AuditError, match=r"has not reached source position 0/64 yet \(it is complete through 0/1F\)"):
        read_as_of(lake.silver, source_position=100)
    with pytest.raises(AuditError, match="exactly one of"):
        read_as_of(lake.silver, version=1, source_position=3)
    first = table_versions(lake.silver)[0]
    with pytest.raises(AuditError, match="did not exist yet"):
        read_as_of(lake.silver, timestamp=first.committed_at - timedelta(days=1))
    with pytest.raises(AuditError, match="has no version 424242"):
        read_as_of(lake.silver, version=424242)


@pytest.mark.spark4
def test_row_history_lists_every_change_of_one_key_in_source_order(lake: Lake) -> None:
    history = row_history(lake.bronze, {"id": 1})
    assert list(history["op"]) == ["c", "u", "u"]
    assert list(history["name"]) == ["a", "a2", "a3"]
    assert [p[0] for p in history["position"]] == [10, 20, 31]
    assert list(history["tx_id"]) == ["10:10", "20:20", "31:31"]
    assert list(history["offset"]) == [0, 3, 6]
    deleted = row_history(lake.bronze, 2, key_columns=("id",))
    assert list(deleted["op"]) == ["c", "d"]
    assert row_history(lake.bronze, {"id": 99}).empty


@pytest.mark.spark4
def test_diff_versions_by_key(lake: Lake) -> None:
    assert key_columns(lake.silver) == ("id",)
    v1, _, v3 = lake.silver_versions
    diff = diff_versions(lake.silver, v1, v3)
    assert list(diff.added["id"]) == [4]
    assert list(diff.removed["id"]) == [2]
    assert diff.changed.to_dict("records") == [{"id": 1, "column": "name", "before": "a", "after": "a3"}]
    assert diff.summary() == f"1 added, 1 removed, 1 changed between versions {v1} and {v3}"
    same = diff_versions(lake.silver, v3, v3)
    assert same.added.empty and same.removed.empty and same.changed.empty


def test_plots_are_written_as_png(lake: Lake, tmp_path: Path) -> None:
    versions = table_versions(lake.silver)
    for path in (plot_versions(versions, tmp_path / "v.png", title=lake.silver.name),
                 plot_lag(versions, tmp_path / "lag.png")):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncate_shows_in_history_and_versions_map_around_it(fmt: str, spark: SparkSession, tmp_path: Path) -> None:
    from writer_harness import Ev

    from lakecdc.quality import check_table

    lake = build_lake(fmt, spark, tmp_path, batches=[
        [Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 11, {"id": 2, "name": "b"})],
        [Ev("t", 20), Ev("c", 21, {"id": 3, "name": "c"})],
    ])
    history = row_history(lake.bronze, {"id": 1})
    assert list(history["op"]) == ["c", "t"]  # the truncate removed it
    assert names(read_as_of(lake.silver, source_position=11)) == {1: "a", 2: "b"}
    assert names(read_as_of(lake.silver, source_position=21)) == {3: "c"}
    diff = diff_versions(lake.silver, *lake.silver_versions)
    assert sorted(diff.removed["id"]) == [1, 2] and list(diff.added["id"]) == [3]
    report = check_table(lake.silver, lake.bronze, rules=["no_resurrected_deletes", "silver_matches_bronze_replay"])
    assert report.passed, report.as_dict()


@pytest.mark.parametrize("fmt", FORMATS)
def test_soft_deleted_rows_count_as_removed(fmt: str, spark: SparkSession, tmp_path: Path) -> None:
    from lakecdc.quality import check_table

    lake = build_lake(fmt, spark, tmp_path, delete_mode="soft")
    v1, _, v3 = lake.silver_versions
    latest = read_as_of(lake.silver, version=v3)
    assert bool(latest.set_index("id").loc[2, "_is_deleted"]) is True  # kept, flagged
    diff = diff_versions(lake.silver, v1, v3)
    assert list(diff.removed["id"]) == [2] and list(diff.added["id"]) == [4]
    report = check_table(lake.silver, lake.bronze, rules=["unique_keys", "no_resurrected_deletes",
                                                           "silver_matches_bronze_replay"])
    assert report.passed, report.as_dict()


def warehouse_of(table) -> str:  # type: ignore[no-untyped-def]
    if table.format == "delta":
        return str(table.warehouse)
    return table.session.conf.get("spark.sql.catalog.lake.warehouse")


@pytest.mark.parametrize(("position", "version", "replayed", "rows"), [
    ("5", None, 0, {}),  # before the first commit
    ("12", 0, 0, {1: "a", 2: "b", 3: "c"}),  # at a commit boundary
    ("15", 0, 0, {1: "a", 2: "b", 3: "c"}),  # between two commits
    ("20", 0, 1, {1: "a2", 2: "b", 3: "c"}),  # inside batch 2's commit: version 1 + bronze up to 20
    ("21", 1, 0, {1: "a2", 3: "c"}),
    ("0/1E", 1, 1, {1: "a2", 3: "c", 4: "d"}),  # inside batch 3's commit
    ("31", 2, 0, {1: "a3", 3: "c", 4: "d"}),  # the newest position
])
def test_cli_as_of_a_position_without_config_is_exact(lake: Lake, position: str, version: int | None,
                                                      replayed: int, rows: dict[int, str]) -> None:
    """`lakecdc audit as-of --position` with only --format and --warehouse finds bronze by the
    writers' names and replays it inside a commit, as the API does with the ingest configuration."""
    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    fmt = "iceberg" if lake.silver.format == "iceberg" else "delta"
    out = CliRunner().invoke(app, ["audit", "as-of", lake.silver.name, "-f", fmt, "-w", warehouse_of(lake.silver),
                                   "--position", position])
    assert out.exit_code == 0, out.output
    expected = read_as_of(lake.silver, source_position=position)
    assert names(expected) == rows
    if version is None:
        assert "before its first version" in out.output, out.output
    else:
        assert f"version {lake.silver_versions[version]} " in out.output, out.output
    assert (f"+ {replayed} bronze events" in out.output) == bool(replayed), out.output
    assert f"({len(rows)} rows)" in out.output, out.output
    printed = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.output.splitlines()
               if line.startswith("│ ")}
    assert printed == {str(k): v for k, v in rows.items()}, out.output


def renamed_lake(spark: SparkSession, tmp_path: Path, silver: str, bronze: str) -> LakeTable:
    """The three-batch history under other table names (a ``table.mapping`` or a template)."""
    from dataclasses import replace

    from lake_fixture import BATCHES
    from writer_harness import LONG, STR, Stream

    from lakecdc.writers.base import create_writer

    writer = create_writer("delta-rs", spark, warehouse=str(tmp_path / "delta"))
    stream = Stream(spark, "delta", [("id", LONG), ("name", STR)])
    topic_name = stream.topic.replace(".", "_")
    stream.target = replace(stream.target, silver_table=silver.format(topic=topic_name),
                            bronze_table=bronze.format(topic=topic_name))
    for batch_id, events in enumerate(BATCHES, start=1):
        writer.apply(stream.batch(events), batch_id)
    return LakeTable.delta(tmp_path / "delta", stream.target.silver_table)


@pytest.mark.parametrize(("silver", "bronze"), [
    ("shop_silver.{topic}", "shop_bronze.{topic}"),  # "silver" as a word of a name part
    ("sales.{topic}", "bronze.{topic}"),  # a mapped silver name: bronze under its topic's default name
])
def test_bronze_is_found_by_the_writers_names(spark: SparkSession, tmp_path: Path, silver: str, bronze: str) -> None:
    from lakecdc.audit.changelog import bronze_of

    table = renamed_lake(spark, tmp_path, silver, bronze)
    assert bronze_of(table).name == bronze.format(topic=table.name.split(".")[-1])
    assert names(read_as_of(table, source_position=20)) == {1: "a2", 2: "b", 3: "c"}


def test_a_bronze_that_cannot_be_found_is_an_error_not_an_earlier_state(spark: SparkSession, tmp_path: Path) -> None:
    table = renamed_lake(spark, tmp_path, "sales.{topic}", "raw.{topic}_changes")
    assert names(read_as_of(table, source_position=31)) == {1: "a3", 3: "c", 4: "d"}  # the newest: no replay
    with pytest.raises(AuditError, match=r"its bronze change log was not found \(tried bronze\.shop_public_t.*"
                                         r"give the ingest configuration \(--config\) or bronze="):
        read_as_of(table, source_position=20)
    bronze = table.sibling(f"raw.{table.name.split('.')[-1]}_changes")
    from lakecdc.audit import read_as_of_with_version

    read = read_as_of_with_version(table, source_position=20, bronze=bronze)
    assert names(read.rows) == {1: "a2", 2: "b", 3: "c"} and read.replayed == 1
