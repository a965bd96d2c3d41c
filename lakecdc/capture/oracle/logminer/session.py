"""The LogMiner session for one mining window, online catalog strategy.

Per window ``(start_scn, end_scn]`` (Debezium's sequence for ``log.mining.strategy=online_catalog``)::

    1. the redo logs covering the window: online logs (V$LOG, V$LOGFILE) and archived logs
       (V$ARCHIVED_LOG) whose NEXT_CHANGE# is after start_scn (with ``archive.log.hours``, only those
       begun in the last N hours); an online log wins over its archived copy (same thread and sequence)
    2. DBMS_LOGMNR.ADD_LOGFILE for each
    3. DBMS_LOGMNR.START_LOGMNR(STARTSCN, ENDSCN, DICT_FROM_ONLINE_CATALOG): table names and
       column names come from the current data dictionary. COMMITTED_DATA_ONLY is not used: the
       connector buffers each transaction itself and emits it at COMMIT (``transactions``)
    4. the V$LOGMNR_CONTENTS query (``query``)
    5. DBMS_LOGMNR.END_LOGMNR
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from lakecdc.capture.oracle.connection import OracleConnection
from lakecdc.errors import SourceTerminalError

log = logging.getLogger(__name__)

SQL_ONLINE_LOGS = (
    "SELECT MIN(F.MEMBER) AS FILE_NAME, L.FIRST_CHANGE# AS FIRST_CHANGE, L.NEXT_CHANGE# AS NEXT_CHANGE, "
    "L.THREAD# AS THREAD, L.SEQUENCE# AS SEQ FROM V$LOG L JOIN V$LOGFILE F ON F.GROUP# = L.GROUP# "
    "WHERE L.STATUS <> 'UNUSED' GROUP BY L.FIRST_CHANGE#, L.NEXT_CHANGE#, L.THREAD#, L.SEQUENCE#")
_ARCHIVED_LOGS = (
    "SELECT NAME AS FILE_NAME, FIRST_CHANGE# AS FIRST_CHANGE, NEXT_CHANGE# AS NEXT_CHANGE, "
    "THREAD# AS THREAD, SEQUENCE# AS SEQ FROM V$ARCHIVED_LOG WHERE NAME IS NOT NULL AND ARCHIVED = 'YES' "
    "AND STATUS = 'A' AND NEXT_CHANGE# > :start_scn")
SQL_ARCHIVED_LOGS = _ARCHIVED_LOGS + " ORDER BY SEQUENCE#"
#: ``archive.log.hours`` > 0 (Debezium's archive log query): only archive logs begun in the last N hours
SQL_RECENT_ARCHIVED_LOGS = _ARCHIVED_LOGS + " AND FIRST_TIME >= SYSDATE - :archive_hours / 24 ORDER BY SEQUENCE#"
SQL_ADD_LOGFILE = ("BEGIN SYS.DBMS_LOGMNR.ADD_LOGFILE(LOGFILENAME => :file_name, "
                   "OPTIONS => SYS.DBMS_LOGMNR.ADDFILE); END;")
SQL_START = (
    "BEGIN SYS.DBMS_LOGMNR.START_LOGMNR(STARTSCN => :start_scn, ENDSCN => :end_scn, "
    "OPTIONS => SYS.DBMS_LOGMNR.DICT_FROM_ONLINE_CATALOG); END;")
SQL_END = "BEGIN SYS.DBMS_LOGMNR.END_LOGMNR(); END;"


class LogsUnavailableError(SourceTerminalError):
    """The redo needed to resume (from the stored SCN) is no longer in the online or archived logs."""


@dataclass(frozen=True)
class LogFile:
    name: str
    first_change: int
    next_change: int
    thread: int
    sequence: int


def logs_for(conn: OracleConnection, start_scn: int, archive_only: bool = False,
             archive_hours: int = 0) -> list[LogFile]:
    """The log files that hold changes after ``start_scn``; raises when the oldest is too new.
    ``archive_hours`` (``archive.log.hours``, 0 = all) leaves out archive logs begun earlier."""
    found: dict[tuple[int, int], LogFile] = {}
    archived = (conn.query(SQL_RECENT_ARCHIVED_LOGS, {"start_scn": start_scn, "archive_hours": archive_hours})
                if archive_hours else conn.query(SQL_ARCHIVED_LOGS, {"start_scn": start_scn}))
    for r in archived:
        f = LogFile(r["FILE_NAME"], int(r["FIRST_CHANGE"]), int(r["NEXT_CHANGE"]), int(r["THREAD"]), int(r["SEQ"]))
        found[(f.thread, f.sequence)] = f
    if not archive_only:
        for r in conn.query(SQL_ONLINE_LOGS):
            f = LogFile(r["FILE_NAME"], int(r["FIRST_CHANGE"]), int(r["NEXT_CHANGE"]), int(r["THREAD"]), int(r["SEQ"]))
            if f.next_change > start_scn:
                found[(f.thread, f.sequence)] = f
    files = sorted(found.values(), key=lambda f: (f.thread, f.sequence))
    if not files:
        raise LogsUnavailableError(f"no online or archived redo log holds changes after SCN {start_scn}")
    for thread in {f.thread for f in files}:
        oldest = min(f.first_change for f in files if f.thread == thread)
        if oldest > start_scn + 1:
            raise LogsUnavailableError(
                f"redo thread {thread}: the oldest available log starts at SCN {oldest}, after the resume "
                f"SCN {start_scn}; the archived logs in between were removed (a new snapshot is needed)"
                + (f"; archive.log.hours={archive_hours} leaves out archive logs begun before the last "
                   f"{archive_hours} hours" if archive_hours else ""))
    return files


def resumable(conn: OracleConnection, start_scn: int, archive_hours: int = 0) -> bool:
    try:
        logs_for(conn, start_scn, archive_hours=archive_hours)
    except LogsUnavailableError as exc:
        log.warning("%s", exc)
        return False
    return True


def start_session(conn: OracleConnection, start_scn: int, end_scn: int, archive_only: bool = False,
                  archive_hours: int = 0, files: list[LogFile] | None = None) -> int:
    """Start mining ``(start_scn, end_scn]`` (from ``files``, else the logs ``logs_for`` finds); returns
    the window end actually used: with ``log.mining.archive.log.only.mode`` it stops where the newest
    archived log ends (the online logs are not read), which may be ``start_scn`` itself (nothing
    archived yet: no session)."""
    conn.use_root()
    if files is None:
        files = logs_for(conn, start_scn, archive_only, archive_hours)
    if archive_only:
        end_scn = min(end_scn, max(f.next_change for f in files) - 1)
        if end_scn <= start_scn:
            return start_scn
    for f in files:
        conn.execute(SQL_ADD_LOGFILE, {"file_name": f.name})
    conn.execute(SQL_START, {"start_scn": start_scn, "end_scn": end_scn})
    return end_scn


def end_session(conn: OracleConnection) -> None:
    conn.execute(SQL_END)
