"""CDC setup checks (seed 1.4.10): each failure names what is missing and the T-SQL that fixes it;
the replay connection refuses statements it has no recording for."""

from __future__ import annotations

import pytest
from sqlserver_recordings import CUSTOMERS, RecordedServer, base_properties
from sqlserver_replay import Recording, ReplayConnection, UnrecordedStatementError

from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.connector import SqlServerConnector
from lakecdc.capture.sqlserver.errors import CdcNotEnabledError


def load(server: RecordedServer, **props: str) -> SqlServerConnector:
    config = SqlServerConnectorConfig.from_properties(base_properties(**props))
    connector = SqlServerConnector(config, connection_factory=server.connect)
    connector.schema.load(server.connect())
    return connector


def test_database_without_cdc_names_sp_cdc_enable_db() -> None:
    server = RecordedServer().cdc_database(False)
    with pytest.raises(CdcNotEnabledError,
                       match=r"CDC is not enabled on database 'testDB'.*EXEC sys\.sp_cdc_enable_db"):
        load(server)


def test_included_table_without_cdc_names_sp_cdc_enable_table() -> None:
    server = RecordedServer().cdc_database().user_tables(("dbo", "customers", True), ("dbo", "orders", False))
    server.instances([RecordedServer.instance_row("dbo", "customers", "dbo_customers", "00000024:00000100:0001",
                                                  [c[0] for c in CUSTOMERS])])
    with pytest.raises(CdcNotEnabledError) as err:
        load(server, table__include__list="dbo.customers,dbo.orders")
    message = str(err.value)
    assert "dbo.orders" in message and "dbo.customers" not in message.split("Run")[0]
    assert "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders'" in message


def test_without_include_list_untracked_tables_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    server = RecordedServer().cdc_database().user_tables(("dbo", "customers", True), ("dbo", "audit", False))
    server.instances([RecordedServer.instance_row("dbo", "customers", "dbo_customers", "00000024:00000100:0001",
                                                  [c[0] for c in CUSTOMERS])])
    server.columns("dbo", "customers", CUSTOMERS, ["id"])
    connector = load(server, table__include__list="")
    assert connector.schema.tables() == [("dbo", "customers")]
    assert "sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'audit'" in caplog.text


def test_tracked_table_invisible_to_the_login_names_the_missing_grant() -> None:
    server = RecordedServer().cdc_database().user_tables(("dbo", "customers", True)).instances([])
    with pytest.raises(CdcNotEnabledError, match=r"dbo\.customers.*no capture instance.*user 'sa'.*grant SELECT"):
        load(server)


def test_no_captured_table_at_all() -> None:
    server = RecordedServer().cdc_database().user_tables().instances([])
    with pytest.raises(CdcNotEnabledError, match="no CDC-enabled table"):
        load(server)


def test_capture_instance_lists_and_primary_key_are_read() -> None:
    connector = load(RecordedServer().customers())
    (inst,) = connector.schema.instances[("dbo", "customers")]
    assert inst.captured_columns == ("id", "first_name", "last_name", "email")
    assert inst.start_lsn == sq.lsn_int(bytes.fromhex("00000024000001000001"))
    assert connector.schema.schema(inst).key_schema is not None


def test_unrecorded_statement_fails_loudly() -> None:
    rec = Recording().add(sq.Q_DATABASE_CDC, ("testDB",))
    cur = ReplayConnection(rec).cursor()
    with pytest.raises(UnrecordedStatementError, match="recorded with other parameters"):
        cur.execute(sq.Q_DATABASE_CDC, ("otherDB",))
    with pytest.raises(UnrecordedStatementError, match="fn_cdc_get_max_lsn"):
        cur.execute(sq.Q_MAX_LSN)


def test_bracketed_column_lists() -> None:
    assert sq.parse_column_list("[id], [first name], [odd]]name]") == ("id", "first name", "odd]name")
    assert sq.quote("a]b") == "[a]]b]"


def test_refused_login_is_reported_without_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymssql

    from lakecdc.capture.sqlserver.errors import SqlServerConnectionLostError

    def refuse(**kwargs: object) -> None:
        raise pymssql.OperationalError((18456, b"Login failed for user 'sa'.\nDB-Lib error message 20018, severity 14"))

    monkeypatch.setattr(pymssql, "connect", refuse)  # the driver's entry point, not lakecdc's
    monkeypatch.delenv(sq.FACTORY_ENV, raising=False)
    config = SqlServerConnectorConfig.from_properties(base_properties())
    with pytest.raises(SqlServerConnectionLostError) as err:
        sq.connect(config)
    assert str(err.value) == "cannot connect to SQL Server 192.168.99.100:1433/testDB: Login failed for user 'sa'."
    assert "Password!" not in str(err.value)
