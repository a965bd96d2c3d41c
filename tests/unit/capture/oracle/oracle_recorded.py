"""A recorded Oracle database for the replay connection: dictionary rows, snapshot rows and
V$LOGMNR_CONTENTS rows in the shapes python-oracledb returns them (NUMBER -> int, or Decimal
through the connector's output type handler; DATE -> datetime; RAW (XID) -> bytes; VARCHAR2 ->
str), answering every statement the connector issues.

The statements are the connector's own constants (lakecdc.capture.oracle.connection / logminer),
so a changed statement text is still matched, but a *new* statement fails the replay. The LogMiner
query is answered the way the database would: rows with ``start_scn < SCN <= end_scn`` of the
started session, only while a session is started, minus SYS/SYSTEM and excluded schemas.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import oracledb
from oracle_replay import Handler, ReplayConnection, ReplayMismatchError, describe

from lakecdc.capture.oracle import connection as c
from lakecdc.capture.oracle.logminer import query as q
from lakecdc.capture.oracle.logminer import session as s
from lakecdc.capture.oracle.streaming import SQL_DB_OFFSET

N, V, D, R = oracledb.DB_TYPE_NUMBER, oracledb.DB_TYPE_VARCHAR, oracledb.DB_TYPE_DATE, oracledb.DB_TYPE_RAW

CONTENTS_DESCRIPTION = describe(
    ("SCN", N), ("SQL_REDO", V), ("OPERATION_CODE", N), ("TIMESTAMP", D), ("XID", R), ("CSF", N),
    ("TABLE_NAME", V), ("SEG_OWNER", V), ("OPERATION", V), ("USERNAME", V), ("ROW_ID", V), ("ROLLBACK", N),
    ("RS_ID", V), ("SSN", N), ("THREAD", N), ("START_SCN", N), ("COMMIT_SCN", N), ("START_TIMESTAMP", D),
    ("COMMIT_TIMESTAMP", D), ("INFO", V), ("STATUS", N))
OPERATIONS = {1: "INSERT", 2: "DELETE", 3: "UPDATE", 5: "DDL", 6: "START", 7: "COMMIT", 9: "SELECT_LOB_LOCATOR",
              10: "LOB_WRITE", 36: "ROLLBACK"}


def ts(ms: int) -> dt.datetime:
    """A LogMiner TIMESTAMP (DATE, database time zone UTC here) from epoch milliseconds."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def redo(scn: int, code: int, xid: bytes, sql: str | None = None, owner: str | None = None,
         table: str | None = None, ts_ms: int = 1_700_000_000_000, user: str = "DEBEZIUM",
         rs_id: str = " 0x000001.00000001.0010 ", ssn: int = 0, thread: int = 1, row_id: str | None = None,
         rollback: int = 0) -> tuple[Any, ...]:
    """One V$LOGMNR_CONTENTS row (CONTENTS_DESCRIPTION order)."""
    return (scn, sql, code, ts(ts_ms), xid, 0, table, owner, OPERATIONS[code], user,
            row_id or "AAAAAAAAAAAAAAAAAA", rollback, rs_id, ssn, thread, None, scn if code == 7 else None,
            None, ts(ts_ms) if code == 7 else None, None, 0)


@dataclass
class Table:
    owner: str
    name: str
    #: (name, data type, length, precision, scale, nullable)
    columns: list[tuple[str, str, int | None, int | None, int | None, bool]]
    key: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)  # as of the snapshot SCN
    supplemental_all: bool = True


LOG_COLUMNS = describe(("FILE_NAME", V), ("FIRST_CHANGE", N), ("NEXT_CHANGE", N), ("THREAD", N), ("SEQ", N))


@dataclass
class RecordedOracle:
    tables: list[Table]
    redo_rows: list[tuple[Any, ...]] = field(default_factory=list)
    scns: list[int] = field(default_factory=lambda: [1000])  # CURRENT_SCN answers, last one sticky
    log_mode: str = "ARCHIVELOG"
    supplemental_min: str = "YES"
    privileges: tuple[str, ...] = tuple(p for p, _ in c.REQUIRED_PRIVILEGES)
    roles: tuple[str, ...] = tuple(r for r, _ in c.REQUIRED_ROLES)
    oldest_log_scn: int = 1
    archived_next_change: int = 10**9
    files_log: list[str] = field(default_factory=list)  # every ADD_LOGFILE, across sessions
    open_transactions: list[tuple[bytes, int]] = field(default_factory=list)  # V$TRANSACTION (XID, START_SCN)
    connections: list[ReplayConnection] = field(default_factory=list)
    session: tuple[int, int] | None = None
    sessions: list[tuple[int, int]] = field(default_factory=list)
    files_added: list[str] = field(default_factory=list)
    snapshot_statements: list[str] = field(default_factory=list)
    #: (connection number, statement) of each LOCK TABLE (snapshot.locking.mode=shared)
    lock_statements: list[tuple[int, str]] = field(default_factory=list)
    #: further V$LOGMNR_CONTENTS query texts answered like the default one (log.mining.query.filter.mode)
    contents_variants: list[str] = field(default_factory=list)
    #: V$ARCHIVED_LOG answers: (name, first change, next change, sequence, first time); None: one log
    archived_logs: list[tuple[str, int, int, int, Any]] | None = None
    now: dt.datetime = dt.datetime(2026, 1, 1, 12, 0)  #: SYSDATE
    #: V$LOG's current sequence per window (a log switch when it changes), last one sticky
    online_seq: list[int] = field(default_factory=lambda: [8])
    #: V$LOGMNR_CONTENTS queries (1-based) that fail with ORA-03113 as a dropped session would
    fail_contents_queries: set[int] = field(default_factory=set)
    contents_queries: int = 0
    #: False: V$LOGMNR_CONTENTS returns SYS/SYSTEM rows too (to test the connector's own filter)
    apply_username_filter: bool = True

    def table(self, owner: str, name: str) -> Table:
        for t in self.tables:
            if (t.owner, t.name) == (owner, name):
                return t
        raise ReplayMismatchError(f"no recorded table {owner}.{name}")

    # -- handlers ------------------------------------------------------------------------------
    def _none(self, binds: dict[str, Any]) -> tuple[None, list[Any]]:
        return None, []

    def _scn(self, binds: dict[str, Any]) -> Any:
        value = self.scns.pop(0) if len(self.scns) > 1 else self.scns[0]
        return describe(("CURRENT_SCN", N)), [(value,)]

    def _columns(self, binds: dict[str, Any]) -> Any:
        t = self.table(binds["owner"], binds["table_name"])
        rows = [(name, typ, length, prec, scale, "Y" if nullable else "N", None, i + 1, length)
                for i, (name, typ, length, prec, scale, nullable) in enumerate(t.columns)]
        return describe(("COLUMN_NAME", V), ("DATA_TYPE", V), ("DATA_LENGTH", N), ("DATA_PRECISION", N),
                        ("DATA_SCALE", N), ("NULLABLE", V), ("DATA_DEFAULT", V), ("COLUMN_ID", N),
                        ("CHAR_LENGTH", N)), rows

    def _keys(self, binds: dict[str, Any]) -> Any:
        t = self.table(binds["owner"], binds["table_name"])
        return describe(("CONSTRAINT_TYPE", V), ("CONSTRAINT_NAME", V), ("COLUMN_NAME", V)), \
            [("P", f"PK_{t.name}", k) for k in t.key]

    def _contents(self, binds: dict[str, Any], lob: bool) -> Any:
        if self.session is None:
            raise ReplayMismatchError("V$LOGMNR_CONTENTS queried without a started LogMiner session (ORA-01306)")
        self.contents_queries += 1
        if self.contents_queries in self.fail_contents_queries:
            raise oracledb.DatabaseError("ORA-03113: end-of-file on communication channel")
        lo, hi = binds["start_scn"], binds["end_scn"]
        if (lo, hi) != self.session:
            raise ReplayMismatchError(f"query window {(lo, hi)} differs from the session's {self.session}")
        rows = [r for r in self.redo_rows if lo < r[0] <= hi and (lob or r[2] not in (9, 10)) and (
            r[2] in (6, 7, 36) or (r[7] not in ("SYS", "SYSTEM") and (
                not self.apply_username_filter or r[9] not in ("SYS", "SYSTEM"))))]
        return CONTENTS_DESCRIPTION, sorted(rows, key=lambda r: r[0])

    def _start(self, binds: dict[str, Any]) -> Any:
        if not self.files_added:
            raise ReplayMismatchError("START_LOGMNR without ADD_LOGFILE (ORA-01292)")
        ranges = {"/arch/1_7.arc": (self.oldest_log_scn, self.archived_next_change),
                  "/redo/redo01.log": (self.archived_next_change, 2**63 - 1)}
        ranges.update({name: (first, nxt) for name, first, nxt, _, _ in self.archived_logs or []})
        covered = sorted(ranges[f] for f in self.files_added)
        lo, hi = binds["start_scn"], binds["end_scn"]
        if not covered or covered[0][0] > lo + 1 or max(r[1] for r in covered) <= hi:
            raise oracledb.DatabaseError(f"ORA-01291: missing logfile for SCNs {lo}..{hi} (added {self.files_added})")
        self.session = (lo, hi)
        self.sessions.append(self.session)
        return None, []

    def _end(self, binds: dict[str, Any]) -> Any:
        self.session = None
        self.files_added = []
        return None, []

    def _add(self, binds: dict[str, Any]) -> Any:
        self.files_added.append(binds["file_name"])
        self.files_log.append(binds["file_name"])
        return None, []

    def _archived(self, binds: dict[str, Any]) -> Any:
        """V$ARCHIVED_LOG: NEXT_CHANGE# > :start_scn (and FIRST_TIME >= SYSDATE - :archive_hours / 24)."""
        logs = self.archived_logs or [("/arch/1_7.arc", self.oldest_log_scn, self.archived_next_change, 7, None)]
        hours = binds.get("archive_hours")
        rows = [(name, first, nxt, 1, seq) for name, first, nxt, seq, first_time in logs
                if nxt > binds["start_scn"] and (hours is None or first_time >= self.now - dt.timedelta(hours=hours))]
        return LOG_COLUMNS, rows

    def _snapshot(self, match: re.Match[str]) -> Any:
        t = self.table(match.group(2), match.group(3))
        return describe(*[(col[0], N if col[1] == "NUMBER" else V) for col in t.columns]), t.rows

    def connect(self, config: Any = None) -> ReplayConnection:
        log_cols = LOG_COLUMNS
        handlers: dict[str, Handler] = {
            c.NLS_SETUP: self._none,
            "ALTER SESSION SET CONTAINER = CDB$ROOT": self._none,
            "ALTER SESSION SET CONTAINER = ORCLPDB1": self._none,
            c.SQL_CURRENT_SCN: self._scn,
            c.SQL_DATABASE: lambda b: (describe(("LOG_MODE", V), ("SUPPLEMENTAL_LOG_DATA_MIN", V),
                                                ("SUPPLEMENTAL_LOG_DATA_ALL", V)),
                                       [(self.log_mode, self.supplemental_min, "NO")]),
            c.SQL_ALL_COLUMN_LOG_GROUPS: lambda b: (describe(("OWNER", V), ("TABLE_NAME", V)),
                                                    [(t.owner, t.name) for t in self.tables if t.supplemental_all]),
            c.SQL_SESSION_PRIVS: lambda b: (describe(("PRIVILEGE", V)), [(p,) for p in self.privileges]),
            c.SQL_SESSION_ROLES: lambda b: (describe(("ROLE", V)), [(r,) for r in self.roles]),
            c.SQL_OPEN_TRANSACTIONS: lambda b: (describe(("XID", R), ("START_SCN", N)), self.open_transactions),
            c.SQL_TABLES: lambda b: (describe(("OWNER", V), ("TABLE_NAME", V)),
                                     [(t.owner, t.name) for t in self.tables]),
            c.SQL_COLUMNS: self._columns,
            c.SQL_KEYS: self._keys,
            c.SQL_ROW_ESTIMATE: lambda b: (describe(("NUM_ROWS", N)),
                                           [(len(self.table(b["owner"], b["table_name"]).rows),)]),
            SQL_DB_OFFSET: lambda b: (describe(("TZ", V)), [("+00:00",)]),
            s.SQL_ARCHIVED_LOGS: self._archived,
            s.SQL_RECENT_ARCHIVED_LOGS: self._archived,
            s.SQL_ONLINE_LOGS: lambda b: (log_cols, [("/redo/redo01.log", self.archived_next_change, 2**63 - 1, 1,
                                                      self.online_seq.pop(0) if len(self.online_seq) > 1
                                                      else self.online_seq[0])]),
            s.SQL_ADD_LOGFILE: self._add,
            s.SQL_START: self._start,
            s.SQL_END: self._end,
        }
        from lakecdc.capture.oracle.config import ORACLE_SYSTEM_SCHEMAS

        handlers[q.contents_query(ORACLE_SYSTEM_SCHEMAS)] = lambda b: self._contents(b, lob=False)
        handlers[q.contents_query(ORACLE_SYSTEM_SCHEMAS, lob_enabled=True)] = lambda b: self._contents(b, lob=True)
        for variant in self.contents_variants:
            handlers[variant] = lambda b: self._contents(b, lob=False)
        snapshot = re.compile(r'SELECT (.+) FROM "([^"]+)"\."([^"]+)" AS OF SCN (\d+)')
        lock = re.compile(r'LOCK TABLE "[^"]+"\."[^"]+" IN ROW SHARE MODE')
        conn = ReplayConnection(handlers)
        number = len(self.connections)
        conn.pattern_handlers = [(snapshot, _SnapshotHandler(self, conn)),
                                 (lock, lambda b: (self.lock_statements.append((number, conn.executed[-1][0])),
                                                   (None, []))[1])]
        self.connections.append(conn)
        return conn


class _SnapshotHandler:
    """Answers ``SELECT ... FROM "O"."T" AS OF SCN n`` with the table's recorded rows."""

    def __init__(self, db: RecordedOracle, conn: ReplayConnection) -> None:
        self.db = db
        self.conn = conn

    def __call__(self, binds: dict[str, Any]) -> Any:
        statement = self.conn.executed[-1][0]
        match = re.fullmatch(r'SELECT (.+) FROM "([^"]+)"\."([^"]+)" AS OF SCN (\d+)', statement)
        assert match is not None
        self.db.snapshot_statements.append(statement)
        return self.db._snapshot(match)


# ---- the seed's table (S2): DEBEZIUM.CUSTOMERS -------------------------------------------------
CUSTOMERS_COLUMNS = [
    ("ID", "NUMBER", 22, 9, 0, False),
    ("FIRST_NAME", "VARCHAR2", 255, None, None, False),
    ("LAST_NAME", "VARCHAR2", 255, None, None, False),
    ("EMAIL", "VARCHAR2", 255, None, None, False),
]


def customers(rows: list[tuple[Any, ...]] | None = None) -> Table:
    return Table("DEBEZIUM", "CUSTOMERS", CUSTOMERS_COLUMNS, ["ID"], rows or [])


def insert_sql(owner: str, table: str, values: dict[str, str | None]) -> str:
    cols = ",".join(f'"{k}"' for k in values)
    vals = ",".join("NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in values.values())
    return f'insert into "{owner}"."{table}"({cols}) values ({vals});'


def where(values: dict[str, str | None]) -> str:
    return " and ".join(f'"{k}" IS NULL' if v is None else f'"{k}" = ' + "'" + v.replace("'", "''") + "'"
                        for k, v in values.items())


def update_sql(owner: str, table: str, changed: dict[str, str | None], old: dict[str, str | None]) -> str:
    sets = ", ".join(f'"{k}" = ' + ("NULL" if v is None else "'" + v.replace("'", "''") + "'")
                     for k, v in changed.items())
    return f'update "{owner}"."{table}" set {sets} where {where(old)};'


def delete_sql(owner: str, table: str, old: dict[str, str | None]) -> str:
    return f'delete from "{owner}"."{table}" where {where(old)};'
