"""The batch processor on batches that touch no table, and the batch summary sentence."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import orjson
from ingest_records import kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job_state import JobState
from lakecdc.ingest.metrics import describe
from lakecdc.ingest.processor import BatchProcessor, BatchReport
from lakecdc.ingest.reader import KafkaMicroBatch

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)


def no_writer(table_format: str):
    raise AssertionError(f"a batch without table events must not open a {table_format} writer")


def test_control_topics_update_state_and_record_ddl_without_tables(tmp_path: Path) -> None:
    config = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "shop",
                                           "progress.path": str(tmp_path)})
    records = kafka_table([
        ("__debezium-heartbeat.shop", None, orjson.dumps({"schema": None, "payload": {"ts_ms": 1795336046000}})),
        ("shop", None, orjson.dumps({"schema": None, "payload": {"ddl": "CREATE TABLE t (id int)",
                                                                 "databaseName": "inv"}})),
        ("shop.transaction", None, orjson.dumps({"schema": None, "payload": {
            "status": "BEGIN", "id": "571:1", "event_count": None, "data_collections": None, "ts_ms": 1}})),
    ])
    processor = BatchProcessor(config, None, JobState(), no_writer)
    report = processor.process(KafkaMicroBatch(records, NOW, at_end_of_data=True))
    assert report.events == 0 and report.dead_letters == 0 and report.batch_id == 1
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["source_heartbeat_ts_ms"] == 1795336046000
    assert state["control_offsets"]["shop"] == {"0": 0}
    # the transaction is open: its topic resumes before its BEGIN
    assert state["control_offsets"]["shop.transaction"] == {"0": -1}
    ddl = [json.loads(line) for line in (tmp_path / "schema_changes.jsonl").read_text().splitlines()]
    assert [d["payload"]["ddl"] for d in ddl] == ["CREATE TABLE t (id int)"]


def test_batch_sentence_in_the_users_words() -> None:
    report = BatchReport(batch_id=12, events=5000, tables={"a": 1, "b": 2, "c": 4997}, held_events=4, dead_letters=1,
                         max_source_ts_ms=1_000_000, seconds=2.0)
    text = describe(report, now_ms=1_001_200)
    assert text == ("batch 12: applied 5,000 changes to 3 tables in 2.0 s (2,500 changes/s), 1.2 s behind the "
                    "source; 4 held back for open transactions; 1 record to the dead-letter table")


def test_keyed_topics_survive_a_restart_through_the_state_file(tmp_path: Path) -> None:
    """A restarted job's decoder knows which topics carry keys before it sees one (a null key on such
    a topic in its first batch is then a dead letter: test_decode_malformed)."""
    from lakecdc.ingest.job_state import load_state, save_state

    config = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "shop",
                                           "progress.path": str(tmp_path)})
    first = BatchProcessor(config, None, JobState(), no_writer)
    first._decoder.remember_keyed("shop.public.customers", ("id",))
    first.process(KafkaMicroBatch(kafka_table([]), NOW, at_end_of_data=True))
    restarted = BatchProcessor(config, None, load_state(tmp_path), no_writer)
    assert restarted._decoder.keyed_topics() == {"shop.public.customers": ("id",)}
    save_state(tmp_path, JobState())  # a lost or fresh state file knows nothing, and refuses nothing
    assert BatchProcessor(config, None, load_state(tmp_path), no_writer)._decoder.keyed_topics() == {}
