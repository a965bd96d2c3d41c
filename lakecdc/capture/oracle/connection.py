"""Every SQL statement the Oracle connector issues, over a DB-API 2.0 connection (python-oracledb).

The driver connection comes from a *connection factory*: ``oracledb.connect`` by default, or one
installed with :func:`set_connection_factory` (in-process) or named by the environment variable
``LAKECDC_ORACLE_CONNECTION_FACTORY=module:callable`` (for ``lakecdc capture`` subprocesses). The
factory is called with the :class:`OracleConnectorConfig` and returns a DB-API connection; the tests
use it to put a replay connection (recorded result sets) in place of a live database.

Rows are read by column name from ``cursor.description`` (as Debezium reads its ResultSets), so the
column order of a result set never matters.

Prerequisite checks (:func:`check_prerequisites`) name each missing item with the SQL that fixes it:
ARCHIVELOG mode, minimal supplemental logging, ALL COLUMNS supplemental logging per captured table,
and the capture user's privileges and roles.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.oracle.errors import (
    OracleConnectError,
    OracleConnectionLostError,
    OraclePrerequisiteError,
)

log = logging.getLogger(__name__)

ConnectionFactory = Callable[[Any], Any]
#: driver / server error codes that mean the session is gone (retry after reconnecting)
CONNECTION_LOST_CODES = ("DPY-1001", "DPY-4011", "DPY-6005", "ORA-03113", "ORA-03114", "ORA-03135",
                         "ORA-12170", "ORA-12541", "ORA-01089", "ORA-01033")
FACTORY_ENV = "LAKECDC_ORACLE_CONNECTION_FACTORY"
_factory: ConnectionFactory | None = None

#: Debezium's session formats: SQL_REDO literals and snapshot text of temporal columns use them.
NLS_SETUP = (
    "ALTER SESSION SET NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS' "
    "NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF9' "
    "NLS_TIMESTAMP_TZ_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF9 TZH:TZM' "
    "NLS_NUMERIC_CHARACTERS = '.,'")
SQL_DATABASE = "SELECT LOG_MODE, SUPPLEMENTAL_LOG_DATA_MIN, SUPPLEMENTAL_LOG_DATA_ALL FROM V$DATABASE"
SQL_CURRENT_SCN = "SELECT CURRENT_SCN FROM V$DATABASE"
SQL_SESSION_PRIVS = "SELECT PRIVILEGE FROM SESSION_PRIVS"
SQL_SESSION_ROLES = "SELECT ROLE FROM SESSION_ROLES"
SQL_ALL_COLUMN_LOG_GROUPS = (
    "SELECT OWNER, TABLE_NAME FROM ALL_LOG_GROUPS WHERE LOG_GROUP_TYPE = 'ALL COLUMN LOGGING'")
SQL_TABLES = (
    "SELECT OWNER, TABLE_NAME FROM ALL_TABLES WHERE TEMPORARY = 'N' AND NESTED = 'NO' "
    "ORDER BY OWNER, TABLE_NAME")
SQL_COLUMNS = (
    "SELECT COLUMN_NAME, DATA_TYPE, DATA_LENGTH, DATA_PRECISION, DATA_SCALE, NULLABLE, DATA_DEFAULT, "
    "COLUMN_ID, CHAR_LENGTH FROM ALL_TAB_COLUMNS WHERE OWNER = :owner AND TABLE_NAME = :table_name "
    "ORDER BY COLUMN_ID")
SQL_KEYS = (
    "SELECT c.CONSTRAINT_TYPE, c.CONSTRAINT_NAME, cc.COLUMN_NAME FROM ALL_CONSTRAINTS c "
    "JOIN ALL_CONS_COLUMNS cc ON cc.OWNER = c.OWNER AND cc.CONSTRAINT_NAME = c.CONSTRAINT_NAME "
    "WHERE c.OWNER = :owner AND c.TABLE_NAME = :table_name AND c.CONSTRAINT_TYPE IN ('P', 'U') "
    "AND c.STATUS = 'ENABLED' ORDER BY c.CONSTRAINT_TYPE, c.CONSTRAINT_NAME, cc.POSITION")
SQL_OPEN_TRANSACTIONS = "SELECT XID, START_SCN FROM V$TRANSACTION"
SQL_ROW_ESTIMATE = "SELECT NUM_ROWS FROM ALL_TABLES WHERE OWNER = :owner AND TABLE_NAME = :table_name"

#: (privilege as SESSION_PRIVS lists it, the GRANT that gives it); Debezium's documented set for
#: LogMiner, as far as a session can see it.
REQUIRED_PRIVILEGES = (
    ("CREATE SESSION", "GRANT CREATE SESSION TO {user}"),
    ("SELECT ANY TRANSACTION", "GRANT SELECT ANY TRANSACTION TO {user}"),
    ("LOGMINING", "GRANT LOGMINING TO {user}"),
    ("FLASHBACK ANY TABLE", "GRANT FLASHBACK ANY TABLE TO {user}"),
    ("SELECT ANY TABLE", "GRANT SELECT ANY TABLE TO {user}"),
)
REQUIRED_ROLES = (
    ("SELECT_CATALOG_ROLE", "GRANT SELECT_CATALOG_ROLE TO {user}"),
    ("EXECUTE_CATALOG_ROLE", "GRANT EXECUTE_CATALOG_ROLE TO {user}"),
)


def decimal_numbers(cursor: Any, metadata: Any) -> Any:
    """python-oracledb output type handler: NUMBER columns fetched as ``decimal.Decimal``."""
    import decimal

    import oracledb

    if metadata.type_code is oracledb.DB_TYPE_NUMBER:
        return cursor.var(decimal.Decimal, arraysize=cursor.arraysize)
    return None


def set_connection_factory(factory: ConnectionFactory | None) -> None:
    """Install ``factory(config) -> DB-API connection`` for every later :func:`connect` (None:
    back to ``oracledb.connect``)."""
    global _factory
    _factory = factory


def _resolve_factory() -> ConnectionFactory:
    if _factory is not None:
        return _factory
    named = os.environ.get(FACTORY_ENV)
    if named:
        module_name, _, attr = named.partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def real(config: Any) -> Any:
        import oracledb

        try:
            return oracledb.connect(**config.connection_kwargs())
        except oracledb.Error as exc:
            # oracledb messages carry the DSN and user, never the password
            lost = translated(exc)
            if lost is exc:
                raise OracleConnectError(f"cannot connect to Oracle at {config.dsn()}: {exc}") from exc
            raise lost from exc

    return real


@dataclass(frozen=True)
class ColumnInfo:
    """One row of ALL_TAB_COLUMNS."""

    name: str
    data_type: str
    length: int | None
    precision: int | None
    scale: int | None
    nullable: bool
    default: str | None
    position: int
    char_length: int | None = None


class OracleConnection:
    """A DB-API connection with the connector's queries; ``pdb`` switches the session container
    for metadata and snapshot reads (LogMiner itself runs in the CDB root)."""

    def __init__(self, raw: Any, pdb: str | None = None) -> None:
        self.raw = raw
        self.pdb = pdb
        self._container: str | None = None

    @classmethod
    def open(cls, config: Any) -> OracleConnection:
        raw = _resolve_factory()(config)
        # NUMBER columns as Decimal (the driver's default, float, would round NUMBER(20,4) values)
        raw.outputtypehandler = decimal_numbers
        # database.query.timeout.ms: oracledb's per-round-trip limit (0 = none)
        raw.call_timeout = config.database_query_timeout_ms
        conn = cls(raw, config.database_pdb_name)
        conn.execute(NLS_SETUP)
        return conn

    # -- primitives ------------------------------------------------------------------------
    def execute(self, sql: str, binds: dict[str, Any] | None = None) -> None:
        try:
            cur = self.raw.cursor()
            try:
                cur.execute(sql, binds or {})
            finally:
                cur.close()
        except Exception as exc:
            raise translated(exc) from exc

    def query(self, sql: str, binds: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return list(self.iter_query(sql, binds))

    def iter_query(self, sql: str, binds: dict[str, Any] | None = None,
                   arraysize: int = 1000) -> Iterator[dict[str, Any]]:
        """Rows as dicts keyed by the (upper-case) column names of ``cursor.description``."""
        for names, row in self.iter_tuples(sql, arraysize, binds):
            yield dict(zip(names, row))

    def iter_tuples(self, sql: str, arraysize: int = 2000,
                    binds: dict[str, Any] | None = None) -> Iterator[tuple[list[str], Sequence[Any]]]:
        """Row tuples with the column names (snapshot reads, where dicts would cost too much)."""
        try:
            cur = self.raw.cursor()
        except Exception as exc:
            raise translated(exc) from exc
        try:
            try:
                cur.arraysize = arraysize
                cur.execute(sql, binds or {})
                names = [d[0].upper() for d in cur.description]
                block = cur.fetchmany(arraysize)
            except Exception as exc:
                raise translated(exc) from exc
            while block:
                for row in block:
                    yield names, row
                try:
                    block = cur.fetchmany(arraysize)
                except Exception as exc:
                    raise translated(exc) from exc
        finally:
            cur.close()

    def scalar(self, sql: str, binds: dict[str, Any] | None = None) -> Any:
        rows = self.query(sql, binds)
        return next(iter(rows[0].values())) if rows else None

    def set_container(self, container: str | None) -> None:
        """``ALTER SESSION SET CONTAINER`` (only with ``database.pdb.name``)."""
        if not self.pdb or container == self._container:
            return
        self.execute(f"ALTER SESSION SET CONTAINER = {container}")
        self._container = container

    def use_pdb(self) -> None:
        self.set_container(self.pdb)

    def use_root(self) -> None:
        self.set_container("CDB$ROOT")

    def close(self) -> None:
        try:
            self.raw.close()
        except Exception:  # closing a dropped connection must not hide the original failure
            pass

    # -- queries ---------------------------------------------------------------------------
    def current_scn(self) -> int:
        return int(self.scalar(SQL_CURRENT_SCN))

    def open_transactions(self, scn: int) -> dict[str, int]:
        """Transactions open now that started at or before ``scn``: xid (hex) -> start SCN."""
        self.use_root()
        out = {}
        for r in self.query(SQL_OPEN_TRANSACTIONS):
            start = int(r["START_SCN"])
            if start <= scn:
                xid = r["XID"]
                out[bytes(xid).hex() if isinstance(xid, (bytes, bytearray)) else str(xid).lower()] = start
        return out

    def list_tables(self) -> list[tuple[str, str]]:
        self.use_pdb()
        return [(r["OWNER"], r["TABLE_NAME"]) for r in self.query(SQL_TABLES)]

    def columns(self, owner: str, table: str) -> list[ColumnInfo]:
        self.use_pdb()
        rows = self.query(SQL_COLUMNS, {"owner": owner, "table_name": table})
        return [ColumnInfo(
            name=r["COLUMN_NAME"], data_type=r["DATA_TYPE"], length=_opt_int(r["DATA_LENGTH"]),
            precision=_opt_int(r["DATA_PRECISION"]), scale=_opt_int(r["DATA_SCALE"]),
            nullable=r["NULLABLE"] == "Y", default=r["DATA_DEFAULT"], position=int(r["COLUMN_ID"]),
            char_length=_opt_int(r.get("CHAR_LENGTH")),
        ) for r in rows]

    def key_columns(self, owner: str, table: str) -> list[str]:
        """The primary key, or else the first enabled unique constraint (Debezium Oracle documentation,
        "Change event keys": the primary key or unique key constraint)."""
        self.use_pdb()
        rows = self.query(SQL_KEYS, {"owner": owner, "table_name": table})
        for kind in ("P", "U"):
            names = [r for r in rows if r["CONSTRAINT_TYPE"] == kind]
            if names:
                first = names[0]["CONSTRAINT_NAME"]
                return [r["COLUMN_NAME"] for r in names if r["CONSTRAINT_NAME"] == first]
        return []

    def row_estimate(self, owner: str, table: str) -> int:
        self.use_pdb()
        value = self.scalar(SQL_ROW_ESTIMATE, {"owner": owner, "table_name": table})
        return int(value or 0)


def connect(config: Any) -> OracleConnection:
    return OracleConnection.open(config)


def check_prerequisites(conn: OracleConnection, config: Any, captured: list[tuple[str, str]]) -> None:
    """Raise :class:`OraclePrerequisiteError` listing every missing prerequisite with its fix."""
    missing: list[tuple[str, str]] = []
    conn.use_root()
    db = conn.query(SQL_DATABASE)[0]
    if db["LOG_MODE"] != "ARCHIVELOG":
        missing.append((
            f"the database runs in {db['LOG_MODE']} mode; LogMiner capture needs ARCHIVELOG",
            "SHUTDOWN IMMEDIATE; STARTUP MOUNT; ALTER DATABASE ARCHIVELOG; ALTER DATABASE OPEN;  (as SYSDBA)"))
    if db["SUPPLEMENTAL_LOG_DATA_MIN"] not in ("YES", "IMPLICIT"):
        missing.append(("minimal supplemental logging is off",
                        "ALTER DATABASE ADD SUPPLEMENTAL LOG DATA;"))
    if db["SUPPLEMENTAL_LOG_DATA_ALL"] != "YES":
        conn.use_pdb()
        logged = {(r["OWNER"], r["TABLE_NAME"]) for r in conn.query(SQL_ALL_COLUMN_LOG_GROUPS)}
        for owner, table in captured:
            if (owner, table) not in logged:
                missing.append((
                    f"table {owner}.{table} has no ALL COLUMNS supplemental logging (updates and deletes "
                    "would lack the unchanged columns)",
                    f'ALTER TABLE "{owner}"."{table}" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;'))
    user = (config.database_user or "<capture user>").upper()
    privileges = {r["PRIVILEGE"] for r in conn.query(SQL_SESSION_PRIVS)}
    for privilege, fix in REQUIRED_PRIVILEGES:
        if privilege not in privileges:
            missing.append((f"the user lacks the {privilege} privilege", fix.format(user=user) + ";"))
    roles = {r["ROLE"] for r in conn.query(SQL_SESSION_ROLES)}
    for role, fix in REQUIRED_ROLES:
        if role not in roles:
            missing.append((f"the user lacks the {role} role", fix.format(user=user) + ";"))
    if missing:
        raise OraclePrerequisiteError(missing)
    log.info("Oracle prerequisites met: ARCHIVELOG, supplemental logging, privileges")


def translated(exc: Exception) -> Exception:
    """A lost session becomes :class:`OracleConnectionLostError` (the coordinator reconnects and
    resumes from the stored offset); any other error stays as it is."""
    text = str(exc)
    if any(code in text for code in CONNECTION_LOST_CODES):
        return OracleConnectionLostError(f"the connection to Oracle was lost: {text}")
    return exc


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
