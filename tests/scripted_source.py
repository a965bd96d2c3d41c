"""A connector whose snapshot and stream are scripted, for driving ``CaptureCoordinator`` in unit
tests without a database: the stream hands out one batch per poll and its LSN moves 10 per batch."""

from __future__ import annotations

from typing import Any

from lakecdc.capture.postgres.offset import snapshot_completed


class ScriptedStream:
    def __init__(self, batches: list[list[Any]]) -> None:
        self.batches = list(batches)
        self.lsn = 100
        self.started_from: list[Any] = []

    def start(self, offset: Any) -> None:
        self.started_from.append(offset)
        self.lsn = offset["lsn"] if offset and "lsn" in offset else 100

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        if self.batches:
            out.extend(self.batches.pop(0))
            self.lsn += 10

    def committable_offset(self) -> dict[str, Any]:
        return {"lsn": self.lsn}

    def acknowledge(self, offset: dict[str, Any]) -> None:
        pass

    def idle_seconds(self) -> float:
        return 0.0 if self.batches else 10.0

    def close(self) -> None:
        pass


class ScriptedConnector:
    """``snapshot`` is anything with ``run(emit) -> SnapshotResult`` (None: the test never snapshots)."""

    partition = {"server": "dbz"}

    def __init__(self, name: str, stream: ScriptedStream, snapshot: Any = None, config: Any = None) -> None:
        self.name, self.stream, self.snapshot, self.config = name, stream, snapshot, config
        self.snapshots_started = 0

    def snapshot_source(self, stored: Any) -> Any:
        self.snapshots_started += 1
        return self.snapshot

    def streaming_source(self) -> ScriptedStream:
        return self.stream

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)

    def can_resume_streaming(self, stored: dict[str, Any]) -> bool:
        return True

    def close(self) -> None:
        pass
