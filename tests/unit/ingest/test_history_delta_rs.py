"""The history step through delta-rs' real MERGE (DataFusion), against the whole-log model.

No Spark: the delta-rs writer's history primitives (``_read_arrow``, ``_merge_history``) and
``apply_history`` run on Arrow. Bronze and the delete ledger are plain Delta tables holding what
the writer's earlier steps would have appended. Events are delivered as Kafka would: offsets in
delivery order, ``_seq`` order shuffled against it (out-of-order sources, partitions read at
different speeds), whole stretches read again (replays: same offsets).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from history_model import check_chain, deliveries, event, model_history, source_histories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakecdc.lake.batch import ChangeBatch, TableTarget
from lakecdc.lake.history_chain import normalize_version
from lakecdc.lake.progress import CommitPositions
from lakecdc.lake.silver import BatchStats
from lakecdc.writers.delta_rs import DeltaRsWriter
from lakecdc.writers.history import HISTORY_META, apply_history

Row = dict[str, Any]
ROWS = StructType([StructField("id", LongType()), StructField("name", StringType()), StructField("note", StringType())])
EVENTS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("note", pa.string()), ("_op", pa.string()),
                    ("_seq", pa.list_(pa.int64())), ("_source_ts_ms", pa.int64()), ("_tx_id", pa.string()),
                    ("_partition", pa.int32()), ("_offset", pa.int64()), ("_unavailable", pa.list_(pa.string())),
                    ("_key_json", pa.string()), ("_old_key_json", pa.string())])
TOPIC = "shop.public.t"


class Lake:
    """One table's bronze, ledger and history under a temporary warehouse."""

    def __init__(self, warehouse: Path, **history: Any) -> None:
        self.writer = DeltaRsWriter(None, warehouse)  # type: ignore[arg-type]  # the history step needs no Spark
        self.target = TableTarget(topic=TOPIC, connector="postgres", database="shop", schema="public", table="t",
                                  bronze_table="bronze.t", silver_table="silver.t", format="delta",
                                  key_columns=("id",), history="scd2", **history)
        self.writer._create_table(self.target.history_table, StructType([*ROWS.fields, *HISTORY_META.fields]),
                                  "history", ("id",))
        self.offsets: set[int] = set()
        self.batch_id = 0

    def deliver(self, batch: list[Row]) -> int | None:
        """What ``LakeWriter.apply`` does for the history: bronze and ledger first, then the step."""
        events = pa.Table.from_pylist(batch, schema=EVENTS)
        fresh = events.filter(pa.array([e["_offset"] not in self.offsets for e in batch]))
        self.offsets |= {e["_offset"] for e in batch}
        bronze = fresh.rename_columns([("_kafka_partition" if c == "_partition" else c) for c in fresh.column_names])
        write_deltalake(self.writer.table_uri("bronze.t"), bronze, mode="append")
        removals = fresh.filter(pa.compute.is_in(fresh["_op"], pa.array(["d", "t"])))
        write_deltalake(self.writer.table_uri("silver.t__deletes"),
                        removals.select(["id", "_seq", "_op", "_source_ts_ms"]), mode="append")
        truncates = sorted(tuple(e["_seq"]) for e in batch if e["_op"] == "t")
        stats = BatchStats(events=len(batch), max_seq=max(tuple(e["_seq"]) for e in batch), min_source_ts_ms=None,
                           max_source_ts_ms=max(e["_source_ts_ms"] for e in batch), has_placeholders=False,
                           truncate_seq=truncates[-1] if truncates else None, truncate_ts_ms=None)
        change = ChangeBatch(self.target, [], None, {(TOPIC, 0): max(e["_offset"] for e in batch)})  # type: ignore[arg-type]
        self.batch_id += 1
        return apply_history(self.writer, self.target, events, stats, change, self.batch_id,
                             CommitPositions(connector="postgres"))

    def history(self) -> list[Row]:
        rows = DeltaTable(self.writer.table_uri(self.target.history_table)).to_pyarrow_table().to_pylist()
        return sorted((normalize_version(r) for r in rows), key=lambda v: (v["id"], v["_valid_from_seq"]))

    def versions(self) -> int:
        return DeltaTable(self.writer.table_uri(self.target.history_table)).version()


def in_delivery_order(batches: list[list[Row]]) -> list[list[Row]]:
    """Kafka offsets by first delivery; a replayed event keeps the offset it was first read at."""
    offsets: dict[int, int] = {}
    out = []
    for batch in batches:
        out.append([{**e, "_offset": offsets.setdefault(id_of(e), len(offsets))} for e in batch])
    return out


def id_of(e: Row) -> int:
    return hash((tuple(e["_seq"]), e["_op"], e["id"]))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_delta_rs_merge_folds_any_delivery_to_the_model(tmp_path_factory: Any, data: st.DataObject) -> None:
    events = data.draw(source_histories(max_steps=10))
    batches = in_delivery_order(data.draw(deliveries(events)))
    lake = Lake(tmp_path_factory.mktemp("lake"))
    for batch in batches:
        lake.deliver(batch)
        check_chain(lake.history())
    delivered = list({e["_offset"]: e for b in batches for e in b}.values())
    assert lake.history() == model_history(delivered)
    # replaying every batch: each one is covered by the history's progress and changes nothing
    version = lake.versions()
    for batch in batches:
        assert lake.deliver(batch) is None
    assert lake.versions() == version


def test_untracked_change_updates_in_place_through_delta_rs(tmp_path: Path) -> None:
    lake = Lake(tmp_path, track_history_except_columns=("note",))
    lake.deliver([event("c", 1, 0, 1, "a", "x"), event("u", 2, 1, 1, "a", "y")])
    lake.deliver([event("u", 3, 2, 1, "b", "y"), event("t", 4, 3, None)])
    assert [(v["_valid_from_seq"][0], v["_valid_to_seq"][0], v["name"], v["note"]) for v in lake.history()] == [
        (1, 3, "a", "y"), (3, 4, "b", "y")]


def test_truncate_closes_versions_outside_the_batch_through_delta_rs(tmp_path: Path) -> None:
    lake = Lake(tmp_path)
    lake.deliver([event("c", 1, 0, 1, "a", "x"), event("c", 2, 1, 2, "b", "x")])
    lake.deliver([event("t", 5, 2, None)])
    assert [(v["id"], v["_valid_to_seq"][0], v["_is_current"])
            for v in lake.history()] == [(1, 5, False), (2, 5, False)]
    assert lake.history()[0]["_valid_to_ts"] == 1_700_000_000_005


def test_audit_cli_reads_versions_and_as_of_from_history(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    lake = Lake(tmp_path)
    lake.deliver([event("c", 1, 0, 1, "first", "x"), event("c", 2, 1, 2, "other", "x")])
    lake.deliver([event("u", 5, 2, 1, "second", "x"), event("d", 6, 3, 2)])
    runner = CliRunner()
    base = ["audit", "scd2", "silver.t", "-w", str(tmp_path), "-f", "delta"]
    versions = runner.invoke(app, [*base, "--key", "id=1"], env={"COLUMNS": "300"})
    assert versions.exit_code == 0, versions.output
    assert "first" in versions.output and "second" in versions.output and "2 rows" in versions.output
    as_of = runner.invoke(app, [*base, "--position", "3,3,0,0"], env={"COLUMNS": "300"})
    assert as_of.exit_code == 0, as_of.output
    assert "first" in as_of.output and "other" in as_of.output and "second" not in as_of.output
    later = runner.invoke(app, [*base, "--position", "6,6,0,0"], env={"COLUMNS": "300"})
    assert "second" in later.output and "other" not in later.output
    wrong = runner.invoke(app, [*base, "--key", "id=1", "--position", "3"])
    assert wrong.exit_code == 1 and "exactly one of" in wrong.output
