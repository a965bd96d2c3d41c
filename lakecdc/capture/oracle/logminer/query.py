"""The ``V$LOGMNR_CONTENTS`` query (after Debezium's ``LogMinerQueryBuilder``).

Rows of a mining window ``SCN > :start_scn AND SCN <= :end_scn``: transaction control (6 START,
7 COMMIT, 36 ROLLBACK) for every transaction, and DML (1 INSERT, 2 DELETE, 3 UPDATE) plus DDL (5)
only for schemas that may hold captured tables. SYS and SYSTEM changes are never captured (as Debezium's Oracle
documentation says);
``log.mining.username.include.list/exclude.list`` narrow further in Python. Table filtering is
finished in Python with the connector's include/exclude lists (Debezium's default query filter mode
``none`` works the same way).
"""

from __future__ import annotations

OP_INSERT = 1
OP_DELETE = 2
OP_UPDATE = 3
OP_DDL = 5
OP_START = 6
OP_SELECT_LOB_LOCATOR = 9
OP_LOB_WRITE = 10
OP_COMMIT = 7
OP_ROLLBACK = 36

COLUMNS = (
    "SCN, SQL_REDO, OPERATION_CODE, TIMESTAMP, XID, CSF, TABLE_NAME, SEG_OWNER, OPERATION, "
    "USERNAME, ROW_ID, ROLLBACK, RS_ID, SSN, THREAD# AS THREAD, START_SCN, COMMIT_SCN, "
    "START_TIMESTAMP, COMMIT_TIMESTAMP, INFO, STATUS"
)


def contents_query(excluded_schemas: frozenset[str], lob_enabled: bool = False) -> str:
    """The query, with binds ``:start_scn`` and ``:end_scn``; rows come in SCN order. With
    ``lob.enabled`` the LOB locator and LOB write rows (9, 10) are read too."""
    excluded = ", ".join(f"'{s}'" for s in sorted(excluded_schemas))
    lob = f", {OP_SELECT_LOB_LOCATOR}, {OP_LOB_WRITE}" if lob_enabled else ""
    return (
        f"SELECT {COLUMNS} FROM V$LOGMNR_CONTENTS WHERE SCN > :start_scn AND SCN <= :end_scn AND "
        f"(OPERATION_CODE IN ({OP_START}, {OP_COMMIT}, {OP_ROLLBACK}) OR "
        f"(OPERATION_CODE IN ({OP_INSERT}, {OP_DELETE}, {OP_UPDATE}, {OP_DDL}{lob}) AND "
        f"SEG_OWNER NOT IN ({excluded}) AND USERNAME NOT IN ('SYS', 'SYSTEM')))"
    )
