"""The coordinator's commit steps with a transactional sink, and periodic commits in a snapshot.

The sinks here are small recording sinks (the Kafka behaviour itself is tested on brokers in
tests/integration/capture/test_transactional_offsets.py); what is tested is the coordinator's
order of calls and what it stores.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from scripted_source import ScriptedConnector, ScriptedStream

from lakecdc.capture.coordinator import SNAPSHOT_IN_PROGRESS, CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.postgres.offset import snapshot_completed
from lakecdc.capture.spi import SnapshotResult
from lakecdc.errors import SinkTransientError
from lakecdc.transport.offsets import FileOffsetStore, OffsetRecord, offset_key

KEY = offset_key("inv", {"server": "dbz"})


class TransactionalRecordingSink:
    """Keeps what a transaction would: records sent since the last commit are ``pending``; ``flush``
    commits them (or fails once when told to), ``abort`` drops them."""

    transactional = True
    bootstrap_servers = "b1:9092,b2:9092"

    def __init__(self, fail_commits: int = 0, transaction_timeout_s: float = 60.0) -> None:
        self.pending: list[Any] = []
        self.committed: list[list[Any]] = []
        self.calls: list[str] = []
        self.fail_commits = fail_commits
        self.transaction_timeout_s = transaction_timeout_s

    def send(self, records: list[Any]) -> None:
        self.calls.append("send")
        self.pending.extend(records)

    def send_raw(self, topic: str, key: bytes, value: bytes | None, headers: Any = None,
                 partition: int | None = None) -> None:
        self.calls.append(f"offset:{value!r}")
        self.pending.append(("offset", topic, key, value, partition))

    def flush(self) -> None:
        if self.fail_commits:
            self.fail_commits -= 1
            self.calls.append("flush-failed")
            raise SinkTransientError("injected: the commit did not happen")
        self.calls.append("commit")
        self.committed.append(self.pending)
        self.pending = []

    def abort(self) -> None:
        self.calls.append("abort")
        self.pending = []

    def close(self) -> None:
        pass


class TopicStore(FileOffsetStore):
    """A file store that also offers the Kafka store's in-transaction interface."""

    bootstrap_servers = "b2:9092, b1:9092"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved_directly = 0

    def record(self, key: str, offset: dict[str, Any] | None) -> OffsetRecord:
        import json

        return OffsetRecord("offsets", key.encode(), json.dumps(offset).encode(), 0)

    def remember(self, key: str, offset: dict[str, Any]) -> None:
        super().save(key, offset)

    def save(self, key: str, offset: dict[str, Any]) -> None:
        self.saved_directly += 1
        super().save(key, offset)




def connector(snapshot: Snapshot, stream: ScriptedStream) -> ScriptedConnector:
    return ScriptedConnector("inv", stream, snapshot)


class Snapshot:
    def __init__(self, batches: int, fail_after: int | None = None, pause_s: float = 0.0) -> None:
        self.batches, self.fail_after, self.pause_s = batches, fail_after, pause_s

    def run(self, emit: Any) -> SnapshotResult:
        for i in range(self.batches):
            time.sleep(self.pause_s)  # reading the next batch
            if self.fail_after is not None and i == self.fail_after:
                raise RuntimeError("killed mid-snapshot")
            emit([f"r{i}a", f"r{i}b"])
        return SnapshotResult({"lsn": 90, "snapshot": True, "last_snapshot_record": True}, 2 * self.batches, 1)




def test_offset_is_written_into_the_transaction_of_its_events(tmp_path: Path) -> None:
    sink, store = TransactionalRecordingSink(), TopicStore(tmp_path / "o.json")
    stream = ScriptedStream([["a", "b"], ["c"]])
    CaptureCoordinator(connector(Snapshot(1), stream), sink, store,
                       CoordinatorSettings(commit_interval_s=0.0, stop_when_idle_s=5.0)).run()
    assert store.saved_directly == 0  # never a second, separate write
    for transaction in sink.committed:
        # every committed transaction ends with the offset covering exactly its events
        assert transaction[-1][0] == "offset" and all(item[0] != "offset" for item in transaction[:-1])
    events = [item for tx in sink.committed for item in tx if item[0] != "offset"]
    assert events == ["r0a", "r0b", "a", "b", "c"]
    assert store.load(KEY) == {"lsn": 110}  # streaming began at the snapshot's lsn 90


def test_failed_commit_keeps_neither_events_nor_offset_and_resumes_from_the_last_commit(tmp_path: Path) -> None:
    sink, store = TransactionalRecordingSink(), TopicStore(tmp_path / "o.json")
    stream = ScriptedStream([["a", "b"], ["c"], ["d"]])
    coordinator = CaptureCoordinator(connector(Snapshot(1), stream), sink, store,
                                     CoordinatorSettings(commit_interval_s=0.0, stop_when_idle_s=5.0,
                                                         retry_backoff_s=0.0))
    original_flush = sink.flush
    seen: list[Any] = []

    def flush_failing_once_after_snapshot() -> None:
        if len(sink.committed) == 1 and not seen:
            seen.append(store.load(KEY))
            sink.fail_commits = 1
        original_flush()

    sink.flush = flush_failing_once_after_snapshot  # type: ignore[method-assign]
    coordinator.run()
    failed = sink.calls.index("flush-failed")
    assert sink.calls[failed + 1] == "abort"  # the failed transaction is dropped before re-sending
    assert seen == [{"lsn": 90, "snapshot": True, "last_snapshot_record": True}]
    assert stream.started_from[1] == {"lsn": 90, "snapshot": True, "last_snapshot_record": True}
    events = [item for tx in sink.committed for item in tx if item[0] != "offset"]
    assert "a" not in events[:2] and events[-1] == "d"  # a, b were re-sent after the abort
    assert store.load(KEY) == {"lsn": stream.lsn}


def test_long_snapshot_commits_periodically_with_the_in_progress_offset(tmp_path: Path) -> None:
    # records bound: a commit every 4 records (2 batches), whatever the clock says
    sink, store = TransactionalRecordingSink(), TopicStore(tmp_path / "o.json")
    CaptureCoordinator(connector(Snapshot(7), ScriptedStream([])), sink, store,
                       CoordinatorSettings(max_unflushed_records=4, stop_when_idle_s=0.0)).run()
    snapshot_transactions = sink.committed[:4]
    assert [len([i for i in tx if i[0] != "offset"]) for tx in snapshot_transactions] == [4, 4, 4, 2]
    import json

    stored = [json.loads(tx[-1][3]) for tx in snapshot_transactions]
    assert stored[:3] == [SNAPSHOT_IN_PROGRESS] * 3
    assert stored[3] == {"lsn": 90, "snapshot": True, "last_snapshot_record": True}


def test_snapshot_commits_within_the_transaction_timeout(tmp_path: Path) -> None:
    # time bound: a quarter of transaction.timeout.ms (1 ms here); batches come 10 ms apart
    sink = TransactionalRecordingSink(transaction_timeout_s=0.004)
    CaptureCoordinator(connector(Snapshot(3, pause_s=0.01), ScriptedStream([])), sink, TopicStore(tmp_path / "o.json"),
                       CoordinatorSettings(stop_when_idle_s=0.0)).run()
    assert [len([i for i in tx if i[0] != "offset"]) for tx in sink.committed[:3]] == [2, 2, 2]


def test_crash_mid_snapshot_restarts_the_snapshot(tmp_path: Path) -> None:
    sink, store = TransactionalRecordingSink(), TopicStore(tmp_path / "o.json")
    crashing = connector(Snapshot(6, fail_after=4), ScriptedStream([]))
    try:
        CaptureCoordinator(crashing, sink, store, CoordinatorSettings(max_unflushed_records=4,
                                                                      stop_when_idle_s=0.0)).run()
    except RuntimeError:
        pass
    assert TopicStore(tmp_path / "o.json").load(KEY) == SNAPSHOT_IN_PROGRESS
    again = connector(Snapshot(2), ScriptedStream([]))
    CaptureCoordinator(again, TransactionalRecordingSink(), TopicStore(tmp_path / "o.json"),
                       CoordinatorSettings(stop_when_idle_s=0.0)).run()
    assert again.snapshots_started == 1  # the unfinished snapshot is taken again, not resumed
    assert snapshot_completed(TopicStore(tmp_path / "o.json").load(KEY))


def test_streaming_only_start_ignores_the_in_progress_marker(tmp_path: Path) -> None:
    store = TopicStore(tmp_path / "o.json")
    store.save(KEY, dict(SNAPSHOT_IN_PROGRESS))
    stream = ScriptedStream([["x"]])
    CaptureCoordinator(connector(Snapshot(1), stream), TransactionalRecordingSink(), store,
                       CoordinatorSettings(snapshot_mode="never", stop_when_idle_s=5.0)).run()
    assert stream.started_from == [None]


def test_file_offsets_or_other_brokers_keep_the_separate_store_step(tmp_path: Path) -> None:
    class OtherCluster(TopicStore):
        bootstrap_servers = "elsewhere:9092"

    for store in (OtherCluster(tmp_path / "a.json"), FileOffsetStore(tmp_path / "b.json")):
        sink = TransactionalRecordingSink()
        CaptureCoordinator(connector(Snapshot(1), ScriptedStream([])), sink, store,
                           CoordinatorSettings(stop_when_idle_s=0.0)).run()
        assert not any(call.startswith("offset:") for call in sink.calls)
        assert store.load(KEY)["lsn"] == 90
