"""Streaming commits into a sink that acknowledges asynchronously (Kafka: ``checkpoint``/``settled``):
capture never waits for the broker between commits, and an offset is stored only once every record
sent before it is acknowledged (Kafka Connect's ``SubmittedRecords``). The sink here acknowledges
when the test says so; the Kafka sink itself is tested on a broker in
tests/integration/test_transport.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.errors import SinkTransientError
from lakecdc.transport.offsets import FileOffsetStore, offset_key

KEY = offset_key("acks", {"server": "dbz"})


class LaggingSink:
    """Acknowledges a record only ``lag`` sends after it was sent (``flush`` acknowledges all);
    can fail every unacknowledged record once."""

    def __init__(self, lag: int) -> None:
        self.lag = lag
        self.sent: list[int] = []
        self.acked = 0  # records acknowledged (a prefix of ``sent``)
        self.checkpoints: list[int] = []  # records sent at each checkpoint
        self.flushes = 0
        self.fail_next_check = False

    def send(self, records: list[int]) -> None:
        self.sent.extend(records)
        self.acked = max(self.acked, len(self.sent) - self.lag * len(records))

    def checkpoint(self) -> int:
        self.checkpoints.append(len(self.sent))
        return len(self.checkpoints) - 1

    def settled(self, checkpoint: int) -> bool:
        if self.fail_next_check:
            raise SinkTransientError("injected: records were not delivered")
        return self.acked >= self.checkpoints[checkpoint]

    def flush(self) -> None:
        self.flushes += 1
        self.acked = len(self.sent)

    def close(self) -> None:
        pass


class Stream:
    """Emits records 0..n-1 in batches; the offset after record i is ``{"pos": i + 1}``; raises
    (a crash) at batch ``crash_at``."""

    def __init__(self, total: int, batch: int, crash_at: int | None = None,
                 sink: LaggingSink | None = None, offsets: FileOffsetStore | None = None) -> None:
        self.total, self.batch, self.crash_at = total, batch, crash_at
        self.sink, self.offsets = sink, offsets
        self.pos = 0
        self.polls = 0
        self.stored_at_ack: list[tuple[dict[str, Any], int]] = []

    def start(self, offset: Any) -> None:
        self.pos = offset["pos"] if offset else 0

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        self.polls += 1
        if self.crash_at is not None and self.polls == self.crash_at:
            raise RuntimeError("killed mid-stream")
        out.extend(range(self.pos, min(self.pos + self.batch, self.total)))
        self.pos = min(self.pos + self.batch, self.total)

    def committable_offset(self) -> dict[str, Any]:
        return {"pos": self.pos}

    def acknowledge(self, offset: dict[str, Any]) -> None:
        assert self.sink is not None
        self.stored_at_ack.append((offset, self.sink.acked))

    def idle_seconds(self) -> float:
        return 0.0 if self.pos < self.total else 10.0

    def close(self) -> None:
        pass


class Connector:
    name = "acks"
    partition = {"server": "dbz"}

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def streaming_source(self) -> Stream:
        return self.stream

    def offset_has_completed_snapshot(self, stored: Any) -> bool:
        return True

    def can_resume_streaming(self, stored: Any) -> bool:
        return True

    def close(self) -> None:
        pass


def run(stream: Stream, sink: LaggingSink, store: FileOffsetStore) -> None:
    settings = CoordinatorSettings(snapshot_mode="never", commit_interval_s=0.0, stop_when_idle_s=1.0)
    CaptureCoordinator(Connector(stream), sink, store, settings).run()


def test_offsets_are_stored_only_for_acknowledged_records_without_flushing(tmp_path: Path) -> None:
    sink = LaggingSink(lag=3)
    store = FileOffsetStore(tmp_path / "offsets.json")
    stream = Stream(total=200, batch=10, sink=sink, offsets=store)
    run(stream, sink, store)
    # every stored offset covered acknowledged records only: position <= records acknowledged then
    assert stream.stored_at_ack, "no offset was committed while streaming"
    assert all(offset["pos"] <= acked for offset, acked in stream.stored_at_ack)
    # commits while streaming did not flush: only the end of streaming did
    assert sink.flushes == 1
    assert len(stream.stored_at_ack) > 2
    assert store.load(KEY) == {"pos": 200}
    assert sink.sent == list(range(200))


def test_crash_resumes_from_an_acknowledged_offset_without_loss(tmp_path: Path) -> None:
    sink = LaggingSink(lag=4)
    store = FileOffsetStore(tmp_path / "offsets.json")
    with pytest.raises(RuntimeError, match="killed"):
        run(Stream(total=300, batch=10, crash_at=15, sink=sink), sink, store)
    stored = store.load(KEY)
    assert stored is not None and 0 < stored["pos"] <= sink.acked < len(sink.sent)
    # what the broker kept: the acknowledged prefix (the rest died with the process)
    delivered = sink.sent[:sink.acked]
    again = LaggingSink(lag=4)
    run(Stream(total=300, batch=10, sink=again), again, store)
    records = delivered + again.sent
    assert set(records) == set(range(300))  # nothing lost
    # re-sent only what came after the stored offset, each once more at most
    assert all(records.count(r) == 1 for r in range(stored["pos"]))
    assert all(records.count(r) <= 2 for r in range(300))


def test_a_delivery_failure_stores_nothing_after_the_last_acknowledged_offset(tmp_path: Path) -> None:
    sink = LaggingSink(lag=2)
    store = FileOffsetStore(tmp_path / "offsets.json")
    stream = Stream(total=10_000, batch=10, sink=sink)
    settings = CoordinatorSettings(snapshot_mode="never", commit_interval_s=0.0, stop_when_idle_s=1.0, max_retries=0)
    coordinator = CaptureCoordinator(Connector(stream), sink, store, settings)

    original = stream.poll

    def poll(out: list[Any], max_records: int, timeout: float) -> None:
        original(out, max_records, timeout)
        if stream.polls == 8:
            sink.fail_next_check = True
            sink.acked_at_failure = sink.acked  # type: ignore[attr-defined]

    stream.poll = poll  # type: ignore[method-assign]
    with pytest.raises(SinkTransientError):
        coordinator.run()
    stored = store.load(KEY)
    assert stored is not None and stored["pos"] <= sink.acked_at_failure  # type: ignore[attr-defined]
