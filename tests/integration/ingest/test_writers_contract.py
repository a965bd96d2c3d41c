"""One contract, every writer: the silver/bronze semantics of DESIGN.md section 2, on real tables.

Each test body runs against Iceberg (Spark SQL MERGE INTO, merge-on-read) and Delta (delta-rs) in
a temporary warehouse; the only format-specific code is in ``writer_harness.TableReader``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegerType
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.errors import SchemaEvolutionError
from lakecdc.lake.batch import ColumnSpec
from lakecdc.lake.frames import spark_to_arrow
from lakecdc.lake.silver import arrow_batch_stats
from lakecdc.writers.base import TableWriter, create_writer

pytestmark = pytest.mark.integration

FORMATS = ["iceberg", "delta-rs"]
COLUMNS = [("id", LONG), ("name", STR), ("notes", STR)]


@pytest.fixture(params=FORMATS)
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[TableWriter]:
    if request.param == "iceberg":
        yield create_writer("iceberg", spark)
    else:
        yield create_writer("delta-rs", spark, warehouse=str(tmp_path / "delta"))


def stream(writer: TableWriter, spark: SparkSession, **kw: object) -> Stream:
    return Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", kw.pop("columns", COLUMNS),
                  **kw)  # type: ignore[arg-type]


def silver(writer: TableWriter, s: Stream) -> dict[object, dict[str, object]]:
    return TableReader(writer).by_key(s.target.silver_table)


def names(writer: TableWriter, s: Stream) -> dict[object, object]:
    return {k: v["name"] for k, v in silver(writer, s).items()}


@pytest.mark.spark4
def test_latest_event_per_key_wins_within_a_batch(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    result = writer.apply(s.batch([
        Ev("c", 10, {"id": 1, "name": "a1"}), Ev("u", 12, {"id": 1, "name": "a3"}),
        Ev("u", 11, {"id": 1, "name": "a2"}),  # delivered late within the batch: older than a3
        Ev("c", (10, 11), {"id": 2, "name": "b1"}),
        Ev("d", 13, {"id": 2}), Ev("r", 5, {"id": 3, "name": "c1"}),
    ]), batch_id=1)
    assert names(writer, s) == {1: "a3", 3: "c1"}
    assert result.events == 6 and result.bronze_rows == 6
    assert result.max_seq == (13, 13, 0, 0)
    assert silver(writer, s)[1]["_seq"] == [12, 12, 0, 0]


def test_bronze_keeps_every_event_with_metadata(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("d", 11, {"id": 1}), Ev("t", 12)]), 1)
    rows = sorted(TableReader(writer).rows(s.target.bronze_table), key=lambda r: r["_offset"])
    assert [r["_op"] for r in rows] == ["c", "d", "t"]
    assert [r["_seq"] for r in rows] == [[10, 10, 0, 0], [11, 11, 0, 0], [12, 12, 0, 0]]
    assert rows[0]["_topic"] == s.topic and rows[0]["_kafka_partition"] == 0 and rows[0]["_tx_id"] == "10:10"
    assert rows[1]["_key_json"] == '{"id":1}' and rows[2]["_key_json"] is None


@pytest.mark.spark4
def test_replayed_batch_changes_nothing(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    events = [Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 11, {"id": 2, "name": "b"}), Ev("d", 12, {"id": 2})]
    batch = s.batch(events)
    writer.apply(batch, 1)
    reader = TableReader(writer)
    before = (reader.rows(s.target.bronze_table), silver(writer, s),
              reader.commits(s.target.bronze_table), reader.commits(s.target.silver_table))
    again = writer.apply(s.batch(events), 1)  # same offsets: a job replay
    assert again.skipped
    after = (reader.rows(s.target.bronze_table), silver(writer, s),
             reader.commits(s.target.bronze_table), reader.commits(s.target.silver_table))
    assert after == before


def test_events_resent_at_new_offsets_add_nothing(writer: TableWriter, spark: SparkSession) -> None:
    """A restarted capture re-sends events Kafka already had: new offsets, same source positions."""
    s = stream(writer, spark)
    events = [Ev("c", 10, {"id": 1, "name": "a"}), Ev("u", 11, {"id": 1, "name": "b"})]
    writer.apply(s.batch(events), 1)
    resent = [Ev(e.op, e.seq, e.row) for e in events] + [Ev("u", 12, {"id": 1, "name": "c"})]
    result = writer.apply(s.batch(resent), 2)
    assert not result.skipped and result.bronze_rows == 1
    bronze = TableReader(writer).rows(s.target.bronze_table)
    assert sorted(r["_seq"][0] for r in bronze) == [10, 11, 12]
    assert names(writer, s) == {1: "c"}


def test_late_older_event_is_ignored(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "new"})]), 1)
    writer.apply(s.batch([Ev("u", 9, {"id": 1, "name": "old"})]), 2)
    assert names(writer, s) == {1: "new"}
    # numeric, not lexicographic: 100 > 99 although "100" < "99"
    writer.apply(s.batch([Ev("u", (100, 1), {"id": 1, "name": "at100"})]), 3)
    writer.apply(s.batch([Ev("u", (99, 5), {"id": 1, "name": "at99"})]), 4)
    assert names(writer, s) == {1: "at100"}
    # the second component decides when the first is equal
    writer.apply(s.batch([Ev("u", (100, 2), {"id": 1, "name": "at100.2"})]), 5)
    assert names(writer, s) == {1: "at100.2"}


def test_delete_then_late_update_does_not_resurrect(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 10, {"id": 2, "name": "b"})]), 1)
    writer.apply(s.batch([Ev("d", 20, {"id": 1})]), 2)
    assert names(writer, s) == {2: "b"}
    writer.apply(s.batch([Ev("u", 15, {"id": 1, "name": "late"})]), 3)
    assert names(writer, s) == {2: "b"}
    ledger = TableReader(writer).rows(s.target.ledger_table)
    assert [(r["id"], r["_seq"][0], r["_op"]) for r in ledger] == [(1, 20, "d")]
    writer.apply(s.batch([Ev("c", 21, {"id": 1, "name": "reborn"})]), 4)  # a newer insert is fine
    assert names(writer, s) == {1: "reborn", 2: "b"}


def test_delete_and_late_update_in_one_batch(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"})]), 1)
    writer.apply(s.batch([Ev("d", 20, {"id": 1}), Ev("u", 15, {"id": 1, "name": "late"})]), 2)
    assert names(writer, s) == {}


@pytest.mark.spark4
def test_truncate_then_later_insert(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": i, "name": f"n{i}"}) for i in (1, 2, 3)]), 1)
    writer.apply(s.batch([
        Ev("u", 11, {"id": 3, "name": "before truncate"}), Ev("t", 20),
        Ev("c", 21, {"id": 4, "name": "after"}), Ev("c", 22, {"id": 2, "name": "again"}),
    ]), 2)
    assert names(writer, s) == {4: "after", 2: "again"}
    writer.apply(s.batch([Ev("u", 12, {"id": 1, "name": "late, pre-truncate"})]), 3)
    assert names(writer, s) == {4: "after", 2: "again"}
    ledger = TableReader(writer).rows(s.target.ledger_table)
    assert [(r["_op"], r["_seq"][0]) for r in ledger] == [("t", 20)]
    bronze_ops = sorted(r["_op"] for r in TableReader(writer).rows(s.target.bronze_table))
    assert bronze_ops.count("t") == 1


def test_truncate_alone_in_its_batch(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 30, {"id": 2, "name": "b"})]), 1)
    writer.apply(s.batch([Ev("t", 20)]), 2)  # id 2 was written after the truncate's position
    assert names(writer, s) == {2: "b"}


def test_unchanged_toast_placeholder_keeps_stored_value(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "long text"}),
                          Ev("c", 10, {"id": 2, "name": "b", "notes": "other"})]), 1)
    writer.apply(s.batch([Ev("u", 11, {"id": 1, "name": "a2", "notes": None}, unavailable=("notes",))]), 2)
    row = silver(writer, s)[1]
    assert (row["name"], row["notes"]) == ("a2", "long text")
    # within one batch: the value of an earlier event of the same key fills the placeholder
    writer.apply(s.batch([Ev("u", 12, {"id": 2, "name": "b2", "notes": "fresh"}),
                          Ev("u", 13, {"id": 2, "name": "b3", "notes": None}, unavailable=("notes",))]), 3)
    assert (silver(writer, s)[2]["name"], silver(writer, s)[2]["notes"]) == ("b3", "fresh")


def test_primary_key_change_moves_the_row(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a", "notes": "n"})]), 1)
    # Debezium: delete of the old key, (tombstone, dropped by the reader), create of the new key
    writer.apply(s.batch([Ev("d", (20, 20), {"id": 1}), Ev("c", (20, 20), {"id": 7, "name": "a", "notes": "n"})]), 2)
    assert names(writer, s) == {7: "a"}


def test_key_ranges_skip_files_and_lose_no_match(writer: TableWriter, spark: SparkSession) -> None:
    """A batch whose keys fall in separate clusters MERGEs with several key ranges (as the job's
    Arrow stats give them): every stored key it touches is still matched (no duplicate insert),
    and files outside the ranges are not read."""
    s = stream(writer, spark)
    for batch_id, cluster in enumerate(([1, 2, 3], [500, 501], [90_000, 90_001], [7_000_000]), start=1):
        writer.apply(s.batch([Ev("c", 10 * batch_id, {"id": k, "name": f"v{k}"}) for k in cluster]), batch_id)
    batch = s.batch([Ev("u", 60, {"id": 2, "name": "new2"}), Ev("d", 60, {"id": 3}),
                     Ev("u", 61, {"id": 90_001, "name": "new90001"}), Ev("c", 62, {"id": 4, "name": "v4"}),
                     Ev("u", 63, {"id": 90_000, "name": "new90000"})])
    stats = arrow_batch_stats(spark_to_arrow(batch.df), s.target.key_columns)
    assert stats.key_ranges == ((2, 4), (90_000, 90_001))
    writer.apply(replace(batch, stats=stats), 5)
    rows = TableReader(writer).rows(s.target.silver_table)
    assert sorted(r["id"] for r in rows) == [1, 2, 4, 500, 501, 90_000, 90_001, 7_000_000]
    assert names(writer, s) == {1: "v1", 2: "new2", 4: "v4", 500: "v500", 501: "v501", 90_000: "new90000",
                                90_001: "new90001", 7_000_000: "v7000000"}
    if writer.format == "delta":  # delta-rs reports what its MERGE read; the two clusters' files were not
        from deltalake import DeltaTable
        merge = DeltaTable(writer.table_uri(s.target.silver_table)).history(1)[0]  # type: ignore[attr-defined]
        assert merge["operation"] == "MERGE"
        assert merge["operationMetrics"]["num_target_files_skipped_during_scan"] >= 2


def test_string_keys_with_quotes_and_backslashes_match(writer: TableWriter, spark: SparkSession) -> None:
    """String keys reach the MERGE as literals of its key ranges (and column names of placeholder
    checks): a quote or backslash in them must not change the value (Spark SQL joins ``'a''b'``
    into "ab" and reads ``\\`` as an escape), or a stored row would be missed and duplicated."""
    s = stream(writer, spark, columns=[("code", STR), ("name", STR)], keys=("code",))
    odd = ["o'brien", "back\\slash", "a''b", "tab\\t"]
    writer.apply(s.batch([Ev("c", 10, {"code": k, "name": "old"}) for k in odd]), 1)
    batch = s.batch([Ev("u", 20, {"code": k, "name": "new"}) for k in odd])
    writer.apply(replace(batch, stats=arrow_batch_stats(spark_to_arrow(batch.df), ("code",))), 2)
    rows = TableReader(writer).rows(s.target.silver_table)
    assert sorted((r["code"], r["name"]) for r in rows) == sorted((k, "new") for k in odd)


def test_soft_delete_marks_and_guards(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark, delete_mode="soft")
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 10, {"id": 2, "name": "b"})]), 1)
    writer.apply(s.batch([Ev("d", 20, {"id": 1}, ts_ms=1_700_000_005_000)]), 2)
    rows = silver(writer, s)
    assert rows[1]["_is_deleted"] is True and rows[1]["name"] == "a"
    assert rows[1]["_deleted_at"].timestamp() == pytest.approx(1_700_000_005.0)
    assert rows[2]["_is_deleted"] is False and rows[2]["_deleted_at"] is None
    writer.apply(s.batch([Ev("u", 15, {"id": 1, "name": "late"})]), 3)
    assert silver(writer, s)[1]["_is_deleted"] is True
    writer.apply(s.batch([Ev("c", 25, {"id": 1, "name": "back"})]), 4)
    assert (silver(writer, s)[1]["_is_deleted"], silver(writer, s)[1]["name"]) == (False, "back")
    writer.apply(s.batch([Ev("t", 30)]), 5)
    assert all(r["_is_deleted"] for r in silver(writer, s).values())


@pytest.mark.spark4
def test_added_column_is_added_before_merge(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"})]), 1)
    wider = s.columns + [ColumnSpec("email", STR, True)]
    result = writer.apply(s.batch([Ev("c", 11, {"id": 2, "name": "b", "email": "b@x"})], columns=wider), 2)
    assert any("added column email" in c for c in result.schema_changes)
    rows = silver(writer, s)
    assert rows[2]["email"] == "b@x" and rows[1]["email"] is None
    assert "email" in TableReader(writer).schema(s.target.bronze_table)
    # the column vanishes from the source again: kept, and nullable
    writer.apply(s.batch([Ev("u", 12, {"id": 2, "name": "b2"})]), 3)
    rows = silver(writer, s)
    assert rows[2]["name"] == "b2" and rows[2]["email"] == "b@x"


def test_safe_widening_is_applied(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark, columns=[("id", LONG), ("qty", IntegerType()), ("price", FloatType()),
                                       ("amount", DecimalType(10, 2))])
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "qty": 5, "price": 1.5, "amount": None})]), 1)
    wide = [ColumnSpec("id", LONG), ColumnSpec("qty", LONG), ColumnSpec("price", DoubleType()),
            ColumnSpec("amount", DecimalType(20, 2))]
    writer.apply(s.batch([Ev("c", 11, {"id": 2, "qty": 2**40, "price": 2.25, "amount": None})], columns=wide), 2)
    schema = TableReader(writer).schema(s.target.silver_table)
    assert (schema["qty"], schema["price"], schema["amount"]) == ("bigint", "double", "decimal(20,2)")
    assert silver(writer, s)[2]["qty"] == 2**40 and silver(writer, s)[1]["qty"] == 5
    # a narrower type arriving later is cast, not an error
    writer.apply(s.batch([Ev("u", 12, {"id": 1, "qty": 6, "price": 1.0, "amount": None})]), 3)
    assert silver(writer, s)[1]["qty"] == 6


def test_incompatible_change_stops_only_that_table(writer: TableWriter, spark: SparkSession) -> None:
    broken, healthy = stream(writer, spark), stream(writer, spark)
    writer.apply(broken.batch([Ev("c", 10, {"id": 1, "name": "a"})]), 1)
    changed = [ColumnSpec("id", LONG), ColumnSpec("name", IntegerType()), ColumnSpec("notes", STR)]
    with pytest.raises(SchemaEvolutionError) as error:
        writer.apply(broken.batch([Ev("c", 11, {"id": 2, "name": 5})], columns=changed), 2)
    message = str(error.value)
    assert broken.target.bronze_table in message or broken.target.silver_table in message
    assert "name" in message and "string" in message and "int" in message
    assert names(writer, broken) == {1: "a"}
    writer.apply(healthy.batch([Ev("c", 10, {"id": 1, "name": "ok"})]), 2)
    assert names(writer, healthy) == {1: "ok"}


@pytest.mark.spark4
def test_progress_round_trip_and_commit_position(writer: TableWriter, spark: SparkSession) -> None:
    s = stream(writer, spark)
    assert writer.committed_progress(s.target) == {}
    writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 11, {"id": 2, "name": "b"}, partition=1)]), 7)
    assert writer.committed_progress(s.target) == {(s.topic, 0): 0, (s.topic, 1): 1}
    writer.apply(s.batch([Ev("u", 12, {"id": 1, "name": "a2"})]), 8)  # partition 1 not in this batch
    assert writer.committed_progress(s.target) == {(s.topic, 0): 2, (s.topic, 1): 1}
    fresh = create_writer(writer.format if writer.format == "iceberg" else "delta-rs", spark,
                          **({"warehouse": writer.warehouse} if writer.format != "iceberg" else {}))  # type: ignore[attr-defined]
    assert fresh.committed_progress(s.target) == {(s.topic, 0): 2, (s.topic, 1): 1}
    props = writer.commit_properties(s.target.silver_table)  # type: ignore[attr-defined]
    assert props["lakecdc.batch-id"] == "8" and props["lakecdc.max-seq"] == "12,12,0,0"
    assert props["lakecdc.max-source-ts-ms"] == str(1_700_000_000_012)
    assert writer.commit_properties(s.target.bronze_table)["lakecdc.batch-id"] == "8"  # type: ignore[attr-defined]


def test_table_without_key_gets_bronze_only(writer: TableWriter, spark: SparkSession,
                                            caplog: pytest.LogCaptureFixture) -> None:
    s = stream(writer, spark, keys=())
    with caplog.at_level(logging.WARNING):
        result = writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("c", 11, {"id": 1, "name": "a"})]), 1)
    assert result.bronze_rows == 2 and result.warnings
    assert "no primary key" in caplog.text
    assert writer._table_schema(s.target.silver_table) is None  # type: ignore[attr-defined]
    assert writer.committed_progress(s.target) == {(s.topic, 0): 1}


@pytest.mark.spark4
def test_dead_letters_are_appended(writer: TableWriter, spark: SparkSession) -> None:
    from datetime import datetime, timezone
    name = f"lakecdc.dead_letters_{abs(hash(str(id(writer)))) % 10**8}"
    writer.dead_letter_table = name  # type: ignore[attr-defined]
    failed_at = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
    rows = [{"topic": "shop.public.orders", "partition": 0, "offset": 7, "key": b'{"id":7}', "value": b"{not json",
             "reason": "value is not JSON", "failed_at": failed_at}]
    assert writer.append_dead_letters(rows) == 1
    assert writer.append_dead_letters([]) == 0
    stored = TableReader(writer).rows(name)
    assert [(r["topic"], r["offset"], bytes(r["value"]), r["reason"]) for r in stored] == [
        ("shop.public.orders", 7, b"{not json", "value is not JSON")]

    # A replay (crash after the dead-letter write, before the table commits) adds only new positions.
    later = {**rows[0], "offset": 8, "value": b"{also not json"}
    other_partition = {**rows[0], "partition": 1}
    assert writer.append_dead_letters([rows[0], later, other_partition]) == 2
    assert writer.append_dead_letters([rows[0], later, other_partition]) == 0
    stored = TableReader(writer).rows(name)
    assert sorted((r["partition"], r["offset"], bytes(r["value"])) for r in stored) == [
        (0, 7, b"{not json"), (0, 8, b"{also not json"), (1, 7, b"{not json")]


def test_bronze_made_by_an_older_version_gains_new_bookkeeping_columns(writer: TableWriter,
                                                                      spark: SparkSession) -> None:
    """A bronze table created before ``_old_key_json`` existed gets the column, not a silent drop."""
    from pyspark.sql.types import StructType

    from lakecdc.writers.base import BRONZE_META, row_schema

    s = stream(writer, spark)
    older = StructType([*row_schema(s.columns).fields, *(f for f in BRONZE_META.fields if f.name != "_old_key_json")])
    writer._create_table(s.target.bronze_table, older, "bronze")  # type: ignore[attr-defined]
    assert "_old_key_json" not in TableReader(writer).schema(s.target.bronze_table)
    result = writer.apply(s.batch([Ev("c", 10, {"id": 1, "name": "a"}), Ev("d", 20, {"id": 1}),
                                   Ev("c", (20, 20, 1), {"id": 2, "name": "a"}, old_key={"id": 1})]), 1)
    assert any("added column _old_key_json" in c for c in result.schema_changes)
    moved = [r for r in TableReader(writer).rows(s.target.bronze_table) if r["id"] == 2]
    assert [r["_old_key_json"] for r in moved] == ['{"id":1}']
    assert names(writer, s) == {2: "a"}


def test_iceberg_bronze_is_appended_where_the_rows_are(spark: SparkSession) -> None:
    """Bronze (partitioned by day of ingestion) is written by every task of the batch, not shuffled to
    one writer per day (Iceberg's default hash distribution for partitioned tables); silver keeps the
    default (its writes are sorted locally by key)."""
    writer = create_writer("iceberg", spark)
    s = Stream(spark, "iceberg", COLUMNS)
    writer.apply(s.batch([Ev("c", 10 + i, {"id": i, "name": f"n{i}"}) for i in range(4)]), batch_id=1)

    def properties(name: str) -> dict[str, str]:
        full = writer.resolve(name)  # type: ignore[attr-defined]
        return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {full}").collect()}

    bronze = properties(s.target.bronze_table)
    assert bronze["write.distribution-mode"] == "none" and bronze["write.spark.fanout.enabled"] == "true"
    assert "write.distribution-mode" not in properties(s.target.silver_table)
    assert len(TableReader(writer).rows(s.target.bronze_table)) == 4
