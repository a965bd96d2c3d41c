"""SQL Server incremental snapshot of a table keyed by a ``datetime2(6)``, from recorded answers.

pymssql writes a ``datetime`` parameter into the statement to the millisecond, so keys a fraction
of a millisecond apart would bound a chunk at the wrong place (the recording is keyed by the
parameters the connector passes; what pymssql makes of them is checked with its own
``substitute_params``). The read events carry Debezium's ``io.debezium.time.MicroTimestamp``.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
from pathlib import Path

import pytest
from sqlserver_recordings import RecordedServer
from test_sqlserver_seed_golden import after, run
from test_sqlserver_signals import (  # noqa: F401
    PROPS,
    SIGNAL_COLUMNS,
    chunk_ids,
    execute_signal,
    lsn_at,
    pass_rows,
    server_result,
    watermarks,
    window,
)
from test_sqlserver_streaming import START, data, streaming_only

pymssql = pytest.importorskip("pymssql",
                              reason="pymssql's parameter quoting is the subject: pip install 'lakecdc[sqlserver]'")

TOPIC = "server1.testDB.dbo.readings"
COLUMNS = [("taken", "datetime2", None, None, None, 6, "NO"), ("val", "int", None, 10, 0, None, "YES")]
ROWS = [(dt.datetime(2024, 3, 1, 10, 0, 0, us), i) for i, us in enumerate((0, 400, 900))] + \
       [(dt.datetime(2024, 3, 1, 10, 0, 1, 123457), 3)]
SELECT = "SELECT TOP 2 [taken], [val] FROM [testDB].[dbo].[readings]"
MAX_KEY = "SELECT TOP 1 [taken] FROM [testDB].[dbo].[readings] ORDER BY [taken] DESC"
FIRST_CHUNK = f"{SELECT} WHERE (NOT (([taken] > %s))) ORDER BY [taken]"
NEXT_CHUNK = f"{SELECT} WHERE (([taken] > %s)) AND (NOT (([taken] > %s))) ORDER BY [taken]"


def text(value: dt.datetime) -> str:
    return value.isoformat(sep=" ", timespec="microseconds")


def readings_server() -> RecordedServer:
    server = RecordedServer().cdc_database()
    server.user_tables(("dbo", "readings", True), ("dbo", "debezium_signal", True))
    server.instances([
        RecordedServer.instance_row("dbo", "readings", "dbo_readings", "00000024:00000100:0001", ["taken", "val"],
                                    index=["taken"]),
        RecordedServer.instance_row("dbo", "debezium_signal", "dbo_debezium_signal", "00000024:00000100:0001",
                                    ["id", "type", "data"])])
    server.columns("dbo", "readings", COLUMNS, ["taken"])
    server.columns("dbo", "debezium_signal", SIGNAL_COLUMNS, ["id"])
    return server


def test_datetime2_key_bounds_keep_microseconds(tmp_path: Path, chunk_ids: None) -> None:
    maximum = text(ROWS[-1][0])
    server = readings_server()
    server.passes(START, lsn_at(1), lsn_at(14), lsn_at(24), lsn_at(34))
    server.rec.add(MAX_KEY, None, server_result(["taken"], [(ROWS[-1][0],)]))
    server.rec.add(FIRST_CHUNK, (maximum,), server_result(["taken", "val"], ROWS[:2]))
    # the last key 10:00:00.000400 as written to the millisecond would read 10:00:00.000400 again
    server.rec.add(NEXT_CHUNK, (text(ROWS[1][0]), maximum), server_result(["taken", "val"], ROWS[2:]))
    server.rec.add(NEXT_CHUNK, (maximum, maximum), server_result(["taken", "val"], []))
    for chunk in ("c1", "c2", "c3"):
        window(server, chunk)
    passes = [(START, lsn_at(1), [execute_signal(1, [r"testDB\.dbo\.readings"])]),
              (lsn_at(1), lsn_at(14), watermarks(10, "c1")), (lsn_at(14), lsn_at(24), watermarks(20, "c2")),
              (lsn_at(24), lsn_at(34), watermarks(30, "c3"))]
    for frm, to, signal_rows in passes:  # the watermarks come back; readings has no change meanwhile
        pass_rows(server, frm, to, signal_rows)
        server.changes("dbo_readings", after(frm), to, ["taken", "val"], [])
    streaming_only(server, tmp_path)
    sink, _, _ = run(server, tmp_path, table__include__list="dbo.readings",
                     **{k.replace(".", "__"): v for k, v in PROPS.items()})
    reads = [r for r in data(sink.records, TOPIC) if r.value["op"] == "r"]
    micros = [calendar.timegm(taken.timetuple()) * 1_000_000 + taken.microsecond for taken, _ in ROWS]
    assert [r.key for r in reads] == [{"taken": m} for m in micros]  # every row once, in key order
    assert [r.value["after"] for r in reads] == [{"taken": m, "val": v} for m, (_, v) in zip(micros, ROWS)]
    assert reads[0].key_schema.field("taken").schema.name == "io.debezium.time.MicroTimestamp"
    assert server.rec.served(NEXT_CHUNK, (maximum, maximum)) == 1
    # what pymssql sends: the text keeps the microseconds, a datetime would have been cut to the millisecond
    from pymssql import _mssql

    assert _mssql.substitute_params(NEXT_CHUNK, (text(ROWS[1][0]), maximum)).decode().endswith(
        "WHERE (([taken] > N'2024-03-01 10:00:00.000400')) AND (NOT (([taken] > N'2024-03-01 10:00:01.123457'))) "
        "ORDER BY [taken]")
    assert b"'2024-03-01 10:00:00.000'" in _mssql.substitute_params("%s", (ROWS[1][0],))
    (offset,) = json.loads((tmp_path / "offsets.json").read_text()).values()
    assert "incremental_snapshot_collections" not in offset
