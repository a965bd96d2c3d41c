"""SQL connections to the source server and what the connector asks it.

Differences between servers handled here (all unit-tested with recorded answers):

- binlog position: MySQL >= 8.2 answers ``SHOW BINARY LOG STATUS`` (``SHOW MASTER STATUS`` was
  removed in 8.4); older MySQL and MariaDB answer ``SHOW MASTER STATUS``. We try the new
  statement first and fall back on a syntax error (1064).
- GTIDs: MySQL ``@@gtid_mode`` / ``@@gtid_executed`` (``uuid:1-10``), MariaDB ``@@gtid_binlog_pos``
  (``0-1-100``; always on).
- authentication: MySQL 8 defaults to ``caching_sha2_password``, which PyMySQL supports over TLS or
  with the server's RSA key (``cryptography`` installed); MariaDB uses ``mysql_native_password``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.mysql.errors import (
    MySqlConnectionLostError,
    MySqlPrivilegeError,
    MySqlSetupError,
)

log = logging.getLogger(__name__)

_BINLOG_STATUS_STATEMENTS = ("SHOW BINARY LOG STATUS", "SHOW MASTER STATUS")
ER_PARSE_ERROR = 1064
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_ACCESS_DENIED = 1045
CONNECTION_LOST_CODES = frozenset({2003, 2006, 2013, 2055})


@dataclass(frozen=True)
class ServerInfo:
    version: str
    is_mariadb: bool
    server_id: int
    gtid_enabled: bool
    binlog_format: str
    binlog_row_image: str
    binlog_row_metadata: str | None
    character_set_server: str | None

    @property
    def major_minor(self) -> tuple[int, int]:
        m = re.match(r"(\d+)\.(\d+)", self.version)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@dataclass(frozen=True)
class BinlogStatus:
    file: str
    pos: int
    gtids: str | None  # MySQL executed GTID set, or MariaDB gtid_binlog_pos


def row_decoders(parsed: bool = False) -> dict[Any, Any]:
    """PyMySQL's conversions for the connections that read table rows into records, a zero date as
    NULL (:func:`zero_date_as_null`). Snapshots keep DATE, DATETIME and TIMESTAMP values as the
    server's text, which the value converters (``types.py``) parse with ``date``/
    ``datetime.fromisoformat`` (C), where PyMySQL parsed it in Python first (13 % of a serial
    snapshot's CPU on a table with two such columns, ``bench/bench_mysql_capture.py``). ``parsed``:
    as PyMySQL's objects, for incremental snapshot chunks, whose keys are matched against the
    binlog's (``datetime`` objects)."""
    from pymysql.constants import FIELD_TYPE
    from pymysql.converters import conversions

    def decoder(field_type: int) -> Any:
        parse = conversions[field_type]
        return (lambda text: None if zero_date_as_null(text) is None else parse(text)) if parsed else zero_date_as_null

    return {**conversions, **{t: decoder(t) for t in (FIELD_TYPE.DATE, FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP)}}


def zero_date_as_null(text: str) -> str | None:
    """A date with a zero year, month or day (``0000-00-00``, which MySQL stores without
    ``NO_ZERO_DATE``) is NULL, as Debezium's snapshot reads it (its JDBC connection sets
    ``zeroDateTimeBehavior=CONVERT_TO_NULL``) and as the binlog reader does; a NOT NULL column's
    converter then gives the epoch, as Debezium does. The snapshot stopped on it before."""
    return None if text[:4] == "0000" or text[5:7] == "00" or text[8:10] == "00" else text


def connect(config: Any, database: str | None = None, **extra: Any) -> Any:
    """A PyMySQL connection (autocommit off) with the session in UTC, so TIMESTAMP values read by
    the snapshot are UTC like the binlog's; ``database.initial.statements`` run on it first."""
    import pymysql

    kwargs = dict(config.connection_kwargs())
    if database:
        kwargs["database"] = database
    kwargs.update(extra)
    try:
        conn = pymysql.connect(**kwargs, init_command="SET time_zone = '+00:00'")
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else 0
        where = f"{kwargs['host']}:{kwargs['port']} as user '{kwargs['user']}'"
        if code == ER_ACCESS_DENIED:
            raise MySqlPrivilegeError(f"MySQL server {where} refused the login (wrong user or password)") from None
        raise MySqlConnectionLostError(f"cannot connect to MySQL server {where}: {exc.args[-1]}") from None
    if config.initial_statements:  # Debezium runs them on each JDBC connection, not the binlog one
        with conn.cursor() as cur:
            for statement in config.initial_statements:
                cur.execute(statement)
        conn.commit()
    return conn


def _scalar(cur: Any, sql: str) -> Any:
    cur.execute(sql)
    row = cur.fetchone()
    return row[0] if row else None


def _variable(cur: Any, name: str) -> str | None:
    cur.execute("SHOW GLOBAL VARIABLES LIKE %s", (name,))
    row = cur.fetchone()
    return None if row is None else str(row[1])


def server_info(conn: Any) -> ServerInfo:
    with conn.cursor() as cur:
        version = str(_scalar(cur, "SELECT VERSION()"))
        is_mariadb = "mariadb" in version.lower()
        server_id = int(_scalar(cur, "SELECT @@server_id") or 0)
        if is_mariadb:
            gtid_enabled = True
        else:
            gtid_enabled = (_variable(cur, "gtid_mode") or "OFF").upper() == "ON"
        return ServerInfo(
            version=version,
            is_mariadb=is_mariadb,
            server_id=server_id,
            gtid_enabled=gtid_enabled,
            binlog_format=(_variable(cur, "binlog_format") or "").upper(),
            binlog_row_image=(_variable(cur, "binlog_row_image") or "").upper(),
            binlog_row_metadata=_variable(cur, "binlog_row_metadata"),
            character_set_server=_variable(cur, "character_set_server"),
        )


def check_setup(info: ServerInfo, log_bin: str | None) -> None:
    """Raise naming the server setting at fault when the binlog cannot be captured."""
    if (log_bin or "").upper() not in ("ON", "1"):
        raise MySqlSetupError("the server's binary log is off: start it with log_bin enabled")
    if info.binlog_format != "ROW":
        raise MySqlSetupError(f"binlog_format is {info.binlog_format or 'unset'}: set binlog_format=ROW")
    if info.binlog_row_image != "FULL":
        raise MySqlSetupError(
            f"binlog_row_image is {info.binlog_row_image or 'unset'}: set binlog_row_image=FULL so "
            "before images carry every column"
        )
    if (info.binlog_row_metadata or "").upper() not in ("FULL",) and info.major_minor >= (8, 0):
        log.warning("binlog_row_metadata is %s; FULL lets rows be decoded by column name", info.binlog_row_metadata)


def binlog_status(conn: Any, info: ServerInfo) -> BinlogStatus:
    """Current binlog file/position and GTID state (MySQL 8.4 vs older MySQL/MariaDB handled)."""
    import pymysql

    row = None
    with conn.cursor() as cur:
        for statement in _BINLOG_STATUS_STATEMENTS:
            try:
                cur.execute(statement)
            except pymysql.err.ProgrammingError as exc:
                if exc.args and exc.args[0] == ER_PARSE_ERROR:
                    continue  # older server: no SHOW BINARY LOG STATUS
                raise
            except pymysql.err.OperationalError as exc:
                if exc.args and exc.args[0] == ER_SPECIFIC_ACCESS_DENIED:
                    raise MySqlPrivilegeError(
                        f"'{statement}' needs the REPLICATION CLIENT (or BINLOG MONITOR) privilege"
                    ) from None
                raise
            row = cur.fetchone()
            break
        if row is None or not row[0]:
            raise MySqlSetupError("the server reports no binary log position: is log_bin enabled?")
        gtids: str | None
        if info.is_mariadb:
            gtids = str(_scalar(cur, "SELECT @@gtid_binlog_pos") or "") or None
        else:
            gtids = (str(row[4]).replace("\n", "") if len(row) > 4 and row[4] else None) if info.gtid_enabled else None
    return BinlogStatus(file=str(row[0]), pos=int(row[1]), gtids=gtids)


def binlog_files(conn: Any) -> list[str]:
    """Binlog files still on the server, oldest first (``SHOW BINARY LOGS``)."""
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [str(r[0]) for r in cur.fetchall()]


def purged_gtids(conn: Any, info: ServerInfo) -> str | None:
    """MySQL ``@@gtid_purged``; MariaDB keeps no such set (its oldest file's GTID list says it)."""
    if info.is_mariadb or not info.gtid_enabled:
        return None
    with conn.cursor() as cur:
        return str(_scalar(cur, "SELECT @@global.gtid_purged") or "") or None


def list_databases(conn: Any) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        return [str(r[0]) for r in cur.fetchall()]


def list_tables(conn: Any, database: str) -> list[str]:
    with conn.cursor() as cur:
        cur.execute(f"SHOW FULL TABLES IN {quote(database)} WHERE Table_type = 'BASE TABLE'")
        return [str(r[0]) for r in cur.fetchall()]


def show_create_table(conn: Any, database: str, table: str) -> str:
    with conn.cursor() as cur:
        cur.execute(f"SHOW CREATE TABLE {quote(database)}.{quote(table)}")
        return str(cur.fetchone()[1])


def database_charset(conn: Any, database: str) -> str | None:
    with conn.cursor() as cur:
        cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                    (database,))
        row = cur.fetchone()
        return str(row[0]) if row else None


def quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def is_connection_lost(exc: BaseException) -> bool:
    args: tuple[Any, ...] = getattr(exc, "args", ())
    return bool(args) and isinstance(args[0], int) and args[0] in CONNECTION_LOST_CODES
