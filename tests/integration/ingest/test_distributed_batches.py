"""A batch processed on the executors leaves exactly the tables a batch processed in one process leaves.

The same crafted micro-batches go through two ``BatchProcessor``s: as Arrow records (the driver
decodes, holds and ranks rows) and as Spark DataFrames (``executor_batch``: the executors decode,
the driver works on aggregates, the writer gets executor-side DataFrames). The records are real
Debezium output (pg_setup.sql + pg_workload.sql: a truncate, a table without a key, transaction
markers, tombstones) plus a malformed record and a primary-key change's create (Debezium's
``__debezium.oldkey`` header), cut so that transaction 1264 is split across batches and held.
Every table each run writes (bronze, silver, delete ledgers, dead letters) must be equal.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from ingest_broker import encode, golden_records
from ingest_tables import MALFORMED, delta_rows

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job_state import JobState
from lakecdc.ingest.processor import BatchProcessor, BatchReport
from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA, KafkaMicroBatch
from lakecdc.lake.frames import arrow_to_spark, kafka_schema

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=timezone.utc)
PREFIX = "dist"
#: Golden record indexes (as ``test_ingest_split_transactions``): batch 2 holds 1264's customers events,
#: its audit_full (24) and nopk_events (25) events and 1265/1266's audit_full events come in batch 3.
LATE = {24, 25, 28, 31, 32}
GOLDEN_BATCHES = (list(range(0, 19)), [i for i in range(19, 40) if i not in LATE], sorted(LATE | set(range(40, 46))))


def records() -> tuple[pa.Table, list[list[int]]]:
    """The golden records with a malformed one (first in batch 2) and a key move (last in batch 3),
    offsets counted per topic in order, and the three batches' row indexes."""
    golden = golden_records(PREFIX)
    customers = f"{PREFIX}.public.customers"
    frank = next(r for r in reversed(golden) if r["topic"] == customers and r["value"]
                 and r["value"]["payload"].get("op") == "c")
    moved = copy.deepcopy(frank)  # Frank's row under a new key: the create of a primary-key change
    moved["value"]["payload"]["after"]["id"] = 7
    moved["value"]["payload"]["transaction"] = None
    moved["key"]["payload"]["id"] = 7
    rows = [(r["topic"], encode(r["key"]), encode(r["value"]), None) for r in golden]
    rows.insert(19, (customers, b'{"id":999}', MALFORMED, None))
    rows.append((customers, encode(moved["key"]), encode(moved["value"]),
                 [{"key": "__debezium.oldkey", "value": orjson.dumps(frank["key"])}]))
    shift = [i if i < 19 else i + 1 for i in range(len(golden))]
    batches = [[shift[i] for i in GOLDEN_BATCHES[0]], [19, *(shift[i] for i in GOLDEN_BATCHES[1])],
               [*(shift[i] for i in GOLDEN_BATCHES[2]), len(rows) - 1]]
    offsets, next_offset = [], {}
    for topic, *_ in rows:
        offsets.append(next_offset.get(topic, 0))
        next_offset[topic] = offsets[-1] + 1
    n = len(rows)
    table = pa.Table.from_arrays([
        pa.array([r[1] for r in rows], pa.binary()), pa.array([r[2] for r in rows], pa.binary()),
        pa.array([r[0] for r in rows], pa.string()), pa.array([0] * n, pa.int32()), pa.array(offsets, pa.int64()),
        pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        pa.array([r[3] for r in rows], KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)
    return table, batches


def processor(spark, warehouse: Path, progress: Path, expectations: Path | None = None,
              history: bool = False) -> BatchProcessor:
    from lakecdc.writers.base import create_writer

    rules = {} if expectations is None else {  # on customers, quarantining what fails
        f"table.mapping.{PREFIX}.public.customers.expectations": str(expectations),
        f"table.mapping.{PREFIX}.public.customers.expectations_action": "quarantine"}
    if history:
        rules[f"table.mapping.{PREFIX}.public.customers.history"] = "scd2"
    cfg = IngestConfig.from_properties({
        "name": PREFIX, "kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": PREFIX,
        "warehouse": str(warehouse), "table.format": "delta", "table.name.format.bronze": f"{PREFIX}_bronze.{{table}}",
        "table.name.format.silver": f"{PREFIX}_silver.{{table}}", "progress.path": str(progress), **rules})
    state = JobState()
    if (progress / "state.json").exists():
        from lakecdc.ingest.job_state import load_state

        state = load_state(progress)
    return BatchProcessor(cfg, spark, state,
                          lambda fmt: create_writer(fmt, spark, catalog=cfg.catalog, warehouse=cfg.warehouse))


def batch(spark, rows: pa.Table, at_end: bool, distributed: bool) -> KafkaMicroBatch:
    if not distributed:
        return KafkaMicroBatch(rows, NOW, at_end)
    df = arrow_to_spark(spark, rows, kafka_schema()).repartition(2)  # two tasks: records spread over them
    return KafkaMicroBatch(None, NOW, at_end, spark, df)


def outcome(report: BatchReport) -> tuple:
    # A replayed tombstone counts as a tombstone where replays are dropped after decoding (the driver,
    # on a topic's first sight) and as a replay where before it (the executors): their sum is what holds.
    return (report.records, report.events, report.replayed + report.tombstones, report.dead_letters,
            report.held_events, report.tables, report.failed_tables)


def tables(warehouse: Path) -> dict[str, list[str]]:
    """Every Delta table under the warehouse, its rows as sorted JSON (ingest and publish times left out)."""
    out = {}
    for log in sorted(warehouse.rglob("_delta_log")):
        name = ".".join(log.parent.relative_to(warehouse).parts)
        rows = delta_rows(warehouse, name)
        kept = ({k: v for k, v in r.items() if k not in ("_ingest_ts", "_ingest_date", "published_at", "checked_at")}
                for r in rows)
        out[name] = sorted(json.dumps(r, default=str, sort_keys=True) for r in kept)
    return out


def run(spark, tmp_path: Path, distributed: bool, restart_after: int | None = None,
        expectations: Path | None = None) -> tuple[list[tuple], Path]:
    table, batches = records()
    warehouse, progress = tmp_path / ("executors" if distributed else "driver"), tmp_path / f"state-{distributed}"
    job = processor(spark, warehouse, progress, expectations)
    reports = []
    for i, rows in enumerate(batches):
        if i == restart_after:  # a kill: the held events and the job state are gone
            job.close()
            (progress / "state.json").unlink()
            job = processor(spark, warehouse, progress, expectations)
            rows = list(range(len(table)))  # read again from the start: the tables say what is a replay
        reports.append(outcome(job.process(batch(spark, table.take(rows), i == len(batches) - 1, distributed))))
    job.close()
    return reports, warehouse


def test_executor_batches_write_the_tables_of_one_process(spark, tmp_path: Path) -> None:
    want, driver = run(spark, tmp_path, distributed=False)
    have, executors = run(spark, tmp_path, distributed=True)
    assert have == want
    assert want[1][4] > 3 and want[1][3] == 1  # batch 2 held 1264 and later transactions; the malformed record
    assert tables(executors) == tables(driver)
    silver = {r["id"] for r in delta_rows(executors, f"{PREFIX}_silver.customers")}
    assert 7 in silver  # the key move reached silver, after the truncate
    bronze = delta_rows(executors, f"{PREFIX}_bronze.customers")
    assert any(r["_op"] == "t" for r in bronze) and any(r["_old_key_json"] for r in bronze)


def test_a_restart_that_lost_its_held_events_and_state_writes_the_same_tables(spark, tmp_path: Path) -> None:
    """Killed after batch 2, the restarted job reads every record again and knows only the tables' offsets:
    without a state file a topic's table (keyed or not) and so its committed offsets are known once its
    records are decoded; on the executors the batch is then decoded again with them."""
    want, driver = run(spark, tmp_path, distributed=False, restart_after=2)
    have, executors = run(spark, tmp_path, distributed=True, restart_after=2)
    assert have == want and want[2][2] > 9  # the restart read records the tables held: replays
    assert tables(executors) == tables(driver)


def test_pipeline_expectations_on_executor_batches_quarantine_what_one_process_does(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table with pipeline expectations whose batch is on the executors: the failing events (and
    only they) are collected for the quarantine table, which ends equal to the one-process run's."""
    from lakecdc.quality import pipeline

    collected: list[int] = []
    failing_rows = pipeline._failing_rows

    def counted(df, ids):  # type: ignore[no-untyped-def]
        rows = failing_rows(df, ids)
        collected.append(len(rows))
        return rows

    monkeypatch.setattr(pipeline, "_failing_rows", counted)
    suite = tmp_path / "customers.json"
    suite.write_text(json.dumps({"name": "customers_pipeline", "expectations": [
        {"type": "expect_column_values_to_not_match_regex", "kwargs": {"column": "name", "regex": "^Frank$"}}]}))
    want, driver = run(spark, tmp_path, distributed=False, expectations=suite)
    have, executors = run(spark, tmp_path, distributed=True, expectations=suite)
    assert have == want
    assert tables(executors) == tables(driver)
    held = delta_rows(executors, f"{PREFIX}_silver.customers_quarantine")
    assert held and {json.loads(r["row_json"])["name"] for r in held} == {"Frank"}
    assert {json.loads(r["row_key"])["id"] for r in held} <= {6, 7}  # Frank's create and the key move's
    assert sum(collected) == len(held)  # the driver took the failing events, not the batch


def moved_records() -> tuple[pa.Table, list[list[int]]]:
    """Without transaction metadata, over two partitions: Alice (key 1, partition 0) is created, her
    ``payload`` updated, then her key changed to 9 (partition 1) by an UPDATE that left ``payload``
    alone, so the create of key 9 holds the unchanged-TOAST placeholder; key 9 is then updated the same
    way (her name changed). Batch 1 reads partition 1 to its end but partition 0 only to the create."""
    golden = golden_records(PREFIX)
    customers = f"{PREFIX}.public.customers"
    template = next(r for r in golden if r["topic"] == customers and r["value"]
                    and r["value"]["payload"]["op"] == "c")
    unavailable = "__debezium_unavailable_value"

    def event(key: int, op: str, lsn: int, payload: str | None, headers: list | None = None,
              name: str = "Alice") -> tuple:
        value = copy.deepcopy(template["value"])
        body = value["payload"]
        after = {**body["after"], "id": key, "name": name, "payload": payload}
        body.update(op=op, transaction=None, before={**after, "payload": None} if op == "d" else None,
                    after=None if op == "d" else after)
        body["source"].update(lsn=lsn, sequence=json.dumps([str(lsn - 8), str(lsn)]), txId=lsn)
        key_doc = copy.deepcopy(template["key"])
        key_doc["payload"]["id"] = key
        return customers, encode(key_doc), encode(value), headers

    moved = [{"key": "__debezium.oldkey", "value": orjson.dumps({"id": 1})}]
    partition0 = [event(1, "c", 1000, '{"v": 1}'), event(1, "u", 1008, '{"v": 2}'),
                  event(1, "d", 1016, None, [{"key": "__debezium.newkey", "value": orjson.dumps({"id": 9})}])]
    partition1 = [event(9, "c", 1016, unavailable, moved), event(9, "u", 1024, unavailable, name="Alicia")]
    rows = [(0, i, r) for i, r in enumerate(partition0)] + [(1, i, r) for i, r in enumerate(partition1)]
    n = len(rows)
    table = pa.Table.from_arrays([
        pa.array([r[1] for _, _, r in rows], pa.binary()), pa.array([r[2] for _, _, r in rows], pa.binary()),
        pa.array([r[0] for _, _, r in rows], pa.string()), pa.array([p for p, _, _ in rows], pa.int32()),
        pa.array([o for _, o, _ in rows], pa.int64()),
        pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        pa.array([r[3] for _, _, r in rows], KAFKA_ARROW_SCHEMA.field("headers").type),
    ], schema=KAFKA_ARROW_SCHEMA)
    return table, [[0, 3, 4], [1, 2]]


@pytest.mark.parametrize("distributed", [False, True], ids=["driver", "executors"])
def test_a_key_change_read_before_its_old_keys_partition_takes_the_newest_old_values(
        spark, tmp_path: Path, distributed: bool) -> None:
    """The create of key 9 (and key 9's next change) wait until partition 0 is read to the change, so
    silver and the SCD2 history take Alice's payload as it was just before it ({"v": 2}), not the
    older value read in the same batch or nothing."""
    table, batches = moved_records()
    topic = f"{PREFIX}.public.customers"
    warehouse = tmp_path / "lake"
    job = processor(spark, warehouse, tmp_path / "state", history=True)
    first = job.process(KafkaMicroBatch(table.take(batches[0]), NOW, False, lagging=frozenset({(topic, 0)}))
                        if not distributed else batch_with_lagging(spark, table.take(batches[0]), {(topic, 0)}))
    assert first.held_events == 2  # key 9's create and update
    assert [r["id"] for r in delta_rows(warehouse, f"{PREFIX}_silver.customers")] == [1]
    job.process(batch(spark, table.take(batches[1]), True, distributed))
    job.close()
    silver = {r["id"]: r for r in delta_rows(warehouse, f"{PREFIX}_silver.customers")}
    assert set(silver) == {9} and json.loads(silver[9]["payload"]) == {"v": 2} and silver[9]["name"] == "Alicia"
    versions = sorted(delta_rows(warehouse, f"{PREFIX}_silver.customers__history"),
                      key=lambda r: (r["id"], r["_valid_from_seq"]))
    assert [(r["id"], r["name"], json.loads(r["payload"])) for r in versions] == [
        (1, "Alice", {"v": 1}), (1, "Alice", {"v": 2}), (9, "Alice", {"v": 2}), (9, "Alicia", {"v": 2})]


def batch_with_lagging(spark, rows: pa.Table, lagging: set[tuple[str, int]]) -> KafkaMicroBatch:
    df = arrow_to_spark(spark, rows, kafka_schema()).repartition(2)
    return KafkaMicroBatch(None, NOW, False, spark, df, lagging=frozenset(lagging))
