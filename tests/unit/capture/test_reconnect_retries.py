"""``errors.max.retries`` (Debezium's ``CommonConnectorConfig``, its ``ErrorHandler``): how many times in a
row capture retries a lost connection before it stops; -1 without a limit, 0 never. Unset, lakecdc
keeps its own limit (10; PostgreSQL: ``slot.max.retries``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakecdc.capture.coordinator import CaptureCoordinator, CoordinatorSettings
from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.registration import mysql_parts
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.offset import snapshot_completed
from lakecdc.capture.postgres.registration import postgres_parts
from lakecdc.errors import SourceTransientError
from lakecdc.transport.offsets import FileOffsetStore

PG = {"topic.prefix": "dbz", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}
MYSQL = {"topic.prefix": "dbz", "database.hostname": "h", "database.user": "u", "database.server.id": "5",
         "schema.history.internal.file.filename": "/tmp/h.dat"}


@pytest.mark.parametrize(("given", "expected"), [({}, 6), ({"errors.max.retries": "-1"}, -1),
                                                 ({"errors.max.retries": "0"}, 0),
                                                 ({"errors.max.retries": "25", "slot.max.retries": "2"}, 25)])
def test_postgres_takes_errors_max_retries_over_its_slot_retries(given: dict[str, str], expected: int) -> None:
    config = PostgresConnectorConfig.from_properties({**PG, **given})
    assert postgres_parts(config, None, False).settings.max_retries == expected


@pytest.mark.parametrize(("given", "expected"), [({}, 10), ({"errors.max.retries": "-1"}, -1),
                                                 ({"errors.max.retries": "3"}, 3)])
def test_mysql_takes_errors_max_retries(given: dict[str, str], expected: int) -> None:
    config = MySqlConnectorConfig.from_properties({**MYSQL, **given})
    assert mysql_parts(config, None, False).settings.max_retries == expected


class Flaky:
    """A streaming source whose connection is lost ``failures`` times before it streams (and stops)."""

    def __init__(self, failures: int) -> None:
        self.failures, self.starts = failures, 0

    def start(self, offset: Any) -> None:
        self.starts += 1
        if self.starts <= self.failures:
            raise SourceTransientError("connection lost")

    def poll(self, out: list[Any], max_records: int, timeout: float) -> None:
        pass

    def committable_offset(self) -> None:
        return None

    def idle_seconds(self) -> float:
        return 10.0

    def close(self) -> None:
        pass


class Connector:
    name = "retry"
    partition = {"server": "dbz"}

    def __init__(self, source: Flaky) -> None:
        self.source = source

    def streaming_source(self) -> Flaky:
        return self.source

    def offset_has_completed_snapshot(self, stored: dict[str, Any]) -> bool:
        return snapshot_completed(stored)


@pytest.mark.parametrize(("limit", "failures", "succeeds"), [(-1, 30, True), (0, 1, False), (3, 3, True),
                                                             (3, 4, False)])
def test_the_coordinator_retries_as_many_times_in_a_row_as_allowed(tmp_path: Path, limit: int, failures: int,
                                                                   succeeds: bool) -> None:
    source = Flaky(failures)
    coordinator = CaptureCoordinator(Connector(source), None, FileOffsetStore(tmp_path / "o.json"),
                                     CoordinatorSettings(snapshot_mode="no_data", stop_when_idle_s=1.0,
                                                         max_retries=limit, retry_backoff_s=0.0))
    if succeeds:
        coordinator.run()
        assert source.starts == failures + 1
    else:
        with pytest.raises(SourceTransientError):
            coordinator.run()
        assert source.starts == limit + 1
