"""The binlog reader process (capture/mysql/binlog_process.py): killed mid-stream, the capture
reconnects and the output still has every change exactly once; the light events it sends keep what
the streaming source reads."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mysql_capture_support import CaptureThread, data_events, fresh_database, records, sql, write_properties

pytestmark = pytest.mark.integration


@pytest.fixture
def database(mariadb: Any) -> Iterator[str]:
    """A fresh database, dropped after the test: a snapshot lists every database's structure, so
    one left behind would show up in other tests' schema-change topics."""
    fresh_database(mariadb, DB)
    yield DB
    mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{DB}`;\n")

DB = "binlog_process"


def reader_processes() -> list[Any]:
    return [p for p in multiprocessing.active_children() if p.name == "lakecdc-binlog-reader"]


def test_killed_reader_process_resumes_with_every_change_exactly_once(mariadb: Any, database: str,
                                                                     tmp_path: Path) -> None:
    sql(mariadb, DB, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
    props = write_properties(tmp_path / "c.properties", mariadb, DB)
    out = tmp_path / "out.jsonl"
    capture = CaptureThread(props, out, stop_when_idle=4.0, mariadb=mariadb).start()
    capture.wait_streaming()

    def insert(first: int, transactions: int) -> None:
        for start in range(first, first + 10 * transactions, 10):
            sql(mariadb, DB, "BEGIN", *(f"INSERT INTO t VALUES ({i}, 'v{i}')" for i in range(start, start + 10)),
                "COMMIT")

    insert(0, 15)
    (reader,) = reader_processes()
    deadline = time.monotonic() + 30
    while len(data_events(records(out), "t")) < 50:  # killed mid-stream, not before it
        assert time.monotonic() < deadline, "nothing was streamed"
        time.sleep(0.02)
    os.kill(reader.pid, signal.SIGKILL)
    insert(150, 15)
    capture.wait(120)
    ids = [e["after"]["id"] for e in data_events(records(out), "t")]
    assert sorted(ids) == list(range(300)), "a change is missing or repeated"
    assert reader.exitcode == -signal.SIGKILL
    assert not reader_processes(), "the reader process outlived the capture"


def test_light_events_keep_what_the_streaming_source_reads() -> None:
    from pymysqlreplication.row_event import WriteRowsEvent

    from lakecdc.capture.mysql.binlog_process import lighten

    class Packet:
        log_pos, server_id = 420, 7

    original = object.__new__(WriteRowsEvent)
    original.__dict__.update(packet=Packet(), event_size=99, timestamp=1700000000, schema="db", table="t",
                             _RowsEvent__rows=[{"values": {"id": 1, "v": None}, "none_sources": {}}])
    light = pickle.loads(pickle.dumps(lighten(original)))
    assert isinstance(light, WriteRowsEvent)
    assert (light.packet.log_pos, light.packet.server_id, light.event_size, light.timestamp) == (420, 7, 99, 1700000000)
    assert (light.schema, light.table, light.rows) == ("db", "t", original.rows)

    failing = object.__new__(WriteRowsEvent)
    failing.__dict__.update(packet=Packet(), event_size=1, timestamp=1, schema="db", table="t", _RowsEvent__rows=None)
    failing._fetch_rows = lambda: (_ for _ in ()).throw(ValueError("undecodable"))  # type: ignore[attr-defined]
    light = pickle.loads(pickle.dumps(lighten(failing)))
    with pytest.raises(ValueError, match="undecodable"):
        light.rows  # noqa: B018 - raises where the capture reads the rows, as the library's would
