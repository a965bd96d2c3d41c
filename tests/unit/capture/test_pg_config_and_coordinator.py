"""Example connector files load; the coordinator's commit order (sink durable -> offset -> source ack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted_source import ScriptedConnector

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.postgres.offset import flush_lsn, resume_point, snapshot_completed, snapshot_offset
from lakecdc.capture.postgres.registration import load_postgres_config
from lakecdc.capture.spi import SnapshotResult
from lakecdc.transport.offsets import FileOffsetStore, offset_key

CONF = Path(__file__).resolve().parents[3] / "conf"


@pytest.mark.parametrize("name", ["postgres-connector.properties", "postgres.yaml"])
def test_example_configs_load(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "example-secret")
    config = load_postgres_config(CONF / name)
    assert config.slot_name == "inventory_slot"
    assert config.publication_autocreate_mode == "filtered"
    assert config.table_filter.matches("public", "orders") and not config.table_filter.matches("public", "audit")
    assert "example-secret" not in repr(config)
    assert "password='example-secret'" in config.conninfo()


class Journal:
    """Shared log of calls, to check their order across sink, store and source."""

    def __init__(self) -> None:
        self.calls: list[str] = []


class RecordingSink:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def send(self, records: list[Any]) -> None:
        self.journal.calls.append(f"send:{len(records)}")

    def flush(self) -> None:
        self.journal.calls.append("flush")

    def close(self) -> None:
        pass


class RecordingStore(FileOffsetStore):
    def __init__(self, path: Path, journal: Journal) -> None:
        super().__init__(path)
        self.journal = journal

    def save(self, key: str, offset: dict[str, Any]) -> None:
        super().save(key, offset)
        self.journal.calls.append(f"store:{offset['lsn']}")


class JournalStream:
    """Produces two batches then nothing; acknowledges into the journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.batches = [["a", "b"], ["c"]]
        self.lsn = 100
        self.idle_since = 0.0

    def start(self, offset: Any) -> None:
        self.journal.calls.append(f"start:{offset and offset['lsn']}")

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        if self.batches:
            out.extend(self.batches.pop(0))
            self.lsn += 10

    def committable_offset(self) -> dict[str, Any]:
        return {"lsn": self.lsn, "lsn_commit": self.lsn}

    def acknowledge(self, offset: dict[str, Any]) -> None:
        self.journal.calls.append(f"ack:{offset['lsn']}")

    def idle_seconds(self) -> float:
        return 0.0 if self.batches else 10.0

    def close(self) -> None:
        self.journal.calls.append("close")


class ScriptedSnapshot:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def run(self, emit: Any) -> SnapshotResult:
        emit(["r1", "r2", "r3"])
        return SnapshotResult({"lsn": 90, "snapshot": True, "last_snapshot_record": True}, 3, 1)


def journaled_connector(journal: Journal) -> ScriptedConnector:
    return ScriptedConnector("inv", JournalStream(journal), ScriptedSnapshot(journal))


def test_commit_order_is_send_flush_store_acknowledge(tmp_path: Path) -> None:
    journal = Journal()
    store = RecordingStore(tmp_path / "o.json", journal)
    coordinator = CaptureCoordinator(
        journaled_connector(journal), RecordingSink(journal), store,
        CoordinatorSettings(commit_interval_s=0.0, stop_when_idle_s=5.0),
    )
    stats = coordinator.run()
    assert stats.snapshot_rows == 3 and stats.streamed_records == 3
    calls = journal.calls
    assert calls[:4] == ["send:3", "flush", "store:90", "start:90"]  # snapshot: never acknowledged
    # every acknowledgement follows a flush and the store of the same offset
    for i, call in enumerate(calls):
        if call.startswith("ack:"):
            lsn = call.split(":")[1]
            assert calls[i - 1] == f"store:{lsn}" and calls[i - 2] == "flush"
    assert "ack:120" in calls and calls[-1] == "close"
    assert FileOffsetStore(tmp_path / "o.json").load(offset_key("inv", {"server": "dbz"}))["lsn"] == 120


def test_pg_offsets_resume_and_flush_points() -> None:
    assert resume_point(None).start_lsn == 0
    snap = snapshot_offset(500, 7, 1)
    assert snapshot_completed(snap) and resume_point(snap).start_lsn == 500 and flush_lsn(snap) is None
    after_commit = {"lsn_proc": 800, "lsn_commit": 800, "lsn": 800, "txId": 9}
    point = resume_point(after_commit)
    assert (point.start_lsn, point.last_commit_lsn, point.skip_xid) == (800, 800, None)
    assert flush_lsn(after_commit) == 800
    mid = {"lsn_proc": 950, "lsn_commit": 800, "lsn": 950, "txId": 10, "in_tx": True}
    point = resume_point(mid)
    assert (point.start_lsn, point.skip_xid, point.skip_upto_lsn) == (800, 10, 950)
    assert flush_lsn(mid) == 800  # never inside a transaction
    idle = {"lsn_proc": 990, "lsn_commit": 800, "lsn": 990}
    assert resume_point(idle).start_lsn == 990 and resume_point(idle).last_commit_lsn == 800
    assert not snapshot_completed({"lsn": 1, "snapshot": True, "last_snapshot_record": False})
