"""Recorded SQL Server answers for the connector's statements, with pymssql's value types.

A :class:`RecordedServer` writes the answers a SQL Server 2019 database with CDC would give to
exactly the statements lakecdc issues (``lakecdc/capture/sqlserver/connection.py``); the replay
connection (``sqlserver_replay``) fails on any other statement. Values are what
pymssql 2.x returns: ``binary(10)`` LSNs as ``bytes``, ``datetimeoffset`` as an aware
``datetime``, ``uniqueidentifier`` as ``uuid.UUID``, money/decimal as ``Decimal``, ``bit`` as
``bool``. The seed's example table (seed 1.4.8) is ``testDB.dbo.customers``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlserver_replay import Recording, ReplayConnection, ResultSet

from lakecdc.capture.sqlserver import connection as sq
from lakecdc.capture.sqlserver.snapshot import Q_ROW_ESTIMATE
from lakecdc.events.position_text import sqlserver_lsn_from_text

DB = "testDB"
HELP_COLUMNS = ["source_schema", "source_table", "capture_instance", "object_id", "source_object_id",
                "start_lsn", "end_lsn", "supports_net_changes", "has_drop_pending", "role_name", "index_name",
                "filegroup_name", "create_date", "index_column_list", "captured_column_list"]
CHANGE_META = ["__$start_lsn", "__$seqval", "__$operation", "__$update_mask"]

# (name, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, IS_NULLABLE
#  [, COLUMN_DEFAULT, IsIdentity])
CUSTOMERS = [
    ("id", "int", None, 10, 0, None, "NO", None, 1),
    ("first_name", "varchar", 255, None, None, None, "NO"),
    ("last_name", "varchar", 255, None, None, None, "NO"),
    ("email", "varchar", 255, None, None, None, "NO"),
]


def lsn(text: str) -> int:
    return sqlserver_lsn_from_text(text)


def lsn_b(text_or_int: str | int) -> bytes:
    value = lsn(text_or_int) if isinstance(text_or_int, str) else text_or_int
    return sq.lsn_bytes(value)


def utc_ms(ms: int, offset_hours: int = 2) -> dt.datetime:
    """The aware datetime pymssql returns for TODATETIMEOFFSET(...) at epoch ``ms`` (server at +02:00)."""
    zone = dt.timezone(dt.timedelta(hours=offset_hours))
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).astimezone(zone)


def columns_result(columns: list[tuple[Any, ...]]) -> ResultSet:
    """INFORMATION_SCHEMA.COLUMNS rows as the connector's query returns them."""
    rows = []
    for i, c in enumerate(columns):
        name, data_type, length, precision, scale, dt_precision, nullable = c[:7]
        default, identity = (c[7], c[8]) if len(c) > 7 else (None, 0)
        rows.append((name, data_type, length, precision, scale, dt_precision, nullable, i + 1, default, identity))
    return ResultSet.of(["COLUMN_NAME", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH", "NUMERIC_PRECISION", "NUMERIC_SCALE",
                         "DATETIME_PRECISION", "IS_NULLABLE", "ORDINAL_POSITION", "COLUMN_DEFAULT", ""], rows)


class RecordedServer:
    def __init__(self, database: str = DB) -> None:
        self.db = database
        self.rec = Recording()

    def connect(self, config: Any = None) -> ReplayConnection:
        """A connection factory (``SqlServerConnector(connection_factory=server.connect)``)."""
        return ReplayConnection(self.rec)

    # ---- metadata ----------------------------------------------------------------------------
    def cdc_database(self, enabled: bool = True) -> RecordedServer:
        self.rec.add(sq.Q_DATABASE_CDC, (self.db,), ResultSet.of(["is_cdc_enabled"], [(enabled,)]))
        return self

    def user_tables(self, *tables: tuple[str, str, bool]) -> RecordedServer:
        self.rec.add(sq.Q_USER_TABLES, None, ResultSet.of(["name", "name", "is_tracked_by_cdc"], list(tables)))
        return self

    @staticmethod
    def instance_row(schema: str, table: str, name: str, start: str, columns: list[str],
                     index: list[str] | None = None) -> tuple[Any, ...]:
        quoted = ", ".join(f"[{c}]" for c in columns)
        return (schema, table, name, 1_093_578_934, 901_578_250, lsn_b(start), None, False, None, None,
                "PK_" + table, "PRIMARY", dt.datetime(2019, 6, 5, 9, 0, 0, 123000),
                ", ".join(f"[{c}]" for c in (index or ["id"])), quoted)

    def instances(self, *answers: list[tuple[Any, ...]]) -> RecordedServer:
        """Answers to sp_cdc_help_change_data_capture, in turn (the last one repeats)."""
        self.rec.add(sq.Q_HELP_CDC, None, *[ResultSet.of(HELP_COLUMNS, rows) for rows in answers])
        return self

    def columns(self, schema: str, table: str, columns: list[tuple[Any, ...]],
                primary_key: list[str]) -> RecordedServer:
        self.rec.add(sq.Q_COLUMNS, (schema, table), columns_result(columns))
        self.rec.add(sq.Q_PRIMARY_KEY, (schema, table), ResultSet.of(["COLUMN_NAME"], [(k,) for k in primary_key]))
        return self

    def customers(self, start: str = "00000024:00000100:0001") -> RecordedServer:
        """The seed's CDC-enabled ``dbo.customers`` in a CDC-enabled ``testDB``."""
        self.cdc_database()
        self.user_tables(("dbo", "customers", True))
        self.instances([self.instance_row("dbo", "customers", "dbo_customers", start,
                                          [c[0] for c in CUSTOMERS])])
        self.columns("dbo", "customers", CUSTOMERS, ["id"])
        return self

    # ---- LSNs and changes --------------------------------------------------------------------
    def max_lsn(self, *texts: str | None) -> RecordedServer:
        self.rec.add(sq.Q_MAX_LSN, None, *[ResultSet([("", 2)], [(None if t is None else lsn_b(t),)]) for t in texts])
        return self

    def passes(self, start: str, *ends: str, max_transactions: int = 500) -> RecordedServer:
        """Where each streaming pass ends: from ``start`` to the first end, from there to the next...;
        the last end answers "nothing new" (itself) from then on."""
        chain = [start, *ends]
        for i, frm in enumerate(chain):
            to = chain[min(i + 1, len(chain) - 1)]
            self.rec.add(sq.Q_NTH_TX_LSN_FROM_LAST, (max_transactions, lsn_b(frm)),
                         ResultSet([("", 2)], [(lsn_b(to),)]))
        return self

    def lsn_time(self, commit: str, ms: int) -> RecordedServer:
        self.rec.add(sq.Q_LSN_TIME, (lsn_b(commit),), ResultSet([("", 4)], [(utc_ms(ms),)]))
        return self

    def changes(self, instance: str, from_lsn: str | int, to_lsn: str | int, columns: list[str],
                rows: list[tuple[Any, ...]]) -> RecordedServer:
        """``rows`` as (commit text, seqval text, operation, values...)."""
        full = [(lsn_b(r[0]), lsn_b(r[1]), r[2], b"\x0f", *r[3:]) for r in rows]
        self.rec.add(sq.changes_query(instance), (lsn_b(from_lsn), lsn_b(to_lsn)),
                     ResultSet.of(CHANGE_META + columns, full) if full else
                     ResultSet([(n, 1) for n in CHANGE_META + columns], []))
        return self

    # ---- snapshot ----------------------------------------------------------------------------
    def snapshot_locks(self, tables: list[tuple[str, str]], isolation: str = "REPEATABLE READ",
                       savepoint: bool = True, lock_timeout: int = 10000) -> RecordedServer:
        self.rec.add(f"SET LOCK_TIMEOUT {lock_timeout}", None)
        self.rec.add(f"SET TRANSACTION ISOLATION LEVEL {isolation}", None)
        if savepoint:
            self.rec.add("SAVE TRANSACTION dbz_schema_snapshot", None)
            self.rec.add("ROLLBACK TRANSACTION dbz_schema_snapshot", None)
        for schema, table in tables:
            self.rec.add(f"SELECT TOP(0) * FROM [{self.db}].[{schema}].[{table}] WITH (TABLOCKX)", None)
        return self

    def snapshot_rows(self, schema: str, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> RecordedServer:
        select = ", ".join(f"[{c}]" for c in columns)
        self.rec.add(f"SELECT {select} FROM [{self.db}].[{schema}].[{table}]", None, ResultSet.of(columns, rows))
        self.rec.add(Q_ROW_ESTIMATE, (f"[{schema}].[{table}]",), ResultSet([("", 3)], [(len(rows),)]))
        return self


def base_properties(**extra: str) -> dict[str, str]:
    props = {
        "connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
        "database.hostname": "192.168.99.100",
        "database.port": "1433",
        "database.user": "sa",
        "database.password": "Password!",
        "database.names": DB,
        "topic.prefix": "server1",
        "table.include.list": "dbo.customers",
        "poll.interval.ms": "10",
    }
    props.update({k.replace("__", "."): v for k, v in extra.items()})
    return props
