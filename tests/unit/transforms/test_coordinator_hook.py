"""The coordinator runs the connector's transform chain on every record, snapshot and streaming, before
the sink, whatever the connector; the offsets still follow the source, dropped records included."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scripted_source import ScriptedConnector, ScriptedStream

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.spi import SnapshotResult
from lakecdc.transforms import build_chain
from lakecdc.transport.offsets import FileOffsetStore, offset_key

from .records import change, delete_pair, row


class ListSink:
    def __init__(self) -> None:
        self.records: list[Any] = []

    def send(self, records: list[Any]) -> None:
        self.records.extend(records)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass




class Snapshot:
    def run(self, emit: Any) -> SnapshotResult:
        emit([change("r", None, row(1))])
        return SnapshotResult({"lsn": 90, "snapshot": True, "last_snapshot_record": True}, 1, 1)


def connector(chain: Any) -> ScriptedConnector:
    stream = ScriptedStream([[change("c", None, row(2))], delete_pair(2)])
    return ScriptedConnector("hook", stream, Snapshot(), SimpleNamespace(transform_chain=chain))


def test_chain_runs_on_snapshot_and_streaming_records(tmp_path: Path) -> None:
    chain = build_chain({"transforms": "r,u", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
                         "transforms.r.regex": r"dbz\.(.*)", "transforms.r.replacement": "lake.$1",
                         "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                         "transforms.u.delete.tombstone.handling.mode": "drop"})
    sink = ListSink()
    store = FileOffsetStore(tmp_path / "o.json")
    stats = CaptureCoordinator(connector(chain), sink, store,
                               CoordinatorSettings(commit_interval_s=0.0, stop_when_idle_s=5.0)).run()
    assert [(r.topic, r.value["id"]) for r in sink.records] == [("lake.public.items", 1), ("lake.public.items", 2)]
    assert stats.streamed_records == 3  # counted as the source produced them; the delete pair was dropped
    # streaming resumed at the snapshot's LSN (90) and read two batches
    assert store.load(offset_key("hook", {"server": "dbz"}))["lsn"] == 110


def test_no_chain_sends_the_records_unchanged(tmp_path: Path) -> None:
    sink = ListSink()
    CaptureCoordinator(connector(build_chain({})), sink,
                       FileOffsetStore(tmp_path / "o.json"),
                       CoordinatorSettings(commit_interval_s=0.0, stop_when_idle_s=5.0)).run()
    assert [r.op for r in sink.records] == ["r", "c", "d", None]
