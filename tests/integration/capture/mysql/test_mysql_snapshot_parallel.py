"""``snapshot.max.threads`` on MariaDB: a large table read by worker processes in key ranges gives the
records of the serial read, in the same order with the same snapshot markers (capture/mysql/
snapshot_parallel.py). The thresholds are lowered so a few hundred rows make several ranges."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mysql_capture_support import capture, fresh_database, sql, write_properties

from lakecdc.capture.mysql import snapshot_parallel

pytestmark = pytest.mark.integration


@pytest.fixture
def database(mariadb: Any) -> Iterator[str]:
    """A fresh database, dropped after the test: a snapshot lists every database's structure, so
    one left behind would show up in other tests' schema-change topics."""
    fresh_database(mariadb, DB)
    yield DB
    mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{DB}`;\n")

DB = "snap_parallel"


TIMES = ("ts_ms", "ts_us", "ts_ns")
READ_RANGE = snapshot_parallel._read_range


def dying_read_range(db: str, table: str, key: str, lo: Any, *rest: Any) -> Any:
    """A worker process that dies (as if killed) at its first range after a table's first."""
    if lo is not None:
        os._exit(3)
    return READ_RANGE(db, table, key, lo, *rest)


def normalized(path: Path) -> list[dict[str, Any]]:
    """Every record with what differs between any two runs taken out: the times of reading, and
    the context headers' values (a run's id; their names are compared)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        payload = (record.get("value") or {}).get("payload")
        if isinstance(payload, dict):
            for part in (payload, payload.get("source")):
                if isinstance(part, dict):
                    for name in TIMES:
                        part.pop(name, None)
        record["headers"] = [h["key"] for h in record.get("headers") or []]
        out.append(record)
    return out


def test_parallel_snapshot_records_equal_the_serial_read(mariadb: Any, database: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    sql(mariadb, DB,
        "CREATE TABLE a_small (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO a_small VALUES (1, 'x')",
        "CREATE TABLE b_big (id BIGINT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(12,2), "
        "created DATETIME(6), note TEXT) ENGINE=InnoDB",
        # keys with gaps and negatives: ranges are by key rank, not by key width
        "INSERT INTO b_big SELECT CAST(seq AS SIGNED) * 3 - 200, CONCAT('n-', seq), seq / 7, "
        "TIMESTAMP '2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, IF(seq % 5 = 0, NULL, REPEAT('t', seq % 9)) "
        "FROM seq_1_to_230",
        "CREATE TABLE c_nokey (v INT)",  # read serially by the capture process between parallel tables
        "INSERT INTO c_nokey VALUES (1), (2)",
        "CREATE TABLE d_big2 (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
        "INSERT INTO d_big2 SELECT seq, seq FROM seq_1_to_64",
        "ANALYZE TABLE b_big, d_big2")
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 50)
    monkeypatch.setattr(snapshot_parallel, "RANGE_ROWS", 17)
    outputs = {}
    for threads in (1, 2):
        props = write_properties(tmp_path / f"t{threads}.properties", mariadb, DB, snapshot__mode="initial_only",
                                 snapshot__max__threads=str(threads))
        out = tmp_path / f"t{threads}.jsonl"
        with caplog.at_level(logging.INFO, logger="lakecdc.capture.mysql.snapshot_parallel"):
            stats = capture(props, out, stop_when_idle=0.5)
        assert stats.snapshot_rows == 1 + 230 + 2 + 64
        outputs[threads] = normalized(out)
    # the parallel read was used for both large tables, and not for the others
    used = [r.getMessage() for r in caplog.records if "key ranges read by 2 worker processes" in r.getMessage()]
    assert len(used) == 2 and "b_big" in used[0] and "d_big2" in used[1], used
    serial, parallel = outputs[1], outputs[2]
    assert len(serial) == len(parallel)
    for index, (expected, got) in enumerate(zip(serial, parallel)):
        assert got == expected, f"record {index} differs"
    markers = [r["value"]["payload"]["source"]["snapshot"] for r in parallel
               if r["topic"].endswith(".b_big")]
    assert markers[0] == "first_in_data_collection" and markers[-1] == "last_in_data_collection"
    assert set(markers[1:-1]) == {"true"}

    # a worker dies mid-snapshot: the capture fails without completing the snapshot, and the
    # restart snapshots again, every row once, as the serial read
    props = write_properties(tmp_path / "killed.properties", mariadb, DB, snapshot__mode="initial_only",
                             snapshot__max__threads="2")
    monkeypatch.setattr(snapshot_parallel, "_read_range", dying_read_range)
    with pytest.raises(Exception, match="process"):
        capture(props, tmp_path / "killed.jsonl", stop_when_idle=0.5)
    monkeypatch.setattr(snapshot_parallel, "_read_range", READ_RANGE)
    stats = capture(props, tmp_path / "restarted.jsonl", stop_when_idle=0.5)
    assert stats.snapshot_rows == 1 + 230 + 2 + 64
    assert normalized(tmp_path / "restarted.jsonl") == serial
