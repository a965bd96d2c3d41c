"""The ``V$LOGMNR_CONTENTS`` query (after Debezium's ``LogMinerQueryBuilder``).

Rows of a mining window ``SCN > :start_scn AND SCN <= :end_scn``: transaction control (6 START,
7 COMMIT, 36 ROLLBACK) for every transaction, and DML (1 INSERT, 2 DELETE, 3 UPDATE) plus DDL (5)
only for schemas that may hold captured tables. SYS and SYSTEM changes are never captured (as Debezium's Oracle
documentation says);
``log.mining.username.include.list/exclude.list`` narrow further in Python. Table filtering is
finished in Python with the connector's include/exclude lists; ``log.mining.query.filter.mode``
(Debezium's ``LogMinerQueryBuilder``) also pushes the schema and table lists into the query so that
LogMiner returns fewer rows: ``none`` (the default) does not, ``in`` as literal names
(``UPPER(SEG_OWNER) IN ('A')``, ``UPPER(SEG_OWNER || '.' || TABLE_NAME) IN ('A.T')``, ``NOT IN`` for
the exclude lists), ``regex`` as ``REGEXP_LIKE(..., '^pattern$', 'i')``; both also push
``log.mining.username.include/exclude.list`` as ``UPPER(USERNAME) IN``. The filter narrows the DML (and LOB)
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


def filter_predicate(mode: str, schemas: tuple[str | None, str | None], tables: tuple[str | None, str | None],
                     users: tuple[str | None, str | None] = (None, None), signal_table: str | None = None) -> str:
    """``log.mining.query.filter.mode``'s predicate ('' for ``none``) over the (include, exclude) lists
    of schemas, tables and (``log.mining.username.*``, always as names) users, in the shapes of
    Debezium's ``AbstractLogMinerQueryBuilder``: rows LogMiner could not name (NULL, ``UNKNOWN``) and
    the signal table's rows always pass. The connector's own filters still decide; this only keeps
    rows it would drop from leaving the database."""
    if mode == "none":
        return ""
    parts = []
    include, exclude = (split_list(v) for v in schemas)
    if include or exclude:
        if mode == "in":
            parts.append(f"({_OWNER} IS NULL OR {_in_list(_OWNER, ['UNKNOWN', *include], exclude)})")
        else:
            parts.append(f"({_OWNER} IS NULL OR {_OWNER} = 'UNKNOWN' OR {_regex_list(_OWNER, include, exclude)})")
    include, exclude = (split_list(v) for v in tables)
    if include or exclude:
        signal = f"UPPER({_TABLE}) = {_literal(signal_table.upper())} OR " if signal_table else ""
        if mode == "in":
            names = [[n.replace("\\", "") for n in values] for values in (include, exclude)]
            parts.append(f"(TABLE_NAME IS NULL OR {signal}{_in_list(_TABLE, *names)})")
        else:
            parts.append(f"(TABLE_NAME IS NULL OR {signal}{_regex_list(_TABLE, include, exclude)})")
    include, exclude = (split_list(v) for v in users)
    if include or exclude:
        parts.append(_in_list("USERNAME", ["UNKNOWN", *include] if include else [], exclude))
    return " AND ".join(parts)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_list(column: str, include: Sequence[str], exclude: Sequence[str]) -> str:
    """``in``: the lists as names, compared case-insensitively; an exclude list wins (Debezium's
    configuration allows only one of the two)."""
    names, negated = (exclude, " NOT") if exclude else (include, "")
    return f"UPPER({column}){negated} IN ({', '.join(_literal(n.strip().upper()) for n in names)})"


def _regex_list(column: str, include: Sequence[str], exclude: Sequence[str]) -> str:
    """``regex``: each expression anchored at both ends, as the connector's filters match whole names."""
    patterns, negated, junction = (exclude, "NOT ", " AND ") if exclude else (include, "", " OR ")
    anchored = (("" if p.startswith("^") else "^") + p + ("" if p.endswith("$") else "$") for p in patterns)
    return "(" + junction.join(f"{negated}REGEXP_LIKE({column}, {_literal(p)}, 'i')" for p in anchored) + ")"
