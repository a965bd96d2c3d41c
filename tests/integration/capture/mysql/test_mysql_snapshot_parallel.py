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
from refused_rows import error_handler_lines, refuse_rows

from lakecdc.capture.mysql import snapshot_parallel
from lakecdc.transforms.errors import StageFailure

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


def refusing_table(mariadb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Table t (200 keys: ranges of 17 for the workers) and a small table read after it."""
    sql(mariadb, DB,
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
        "INSERT INTO t SELECT seq, CONCAT('v-', seq) FROM seq_1_to_200",
        "CREATE TABLE z_small (id INT PRIMARY KEY)",
        "INSERT INTO z_small VALUES (1)",
        "ANALYZE TABLE t")
    monkeypatch.setattr(snapshot_parallel, "MIN_ROWS", 50)
    monkeypatch.setattr(snapshot_parallel, "RANGE_ROWS", 17)


def data_ids(path: Path) -> list[tuple[str, int]]:
    """(table, id) of each data record (the schema-change topic has no dots)."""
    records = map(json.loads, path.read_text().splitlines())
    return [(r["topic"].rsplit(".", 1)[1], r["key"]["payload"]["id"]) for r in records if r["topic"].count(".") == 2]


def test_rows_the_converter_refuses_are_skipped_as_in_the_serial_read(
        mariadb: Any, database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """errors.tolerance=all: a row whose key or value the converter refuses is skipped and logged
    whether the capture process or a worker read it (rows 5, 6, 40 and 100 are between their
    ranges' first and last); every other row is sent once, in order, with the serial read's markers."""
    refusing_table(mariadb, monkeypatch)
    refused = {1, 5, 6, 40, 100, 200}
    refuse_rows(monkeypatch, f"dbz.{DB}.t", values=refused - {40}, keys={40})
    outputs, logged = {}, {}
    for threads in (1, 2):
        props = write_properties(tmp_path / f"all{threads}.properties", mariadb, DB, snapshot__mode="initial_only",
                                 snapshot__max__threads=str(threads), errors__tolerance="all",
                                 errors__log__enable="true")
        out = tmp_path / f"all{threads}.jsonl"
        caplog.clear()
        with caplog.at_level(logging.INFO):
            stats = capture(props, out, stop_when_idle=0.5)
        assert stats.snapshot_rows == 200 + 1  # rows read, skipped ones included
        assert any("key ranges read by 2 worker processes" in r.getMessage() for r in caplog.records) == \
            (threads == 2)
        outputs[threads], logged[threads] = normalized(out), error_handler_lines(caplog)
    assert outputs[2] == outputs[1]
    assert data_ids(tmp_path / "all2.jsonl") == [("t", i) for i in range(1, 201) if i not in refused] + [("z_small", 1)]
    markers = [r["value"]["payload"]["source"]["snapshot"] for r in outputs[2] if r["topic"].count(".") == 2]
    assert set(markers[:-1]) == {"true"} and markers[-1] == "last"  # t's first and last rows were refused
    assert logged[2] == logged[1] and len(logged[2]) == len(refused), logged
    assert sum("Executing stage 'KEY_CONVERTER'" in line for line in logged[2]) == 1
    assert all(f"topic 'dbz.{DB}.t'" in line and "the record is skipped" in line for line in logged[2])


def test_a_row_the_converter_refuses_stops_the_snapshot_as_the_serial_read(
        mariadb: Any, database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """errors.tolerance=none: row 60, which a worker reads (range 52..68), stops the capture with the
    serial read's error naming the table's topic, and no row after it is sent."""
    refusing_table(mariadb, monkeypatch)
    refuse_rows(monkeypatch, f"dbz.{DB}.t", values={60})
    errors = {}
    for threads in (1, 2):
        props = write_properties(tmp_path / f"none{threads}.properties", mariadb, DB, snapshot__mode="initial_only",
                                 snapshot__max__threads=str(threads), errors__tolerance="none")
        out = tmp_path / f"none{threads}.jsonl"
        with pytest.raises(StageFailure) as failure:
            capture(props, out, stop_when_idle=0.5)
        errors[threads] = str(failure.value)
        ids = data_ids(out) if out.exists() else []
        assert ids == [("t", i) for i in range(1, len(ids) + 1)] and len(ids) < 60
    assert errors[2] == errors[1]
    assert f"failed on a record of topic 'dbz.{DB}.t'" in errors[2] and "refused the value of row 60" in errors[2]
