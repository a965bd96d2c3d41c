"""Snapshot modes (seed 1.4.3) and isolation modes (seed 1.4.4) on recorded answers: which
statements run in which order, which events come out, which offset is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlserver_recordings import CUSTOMERS, RecordedServer, base_properties
from test_sqlserver_seed_golden import SNAPSHOT_LSN, run

from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.connector import SqlServerConnector
from lakecdc.capture.sqlserver.errors import SqlServerSetupError
from lakecdc.capture.sqlserver.snapshot import Q_ROW_ESTIMATE, SqlServerSnapshotSource
from lakecdc.transport.offsets import offset_key

COLS = [c[0] for c in CUSTOMERS]
ROWS = [(1001, "Sally", "Thomas", "sally.thomas@acme.com"), (1002, "George", "Bailey", "gbailey@foobar.com"),
        (1003, "Edward", "Walker", "ed@walker.com")]
KEY = offset_key("server1", {"server": "server1", "database": "testDB"})


def server_for(isolation: str = "REPEATABLE READ", savepoint: bool = True, locks: bool = True) -> RecordedServer:
    server = RecordedServer().customers()
    server.snapshot_locks([("dbo", "customers")] if locks else [], isolation=isolation, savepoint=savepoint)
    server.snapshot_rows("dbo", "customers", COLS, ROWS)
    server.max_lsn(SNAPSHOT_LSN).passes(SNAPSHOT_LSN)  # nothing new afterwards: streaming stays idle
    return server


def rows_of(sink: Any) -> list[Any]:
    """Data records only (the schema change events on "server1" left out)."""
    return [r for r in sink.records if r.topic == "server1.testDB.dbo.customers"]


def statements(server: RecordedServer) -> list[str]:
    return [s for s in server.rec.log if s.startswith(("SET", "SAVE", "ROLLBACK", "SELECT TOP(0)", "SELECT sys.fn",
                                                       "SELECT [id]"))]


def test_repeatable_read_locks_then_releases_before_reading(tmp_path: Path) -> None:
    server = server_for()
    sink, store, _ = run(server, tmp_path)
    assert statements(server)[:7] == [
        "SET LOCK_TIMEOUT 10000", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "SAVE TRANSACTION dbz_schema_snapshot",
        "SELECT TOP(0) * FROM [testDB].[dbo].[customers] WITH (TABLOCKX)",
        "SELECT sys.fn_cdc_get_max_lsn()", "ROLLBACK TRANSACTION dbz_schema_snapshot",
        "SELECT [id], [first_name], [last_name], [email] FROM [testDB].[dbo].[customers]",
    ]
    schema_change, *rows = sink.records
    assert schema_change.topic == "server1" and schema_change.value["tableChanges"][0]["type"] == "CREATE"
    assert rows == rows_of(sink)
    assert [r.value["source"]["snapshot"] for r in rows] == ["first", "true", "last"]
    assert [r.value["after"]["id"] for r in rows] == [1001, 1002, 1003]
    assert {r.value["op"] for r in rows} == {"r"}
    stored = store.load(KEY)
    assert stored is not None and stored["commit_lsn"] == SNAPSHOT_LSN


def test_exclusive_keeps_the_table_locks_until_the_end(tmp_path: Path) -> None:
    server = server_for(savepoint=False)
    run(server, tmp_path, snapshot__isolation__mode="exclusive", include__schema__changes="false")
    log = statements(server)
    assert "SELECT TOP(0) * FROM [testDB].[dbo].[customers] WITH (TABLOCKX)" in log
    assert not any(s.startswith(("SAVE", "ROLLBACK")) for s in log)


@pytest.mark.parametrize(("mode", "level"), [("snapshot", "SNAPSHOT"), ("read_committed", "READ COMMITTED"),
                                             ("read_uncommitted", "READ UNCOMMITTED")])
def test_lockless_isolation_modes(tmp_path: Path, mode: str, level: str) -> None:
    server = server_for(isolation=level, savepoint=False, locks=False)
    sink, _, _ = run(server, tmp_path, snapshot__isolation__mode=mode)
    log = statements(server)
    assert f"SET TRANSACTION ISOLATION LEVEL {level}" in log
    assert not any("TABLOCKX" in s for s in log)
    assert len(rows_of(sink)) == 3


def test_initial_only_does_not_stream(tmp_path: Path) -> None:
    server = server_for()
    sink, store, _ = run(server, tmp_path, snapshot__mode="initial_only")
    assert len(rows_of(sink)) == 3
    assert not any("cdc.lsn_time_mapping" in s for s in server.rec.log)  # no streaming pass
    again, _, _ = run(server, tmp_path, snapshot__mode="initial_only")
    assert again.records == []  # completed: nothing to do


def test_no_data_streams_from_the_current_max_lsn_without_reading_rows(tmp_path: Path) -> None:
    server = RecordedServer().customers().max_lsn(SNAPSHOT_LSN).passes(SNAPSHOT_LSN)
    sink, _, _ = run(server, tmp_path, snapshot__mode="schema_only")
    (create,) = sink.records  # the structure only: a CREATE schema change event, no rows
    assert create.topic == "server1" and create.value["source"]["commit_lsn"] == SNAPSHOT_LSN
    assert not any(s.startswith("SELECT [id]") for s in server.rec.log)


def test_always_snapshots_at_every_start(tmp_path: Path) -> None:
    server = server_for()
    first, _, _ = run(server, tmp_path, snapshot__mode="always")
    second, _, _ = run(server, tmp_path, snapshot__mode="always")
    assert len(rows_of(first)) == len(rows_of(second)) == 3


def test_when_needed_snapshots_again_when_cleanup_passed_the_offset(tmp_path: Path) -> None:
    server = server_for()
    run(server, tmp_path, snapshot__mode="when_needed")
    stale = RecordedServer().customers(start="00000030:00000001:0001")  # cleanup moved the low water mark
    stale.snapshot_locks([("dbo", "customers")])
    stale.snapshot_rows("dbo", "customers", COLS, ROWS[:1])
    stale.max_lsn("00000031:00000001:0001").passes("00000031:00000001:0001")
    sink, store, _ = run(stale, tmp_path, snapshot__mode="when_needed")
    assert [r.value["op"] for r in rows_of(sink)] == ["r"]
    assert store.load(KEY)["commit_lsn"] == "00000031:00000001:0001"


def test_no_max_lsn_names_sql_server_agent() -> None:
    server = RecordedServer().customers().max_lsn(None)
    server.snapshot_locks([("dbo", "customers")])
    config = SqlServerConnectorConfig.from_properties(base_properties())
    connector = SqlServerConnector(config, connection_factory=server.connect)
    with pytest.raises(SqlServerSetupError, match="SQL Server Agent"):
        connector.snapshot_source(None).run(lambda records: None)


def test_progress_bar_uses_sql_servers_row_estimate() -> None:
    import io

    from rich.console import Console

    server = server_for()
    config = SqlServerConnectorConfig.from_properties(base_properties())
    connector = SqlServerConnector(config, show_progress=True, connection_factory=server.connect)
    source = connector.snapshot_source(None)
    assert isinstance(source, SqlServerSnapshotSource)
    out = io.StringIO()
    source.console = Console(file=out, force_terminal=True, width=100)
    result = source.run(lambda records: None)
    assert result.rows == 3
    assert server.rec.served(Q_ROW_ESTIMATE, ("[dbo].[customers]",)) == 1
    assert "3/3" in out.getvalue()


def test_select_statement_override_and_included_collections(tmp_path: Path) -> None:
    server = RecordedServer().customers()
    server.snapshot_locks([("dbo", "customers")])
    from sqlserver_replay import ResultSet

    override = "SELECT [id], [first_name], [last_name], [email] FROM [testDB].[dbo].[customers] WHERE id > 1001"
    server.rec.add(override, None, ResultSet.of(COLS, ROWS[1:]))
    server.max_lsn(SNAPSHOT_LSN).passes(SNAPSHOT_LSN)
    sink, _, _ = run(server, tmp_path, snapshot__select__statement__overrides="dbo.customers",
                     **{"snapshot__select__statement__overrides__dbo__customers": override})
    assert [r.value["after"]["id"] for r in rows_of(sink)] == [1002, 1003]
    skipped = server_for()
    sink, _, _ = run(skipped, tmp_path / "none", snapshot__include__collection__list="dbo.orders")
    assert rows_of(sink) == [] and [r.topic for r in sink.records] == ["server1"]  # structure, no rows


def test_column_filter_and_message_key_columns(tmp_path: Path) -> None:
    sink, _, _ = run(server_for(), tmp_path, column__exclude__list="dbo.customers.email",
                     message__key__columns="dbo.customers:first_name,last_name")
    first = rows_of(sink)[0]
    assert first.value["after"] == {"id": 1001, "first_name": "Sally", "last_name": "Thomas"}
    assert first.key == {"first_name": "Sally", "last_name": "Thomas"}
    assert [f.name for f in first.key_schema.fields] == ["first_name", "last_name"]
