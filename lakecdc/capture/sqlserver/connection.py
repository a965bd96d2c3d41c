"""The T-SQL the SQL Server connector issues, over any DB-API 2.0 connection (pymssql by default).

Statements (``%s`` is pymssql's parameter marker; LSNs travel as ``binary(10)`` bytes)::

    SELECT is_cdc_enabled FROM sys.databases WHERE name = %s          is CDC on for the database?
    EXEC sys.sp_cdc_help_change_data_capture                           capture instances
    SELECT ... FROM sys.tables ...                                     user tables, is_tracked_by_cdc
    SELECT ... FROM INFORMATION_SCHEMA.COLUMNS ...                     a table's columns
    SELECT ... FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS ...           its primary key
    SELECT sys.fn_cdc_get_max_lsn()                                    the newest LSN CDC has
    SELECT MAX(start_lsn) FROM (SELECT TOP (%s + 1) ... cdc.lsn_time_mapping ...)
                                                                       where a streaming pass ends
    SELECT TODATETIMEOFFSET(sys.fn_cdc_map_lsn_to_time(%s), ...)       commit time of an LSN
    SELECT * FROM cdc.[fn_cdc_get_all_changes_<instance>](%s, %s, N'all update old') ORDER BY ...

**Connection factory hook.** :func:`connect` opens connections with ``pymssql.connect`` unless a
factory is given: ``SqlServerConnector(config, connection_factory=f)`` in Python, or the environment
variable ``LAKECDC_SQLSERVER_CONNECTION_FACTORY=package.module:callable`` (for the CLI). A factory
is called with the connector configuration and returns a DB-API 2.0 connection; the tests use
``sqlserver_replay:from_env`` (``tests/unit/capture/sqlserver/``) to answer from recorded result sets.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.sqlserver.errors import SqlServerConnectionLostError, SqlServerSetupError
from lakecdc.events.position_text import sqlserver_lsn_to_text

log = logging.getLogger(__name__)

ConnectionFactory = Callable[[Any], Any]
FACTORY_ENV = "LAKECDC_SQLSERVER_CONNECTION_FACTORY"

Q_DATABASE_CDC = "SELECT is_cdc_enabled FROM sys.databases WHERE name = %s"
Q_HELP_CDC = "EXEC sys.sp_cdc_help_change_data_capture"
Q_USER_TABLES = (
    "SELECT s.name, t.name, t.is_tracked_by_cdc FROM sys.tables t "
    "JOIN sys.schemas s ON s.schema_id = t.schema_id WHERE t.is_ms_shipped = 0 ORDER BY s.name, t.name"
)
Q_COLUMNS = (
    "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
    "DATETIME_PRECISION, IS_NULLABLE, ORDINAL_POSITION, COLUMN_DEFAULT, "
    "COLUMNPROPERTY(OBJECT_ID(QUOTENAME(TABLE_SCHEMA) + '.' + QUOTENAME(TABLE_NAME)), COLUMN_NAME, 'IsIdentity') "
    "FROM INFORMATION_SCHEMA.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)
Q_PRIMARY_KEY = (
    "SELECT k.COLUMN_NAME FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS c "
    "JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE k ON k.CONSTRAINT_NAME = c.CONSTRAINT_NAME "
    "AND k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME "
    "WHERE c.CONSTRAINT_TYPE = 'PRIMARY KEY' AND c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s "
    "ORDER BY k.ORDINAL_POSITION"
)
Q_MAX_LSN = "SELECT sys.fn_cdc_get_max_lsn()"
# where a streaming pass ends: the commit LSN of the last transaction CDC recorded, or of the
# max.iteration.transactions-th after the resume position (bounds one pass, as Debezium does)
Q_MAX_TX_LSN = "SELECT MAX(start_lsn) FROM cdc.lsn_time_mapping WHERE tran_id <> 0x00"
Q_NTH_TX_LSN_FROM_BEGINNING = (
    "SELECT MAX(start_lsn) FROM (SELECT TOP (%s) start_lsn FROM cdc.lsn_time_mapping "
    "WHERE tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns"
)
Q_NTH_TX_LSN_FROM_LAST = (
    "SELECT MAX(start_lsn) FROM (SELECT TOP (%s + 1) start_lsn FROM cdc.lsn_time_mapping "
    "WHERE start_lsn >= %s AND tran_id <> 0x00 ORDER BY start_lsn) AS next_lsns"
)
# the server's local commit time with the server's offset attached, so no time zone is guessed
Q_LSN_TIME = (
    "SELECT TODATETIMEOFFSET(sys.fn_cdc_map_lsn_to_time(%s), DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))"
)

_BRACKETED = re.compile(r"\[((?:[^\]]|\]\])*)\]")


def quote(name: str) -> str:
    """A T-SQL delimited identifier: ``[name]`` with ``]`` doubled."""
    return "[" + name.replace("]", "]]") + "]"


def changes_query(capture_instance: str) -> str:
    """All changes of one capture instance between two LSNs, updates as before/after pairs, in
    the order the connector merges them: commit LSN, change LSN (seqval), operation."""
    function = quote(f"fn_cdc_get_all_changes_{capture_instance}")
    return (
        f"SELECT * FROM cdc.{function}(%s, %s, N'all update old') "
        "ORDER BY [__$start_lsn] ASC, [__$seqval] ASC, [__$operation] ASC"
    )


def lsn_int(value: Any) -> int | None:
    """``binary(10)`` LSN bytes -> int (None for NULL or the all-zero LSN)."""
    if value is None:
        return None
    number = int.from_bytes(bytes(value), "big")
    return number or None


def lsn_bytes(lsn: int) -> bytes:
    return lsn.to_bytes(10, "big")


def lsn_text(lsn: int | None) -> str | None:
    return None if lsn is None else sqlserver_lsn_to_text(lsn)


def parse_column_list(text: str | None) -> tuple[str, ...]:
    """``[id], [first name]`` (sp_cdc_help_change_data_capture's lists) -> ``("id", "first name")``."""
    if not text:
        return ()
    return tuple(m.group(1).replace("]]", "]") for m in _BRACKETED.finditer(text))


@dataclass(frozen=True)
class CaptureInstance:
    """One row of ``sys.sp_cdc_help_change_data_capture``: a change table of a source table."""

    source_schema: str
    source_table: str
    name: str
    start_lsn: int | None
    captured_columns: tuple[str, ...]
    index_columns: tuple[str, ...]

    @property
    def table_key(self) -> tuple[str, str]:
        return (self.source_schema, self.source_table)


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type_name: str  # lower-case SQL Server type name (INFORMATION_SCHEMA.COLUMNS.DATA_TYPE)
    length: int | None
    precision: int | None
    scale: int | None
    datetime_precision: int | None
    nullable: bool
    position: int
    default: str | None = None  # the default's T-SQL text as SQL Server keeps it, e.g. ((0))
    identity: bool = False


@dataclass(frozen=True)
class TableDef:
    schema: str
    table: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...]


def connect(config: Any, factory: ConnectionFactory | None = None) -> Any:
    """A DB-API connection to the configured database (see the module docstring's hook)."""
    if factory is None:
        factory = factory_from_env()
    if factory is not None:
        return factory(config)
    import pymssql

    kwargs = config.connection_kwargs()
    try:
        return pymssql.connect(**kwargs)
    except pymssql.OperationalError as exc:
        where = f"{config.database_hostname}:{config.database_port}/{config.database}"
        # pymssql's message may quote the login; keep only its first line, which does not
        raw = exc.args[0][-1] if exc.args and isinstance(exc.args[0], tuple) and exc.args[0] else exc
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        message = (text.splitlines() or [""])[0]
        raise SqlServerConnectionLostError(f"cannot connect to SQL Server {where}: {message}") from None


def factory_from_env() -> ConnectionFactory | None:
    spec = os.environ.get(FACTORY_ENV)
    if not spec:
        return None
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        raise SqlServerSetupError(f"{FACTORY_ENV}={spec!r}: expected 'package.module:callable'")
    factory: ConnectionFactory = getattr(importlib.import_module(module_name), attribute)
    log.info("SQL Server connections come from %s (%s)", spec, FACTORY_ENV)
    return factory


def _rows(conn: Any, sql: str, params: tuple[Any, ...] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params) if params is not None else cur.execute(sql)
        names = [d[0] for d in (cur.description or [])]
        return names, [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()


def execute(conn: Any, sql: str) -> None:
    """A statement without a result set (SET ..., SAVE TRANSACTION ...)."""
    cur = conn.cursor()
    try:
        cur.execute(sql)
    finally:
        cur.close()


def cdc_enabled_on_database(conn: Any, database: str) -> bool:
    _, rows = _rows(conn, Q_DATABASE_CDC, (database,))
    return bool(rows and rows[0][0])


def capture_instances(conn: Any) -> list[CaptureInstance]:
    """Every capture instance the login may read (an empty list also means: no SELECT right)."""
    names, rows = _rows(conn, Q_HELP_CDC)
    col = {n: i for i, n in enumerate(names)}
    out = []
    for r in rows:
        out.append(CaptureInstance(
            source_schema=r[col["source_schema"]], source_table=r[col["source_table"]],
            name=r[col["capture_instance"]], start_lsn=lsn_int(r[col["start_lsn"]]),
            captured_columns=parse_column_list(r[col["captured_column_list"]]),
            index_columns=parse_column_list(r[col["index_column_list"]]),
        ))
    return out


def user_tables(conn: Any) -> list[tuple[str, str, bool]]:
    """(schema, table, tracked by CDC) of every user table of the database."""
    _, rows = _rows(conn, Q_USER_TABLES)
    return [(s, t, bool(tracked)) for s, t, tracked in rows]


def table_def(conn: Any, schema: str, table: str) -> TableDef:
    _, rows = _rows(conn, Q_COLUMNS, (schema, table))
    columns = tuple(
        ColumnDef(name=r[0], type_name=str(r[1]).lower(), length=r[2], precision=r[3], scale=r[4],
                  datetime_precision=r[5], nullable=str(r[6]).upper() == "YES", position=int(r[7]),
                  default=r[8], identity=bool(r[9]))
        for r in rows
    )
    _, key_rows = _rows(conn, Q_PRIMARY_KEY, (schema, table))
    return TableDef(schema, table, columns, tuple(r[0] for r in key_rows))


def max_lsn(conn: Any) -> int | None:
    _, rows = _rows(conn, Q_MAX_LSN)
    return lsn_int(rows[0][0]) if rows else None


def pass_end_lsn(conn: Any, after: int | None, max_transactions: int) -> int | None:
    """The commit LSN a streaming pass reads up to (None: CDC has recorded no transaction)."""
    if max_transactions <= 0:
        _, rows = _rows(conn, Q_MAX_TX_LSN)
    elif not after:
        _, rows = _rows(conn, Q_NTH_TX_LSN_FROM_BEGINNING, (max_transactions,))
    else:
        _, rows = _rows(conn, Q_NTH_TX_LSN_FROM_LAST, (max_transactions, lsn_bytes(after)))
    return lsn_int(rows[0][0]) if rows else None


def lsn_time_ms(conn: Any, lsn: int) -> int | None:
    """Commit time of ``lsn`` in epoch milliseconds (None if SQL Server no longer maps it)."""
    _, rows = _rows(conn, Q_LSN_TIME, (lsn_bytes(lsn),))
    value = rows[0][0] if rows else None
    if value is None:
        return None
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return int(value.timestamp() * 1000)


def change_rows(conn: Any, capture_instance: str, from_lsn: int, to_lsn: int) -> tuple[list[str], Any]:
    """(column names, cursor positioned on the rows) of one capture instance's changes."""
    cur = conn.cursor()
    cur.execute(changes_query(capture_instance), (lsn_bytes(from_lsn), lsn_bytes(to_lsn)))
    return [d[0] for d in (cur.description or [])], cur
