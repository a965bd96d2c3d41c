"""The ``V$LOGMNR_CONTENTS`` query (after Debezium's ``LogMinerQueryBuilder``).

Rows of a mining window ``SCN > :start_scn AND SCN <= :end_scn``: transaction control (6 START,
7 COMMIT, 36 ROLLBACK) for every transaction, and DML (1 INSERT, 2 DELETE, 3 UPDATE) plus DDL (5)
only for schemas that may hold captured tables. SYS and SYSTEM changes are never captured (as Debezium's Oracle
documentation says);
``log.mining.username.include.list/exclude.list`` narrow further in Python. Table filtering is
finished in Python with the connector's include/exclude lists; ``log.mining.query.filter.mode``
(Debezium's ``LogMinerQueryBuilder``) also pushes the schema and table lists into the query so that
LogMiner returns fewer rows: ``none`` (the default) does not, ``in`` as literal names
(``SEG_OWNER IN ('A')``, ``SEG_OWNER || '.' || TABLE_NAME IN ('A.T')``, ``NOT IN`` for the exclude
lists), ``regex`` as ``REGEXP_LIKE(..., '^pattern$', 'i')``. The filter narrows the DML (and LOB)
rows only: DDL of every table still reaches the schema history, as in Debezium when not only the
captured tables' DDL is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakecdc.config.filters import split_list

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


_OWNER = "SEG_OWNER"
_TABLE = "SEG_OWNER || '.' || TABLE_NAME"


def contents_query(excluded_schemas: frozenset[str], lob_enabled: bool = False, dml_filter: str = "") -> str:
    """The query, with binds ``:start_scn`` and ``:end_scn``; rows come in SCN order. With
    ``lob.enabled`` the LOB locator and LOB write rows (9, 10) are read too; ``dml_filter`` (from
    ``filter_predicate``) narrows the DML and LOB rows."""
    excluded = ", ".join(f"'{s}'" for s in sorted(excluded_schemas))
    lob = f", {OP_SELECT_LOB_LOCATOR}, {OP_LOB_WRITE}" if lob_enabled else ""
    changes = f"OPERATION_CODE IN ({OP_INSERT}, {OP_DELETE}, {OP_UPDATE}, {OP_DDL}{lob})"
    if dml_filter:
        changes = (f"((OPERATION_CODE IN ({OP_INSERT}, {OP_DELETE}, {OP_UPDATE}{lob}) AND {dml_filter}) OR "
                   f"OPERATION_CODE = {OP_DDL})")
    return (
        f"SELECT {COLUMNS} FROM V$LOGMNR_CONTENTS WHERE SCN > :start_scn AND SCN <= :end_scn AND "
        f"(OPERATION_CODE IN ({OP_START}, {OP_COMMIT}, {OP_ROLLBACK}) OR "
        f"({changes} AND SEG_OWNER NOT IN ({excluded}) AND USERNAME NOT IN ('SYS', 'SYSTEM')))"
    )


def filter_predicate(mode: str, schema_include: str | None, schema_exclude: str | None,
                     table_include: str | None, table_exclude: str | None) -> str:
    """``log.mining.query.filter.mode``'s predicate over the schema and table lists ('' for ``none``);
    an include list wins over its exclude list, as in the connector's own filters."""
    if mode == "none":
        return ""
    parts = []
    for column, include, exclude in ((_OWNER, schema_include, schema_exclude), (_TABLE, table_include, table_exclude)):
        names = split_list(include) or split_list(exclude)
        if names:
            parts.append(_in_list(column, names, bool(split_list(include))) if mode == "in"
                         else _regex_list(column, names, bool(split_list(include))))
    return " AND ".join(parts)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_list(column: str, names: Sequence[str], include: bool) -> str:
    """``in`` takes the lists as names, not expressions: an escaped dot (``A\\.T``) is a dot."""
    values = ", ".join(_literal(n.replace("\\.", ".").upper()) for n in names)
    return f"{column} {'IN' if include else 'NOT IN'} ({values})"


def _regex_list(column: str, patterns: Sequence[str], include: bool) -> str:
    """Each expression anchored at both ends, as the connector's filters match the whole name."""
    tests = [f"{'' if include else 'NOT '}REGEXP_LIKE({column}, {_literal('^' + p.removeprefix('^').removesuffix('$') + '$')}, 'i')"
             for p in patterns]
    return "(" + (" OR " if include else " AND ").join(tests) + ")"
