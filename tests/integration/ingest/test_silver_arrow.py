"""``arrow_silver_source`` and ``arrow_ledger_rows`` (delta-rs' Arrow path) give exactly the rows
of ``silver_source`` and ``ledger_rows`` (Spark's) for the same batches."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakecdc.lake.frames import arrow_to_spark, metadata_fields
from lakecdc.lake.layout import SEQ_LENGTH
from lakecdc.lake.silver import arrow_batch_stats, ledger_rows, silver_source
from lakecdc.lake.silver_arrow import arrow_input_columns, arrow_ledger_rows, arrow_silver_source

pytestmark = [pytest.mark.integration]

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
COLUMNS = ["id", "region", "name"]
SCHEMA = StructType([StructField("id", LongType()), StructField("region", StringType()),
                     StructField("name", StringType()), *metadata_fields()])


def batch(seed: int, events: int, truncates: int) -> pa.Table:
    """Random events on few keys (so most keys repeat): creates, updates, deletes, a few
    truncates; ``_seq`` values collide on their first elements (only a later element decides);
    some events share a ``_seq`` and only the Kafka offset orders them; some regions are null."""
    rnd = random.Random(seed)
    rows, truncated_at = [], set(rnd.sample(range(events), truncates))
    for offset in range(events):
        seq = [rnd.randint(1, 3), rnd.randint(1, 3), rnd.randint(0, 2), rnd.randint(0, 1)]
        op = "t" if offset in truncated_at else rnd.choice("cuud")
        key = (None, None) if op == "t" else (rnd.randint(1, 8), rnd.choice(["eu", "us", None]))
        rows.append({"id": key[0], "region": key[1], "name": f"n{rnd.randint(0, 999)}", "_op": op, "_seq": seq,
                     "_source_ts_ms": 1000 + offset, "_tx_id": f"tx{offset // 3}", "_tx_total_order": offset % 3 + 1,
                     "_topic": "t", "_partition": 0, "_offset": offset, "_ingest_ts": NOW, "_unavailable": None,
                     "_key_json": "{}", "_old_key_json": None})
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("_op", pa.string()),
        ("_seq", pa.list_(pa.int64())), ("_source_ts_ms", pa.int64()), ("_tx_id", pa.string()),
        ("_tx_total_order", pa.int64()), ("_topic", pa.string()), ("_partition", pa.int32()),
        ("_offset", pa.int64()), ("_ingest_ts", pa.timestamp("us", tz="UTC")), ("_unavailable", pa.list_(pa.string())),
        ("_key_json", pa.string()), ("_old_key_json", pa.string())]))


def by_key(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["id"] is None, r["id"] or 0, r["region"] is None, r["region"] or "",
                                       r["_seq"], r["_op"]))


CASES = {"no truncate": (1, 60, 0), "one truncate": (2, 60, 1), "two truncates": (3, 80, 2),
         "many keys repeat": (4, 200, 0), "all truncated": (5, 3, 3)}
KEYS = {"single key": ("id",), "composite key, nullable part": ("id", "region")}


@pytest.mark.parametrize("keys", sorted(KEYS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_arrow_rows_equal_spark_rows(spark, case: str, keys: str) -> None:
    table, key_columns = batch(*CASES[case]), KEYS[keys]
    stats = arrow_batch_stats(table, key_columns)
    df = arrow_to_spark(spark, table, SCHEMA)
    spark_source = [r.asDict() for r in silver_source(df, key_columns, COLUMNS, stats).collect()]
    arrow_rows = table.select(arrow_input_columns(key_columns, COLUMNS))  # what the writer collects
    arrow_source = arrow_silver_source(arrow_rows, key_columns, COLUMNS, stats)
    assert arrow_source.column_names == silver_source(df, key_columns, COLUMNS, stats).columns
    assert arrow_source.to_pylist() == by_key(spark_source)  # also sorted by key, as delta-rs writes
    assert len({tuple(r[k] for k in key_columns) for r in spark_source}) == len(spark_source)  # one per key
    spark_ledger = [r.asDict() for r in ledger_rows(df, key_columns).collect()]
    assert arrow_ledger_rows(arrow_rows, key_columns).to_pylist() == spark_ledger


def test_the_cases_exercise_what_they_say() -> None:
    """Guards the generator: ties broken by the offset, truncates dropping older events, deletes winning."""
    table = batch(*CASES["many keys repeat"])
    seqs = [tuple(s) for s in table["_seq"].to_pylist()]
    assert len(seqs) > len(set(seqs))  # some events share a _seq: only the offset orders them
    stats = arrow_batch_stats(table, ("id",))
    assert stats.truncate_seq is None and stats.removals > 0
    source = arrow_silver_source(table, ("id",), COLUMNS, stats)
    assert "d" in source["_op"].to_pylist() and source.num_rows == 8
    truncated = batch(*CASES["two truncates"])
    stats = arrow_batch_stats(truncated, ("id",))
    assert stats.truncate_seq is not None
    kept = arrow_silver_source(truncated, ("id",), COLUMNS, stats)
    assert all(tuple(s) >= stats.truncate_seq for s in kept["_seq"].to_pylist())
    older = [s for s, op in zip(truncated["_seq"].to_pylist(), truncated["_op"].to_pylist())
             if op != "t" and tuple(s) < stats.truncate_seq]
    assert older  # the truncate has events to drop
    assert arrow_silver_source(batch(*CASES["all truncated"]), ("id",), COLUMNS,
                               arrow_batch_stats(batch(*CASES["all truncated"]), ("id",))).num_rows == 0
    assert len(table["_seq"][0]) == SEQ_LENGTH


def test_placeholders_stay_in_spark() -> None:
    table = batch(*CASES["no truncate"])
    unavailable = pa.array([["name"]] + [None] * (table.num_rows - 1), pa.list_(pa.string()))
    with_placeholder = table.set_column(table.schema.get_field_index("_unavailable"), "_unavailable", unavailable)
    with pytest.raises(ValueError, match="placeholders"):
        arrow_silver_source(with_placeholder, ("id",), COLUMNS, arrow_batch_stats(with_placeholder, ("id",)))
