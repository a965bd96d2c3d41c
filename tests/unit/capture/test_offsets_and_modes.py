"""File offset store (atomic, Kafka Connect key shape) and snapshot.mode start planning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.snapshot_modes import plan_start
from lakecdc.errors import ConfigError
from lakecdc.transport.offsets import FileOffsetStore, OffsetStoreError, offset_key, open_offsets

PG = {"topic.prefix": "p", "database.hostname": "localhost"}


def test_offset_key_is_kafka_connect_json() -> None:
    assert offset_key("inv", {"server": "dbz"}) == '["inv",{"server":"dbz"}]'


def test_file_store_round_trips_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "offsets.json"
    store = FileOffsetStore(path)
    key = offset_key("inv", {"server": "dbz"})
    assert store.load(key) is None
    store.save(key, {"lsn": 10, "txId": 3})
    store.save(key, {"lsn": 20, "txId": 4})
    reopened = FileOffsetStore(path)
    assert reopened.load(key) == {"lsn": 20, "txId": 4}
    assert json.loads(path.read_text()) == {key: {"lsn": 20, "txId": 4}}
    assert [p.name for p in path.parent.iterdir()] == ["offsets.json"]  # no temp files left
    reopened.delete(key)
    assert FileOffsetStore(path).load(key) is None


def test_file_store_rejects_foreign_format_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "offsets.dat"
    path.write_bytes(b"\xac\xed\x00\x05sr\x00\x11java.util.HashMap")
    with pytest.raises(OffsetStoreError, match="offsets.dat"):
        FileOffsetStore(path)


def test_open_offsets_uses_debezium_properties(tmp_path: Path) -> None:
    """The one opener the runner and ``lakecdc status`` share: ``offset.storage.file.filename`` is
    the file; memory storage is kept beside the configuration; a Kafka store needs its topic."""
    connector = tmp_path / "c.properties"
    store = open_offsets(PostgresConnectorConfig.from_properties(
        {**PG, "offset.storage.file.filename": str(tmp_path / "o.json")}), connector)
    assert isinstance(store, FileOffsetStore) and store.path == tmp_path / "o.json"
    store = open_offsets(PostgresConnectorConfig.from_properties(PG), connector)
    assert isinstance(store, FileOffsetStore) and store.path == tmp_path / "c.offsets.json"
    with pytest.raises(ConfigError, match="offset.storage.topic"):
        PostgresConnectorConfig.from_properties(
            {**PG, "offset.storage": "org.apache.kafka.connect.storage.KafkaOffsetBackingStore"})


@pytest.mark.parametrize(
    ("mode", "has_offset", "completed", "resumable", "expected"),
    [
        ("initial", False, False, True, (True, True)),
        ("initial", True, False, True, (True, True)),
        ("initial", True, True, True, (False, True)),
        ("exported", True, True, True, (False, True)),
        ("always", True, True, True, (True, True)),
        ("never", False, False, True, (False, True)),
        ("no_data", False, False, True, (False, True)),
        ("schema_only", False, False, True, (False, True)),
        ("initial_only", False, False, True, (True, False)),
        ("initial_only", True, False, True, (True, False)),
        ("initial_only", True, True, True, (False, False)),
        ("when_needed", True, True, True, (False, True)),
        ("when_needed", True, True, False, (True, True)),
        ("when_needed", False, False, True, (True, True)),
    ],
)
def test_plan_start(mode: str, has_offset: bool, completed: bool, resumable: bool, expected: tuple[bool, bool]) -> None:
    plan = plan_start(mode, has_offset, completed, resumable)
    assert (plan.snapshot, plan.stream) == expected
    assert plan.reason


def test_unknown_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="snapshot.mode 'sometimes'"):
        plan_start("sometimes", False, False)
