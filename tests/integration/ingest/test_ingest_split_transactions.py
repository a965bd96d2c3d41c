"""Transactions split across micro-batches: events released after a hold are applied exactly once.

The batches are crafted from the real Debezium output (pg_setup.sql + pg_workload.sql) so that a
batch boundary falls inside transaction 1264 (customers x3, audit_full x1, nopk_events x1): its
customers events arrive in batch 2 without its audit_full and nopk_events events, while the two
later single-table transactions 1268 (insert Eve, id 5) and 1269 (update Dave, id 4) arrive
complete. 1264 is held, and so are 1268/1269: transactions are released in commit order, so
customers never shows Eve without 1264's changes (a state the source never had, issue 19). When
1264 completes, everything is released and written exactly once (FINDINGS #1: released events past
a held one were once skipped as "already committed" and lost). Real Spark, the real delta-rs writer, a
temp warehouse; no broker (the records go straight to the processor, so batch boundaries are exact).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from ingest_broker import encode, golden_records
from ingest_tables import assert_final_state, delta_exists, delta_rows

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job_state import JobState, load_state
from lakecdc.ingest.processor import BatchProcessor
from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA, KafkaMicroBatch

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
PREFIX = "split"
#: Indexes into the golden records (see ``golden_records``): batch 1 ends after transaction 1263;
#: batch 2 holds 1264's customers events and its markers, then 1265-1269 complete except that
#: 1264's audit_full (24) and nopk_events (25) events and 1265/1266's audit_full events wait.
BATCH_1 = range(0, 19)
LATE = {24, 25, 28, 31, 32}
BATCH_2 = [i for i in range(19, 40) if i not in LATE]
BATCH_3 = sorted(LATE | set(range(40, 46)))


def all_records() -> pa.Table:
    """Every golden record with its Kafka offset (counted per topic, partition 0)."""
    keys, values, topics, offsets = [], [], [], []
    next_offset: dict[str, int] = {}
    for record in golden_records(PREFIX):
        topic = record["topic"]
        offsets.append(next_offset.get(topic, 0))
        next_offset[topic] = offsets[-1] + 1
        keys.append(encode(record["key"]))
        values.append(encode(record["value"]))
        topics.append(topic)
    n = len(topics)
    return pa.Table.from_arrays([
        pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array(topics, pa.string()),
        pa.array([0] * n, pa.int32()), pa.array(offsets, pa.int64()),
        pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        pa.array([None] * n, KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)


def processor(spark, warehouse: Path, progress: Path, state: JobState | None = None) -> BatchProcessor:
    from lakecdc.writers.base import create_writer

    cfg = IngestConfig.from_properties({
        "name": PREFIX, "kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": PREFIX,
        "warehouse": str(warehouse), "table.format": "delta",
        "table.name.format.bronze": f"{PREFIX}_bronze.{{table}}",
        "table.name.format.silver": f"{PREFIX}_silver.{{table}}", "progress.path": str(progress)})
    return BatchProcessor(cfg, spark, state or JobState(),
                          lambda fmt: create_writer(fmt, spark, catalog=cfg.catalog, warehouse=cfg.warehouse))


def customers(warehouse: Path) -> dict[int, dict]:
    return {r["id"]: r for r in delta_rows(warehouse, f"{PREFIX}_silver.customers")}


def bronze_offsets(warehouse: Path) -> list[int]:
    return sorted(r["_offset"] for r in delta_rows(warehouse, f"{PREFIX}_bronze.customers"))


def test_events_released_behind_a_held_transaction_are_written(spark, tmp_path: Path) -> None:
    records, warehouse = all_records(), tmp_path / "lake"
    job = processor(spark, warehouse, tmp_path / "progress")

    job.process(KafkaMicroBatch(records.take(list(BATCH_1)), NOW, at_end_of_data=False))
    assert bronze_offsets(warehouse) == [0, 1, 2, 3, 4, 6, 7]  # customers through offset 8 (5, 8: tombstones)

    before = customers(warehouse)
    second = job.process(KafkaMicroBatch(records.take(BATCH_2), NOW, at_end_of_data=False))
    # 1264's customers events (offsets 9-11) wait for audit_full/nopk_events, and every later
    # transaction waits for 1264 (commit order): 1268 and 1269 are not applied before it.
    assert second.held_events > 3 and second.tables == {}
    assert customers(warehouse) == before and 5 not in before
    assert bronze_offsets(warehouse) == [0, 1, 2, 3, 4, 6, 7]

    third = job.process(KafkaMicroBatch(records.take(BATCH_3), NOW, at_end_of_data=True))
    assert third.held_events == 0
    assert_final_state(lambda n: delta_rows(warehouse, n), lambda n: delta_exists(warehouse, n), PREFIX)


def test_restart_after_the_release_replays_it_without_duplicates(spark, tmp_path: Path) -> None:
    """A crash after batch 2 (everything after 1263 held in memory): the tables' progress still
    points before 1264, so a new job re-reads it all; nothing lost, nothing doubled."""
    records, warehouse = all_records(), tmp_path / "lake"
    first_run = processor(spark, warehouse, tmp_path / "progress")
    first_run.process(KafkaMicroBatch(records.take(list(BATCH_1)), NOW, at_end_of_data=False))
    first_run.process(KafkaMicroBatch(records.take(BATCH_2), NOW, at_end_of_data=False))

    # The job state is lost with the crash: the tables alone say where to resume.
    (tmp_path / "progress" / "state.json").unlink()
    restarted = processor(spark, warehouse, tmp_path / "progress")
    resume = {t: restarted.start_offset(t, 0) for t in set(records.column("topic").to_pylist())}
    assert resume[f"{PREFIX}.public.customers"] == 8  # nothing of 1264 is committed yet
    keep = [i for i, (t, o) in enumerate(zip(records.column("topic").to_pylist(),
                                             records.column("offset").to_pylist()))
            if resume[t] is None or o > resume[t]]
    report = restarted.process(KafkaMicroBatch(records.take(keep), NOW, at_end_of_data=True))
    assert report.held_events == 0 and report.failed_tables == {}
    assert_final_state(lambda n: delta_rows(warehouse, n), lambda n: delta_exists(warehouse, n), PREFIX)
    state = json.loads((tmp_path / "progress" / "state.json").read_text())
    assert state["held_events"] == 0


def test_once_the_hold_is_released_a_restart_reads_nothing_again(spark, tmp_path: Path) -> None:
    """1264's END (record 26) comes a batch late: the first batch holds 1264's events and, in
    commit order, 1265/1266's audit_full events (offsets 2-4) behind them. When the next batch
    releases them all, the audit_full commit must cover offsets 2-4 too, although that batch reads
    no audit_full record: otherwise every restart reads what the tables already hold. The
    transaction topic is one partition read in order, so the first batch stops before 1264's END
    there (a later BEGIN would end 1264: transactions commit one after another), while the data
    topics are read further."""
    records, warehouse = all_records(), tmp_path / "lake"
    job = processor(spark, warehouse, tmp_path / "progress")
    topics = records.column("topic").to_pylist()
    markers = f"{PREFIX}.transaction"
    late = [i for i in range(26, 40) if topics[i] == markers]
    first = job.process(KafkaMicroBatch(records.take([i for i in range(40) if i not in late]), NOW,
                                        at_end_of_data=False))
    assert first.held_events > 5  # 1264: customers x3, audit_full, nopk_events; and every later one
    second = job.process(KafkaMicroBatch(records.take([*late, *range(40, 46)]), NOW, at_end_of_data=True))
    assert second.held_events == 0
    assert_final_state(lambda n: delta_rows(warehouse, n), lambda n: delta_exists(warehouse, n), PREFIX)

    restarted = processor(spark, warehouse, tmp_path / "progress", load_state(tmp_path / "progress"))
    last_offsets: dict[str, int] = {}
    for topic, offset in zip(records.column("topic").to_pylist(), records.column("offset").to_pylist()):
        if ".public." in topic:  # the tables' topics (the transaction topic's offsets are in the job state)
            last_offsets[topic] = max(offset, last_offsets.get(topic, -1))
    assert {t: restarted.start_offset(t, 0) for t in last_offsets} == last_offsets
