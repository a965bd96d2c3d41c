"""Oracle column types in three forms: as DDL writes them, as ALL_TAB_COLUMNS describes them (the
``ColumnInfo`` the type mapping reads), and as Debezium's Oracle DDL parser describes them in
``tableChanges`` (checked against Debezium 3.6.3's ``OracleDdlParser`` in
tests/unit/capture/oracle/test_oracle_ddl_vs_debezium.py)::

    DDL                              DATA_TYPE (precision, scale)        tableChanges typeName / jdbcType / length,scale
    NUMBER(9)                        NUMBER (9, 0)                       NUMBER / 2 / 9, 0
    NUMBER                           NUMBER (-, -)                       NUMBER / 2 / 38, -
    INTEGER, INT, SMALLINT           NUMBER (-, 0)                       NUMBER / 2 / 38, 0
    DECIMAL(10,2), NUMERIC(8)        NUMBER (10, 2), (8, 0)              NUMBER / 2 / 10, 2
    FLOAT(126)                       FLOAT (126, -)                      FLOAT / 6 / 126, -
    VARCHAR2(20 CHAR)                VARCHAR2, length 20                 VARCHAR2 / 12 / 20, -
    TIMESTAMP(3) WITH TIME ZONE      TIMESTAMP(3) WITH TIME ZONE (-, 3)  TIMESTAMP WITH TIME ZONE / -101 / 3, -
    INTERVAL DAY(3) TO SECOND(6)     INTERVAL DAY(3) TO SECOND(6) (3, 6) INTERVAL DAY TO SECOND / -104 / 3, 6
"""

from __future__ import annotations

import re

from lakecdc.capture.oracle.connection import ColumnInfo

#: java.sql.Types / oracle.jdbc.OracleTypes codes Debezium writes as ``jdbcType``
JDBC_TYPES = {
    "NUMBER": 2, "FLOAT": 6, "BINARY_FLOAT": 100, "BINARY_DOUBLE": 101, "VARCHAR2": 12, "VARCHAR": 12,
    "CHAR": 1, "NCHAR": -15, "NVARCHAR2": -9, "DATE": 93, "TIMESTAMP": 93, "TIMESTAMP WITH TIME ZONE": -101,
    "TIMESTAMP WITH LOCAL TIME ZONE": -102, "INTERVAL YEAR TO MONTH": -103, "INTERVAL DAY TO SECOND": -104,
    "RAW": -2, "BLOB": 2004, "CLOB": 2005, "NCLOB": 2011, "LONG": -1, "LONG RAW": -4, "ROWID": -8,
    "UROWID": -8, "XMLTYPE": 2009,
}
OTHER = 1111
_INTEGER_ALIASES = frozenset({"INTEGER", "INT", "SMALLINT"})
_DECIMAL_ALIASES = frozenset({"DECIMAL", "DEC", "NUMERIC"})
_CHARACTER = frozenset({"VARCHAR2", "VARCHAR", "CHAR", "NCHAR", "NVARCHAR2", "CHARACTER"})
_LOBS = frozenset({"BLOB", "CLOB", "NCLOB", "BFILE"})
_TIMESTAMP = re.compile(r"TIMESTAMP(?:\((\d)\))?( WITH (LOCAL )?TIME ZONE)?")
_INTERVAL = re.compile(r"INTERVAL (YEAR|DAY)(?:\((\d)\))? TO (MONTH|SECOND)(?:\((\d)\))?")


def column_info(name: str, base: str, args: list[int | None], suffix: str, position: int) -> ColumnInfo:
    """The dictionary description of ``name base(args) suffix`` (suffix: WITH [LOCAL] TIME ZONE,
    or the ``TO MONTH``/``TO SECOND(s)`` of an interval, already normalised by the parser)."""
    p = args[0] if args else None
    s = args[1] if len(args) > 1 else None
    if base in _INTEGER_ALIASES:
        return ColumnInfo(name, "NUMBER", 22, None, 0, True, None, position)
    if base in _DECIMAL_ALIASES or base == "NUMBER":
        scale = s if s is not None else (0 if p is not None or base != "NUMBER" else None)
        return ColumnInfo(name, "NUMBER", 22, p, scale, True, None, position)
    if base == "FLOAT":
        return ColumnInfo(name, "FLOAT", 22, p if p is not None else 126, None, True, None, position)
    if base == "REAL":
        return ColumnInfo(name, "FLOAT", 22, 63, None, True, None, position)
    if base == "DOUBLE PRECISION":
        return ColumnInfo(name, "FLOAT", 22, 126, None, True, None, position)
    if base in _CHARACTER:
        data_type = {"VARCHAR": "VARCHAR2", "CHARACTER": "CHAR"}.get(base, base)
        length = p if p is not None else 1
        return ColumnInfo(name, data_type, length, None, None, True, None, position, char_length=length)
    if base == "TIMESTAMP":
        fraction = 6 if p is None else p
        return ColumnInfo(name, f"TIMESTAMP({fraction}){suffix}", 11, None, fraction, True, None, position)
    if base == "INTERVAL YEAR":
        lead = 2 if p is None else p
        return ColumnInfo(name, f"INTERVAL YEAR({lead}) TO MONTH", 5, lead, 0, True, None, position)
    if base == "INTERVAL DAY":
        lead = 2 if p is None else p
        fraction = 6 if s is None else s
        return ColumnInfo(name, f"INTERVAL DAY({lead}) TO SECOND({fraction})", 11, lead, fraction, True, None,
                          position)
    if base == "DATE":
        return ColumnInfo(name, "DATE", 7, None, None, True, None, position)
    if base == "RAW":
        return ColumnInfo(name, "RAW", p, None, None, True, None, position)
    if base in _LOBS:
        return ColumnInfo(name, base, 4000, None, None, True, None, position)
    return ColumnInfo(name, base, p, None, None, True, None, position)


def debezium_type(col: ColumnInfo) -> tuple[str, int, int | None, int | None]:
    """(typeName, jdbcType, length, scale) as Debezium's Oracle DDL parser describes the column."""
    t = col.data_type.upper()
    m = _TIMESTAMP.fullmatch(t)
    if m:
        name = "TIMESTAMP" + (m.group(2) or "")
        return name, JDBC_TYPES[name], col.scale if col.scale is not None else 6, None
    m = _INTERVAL.fullmatch(t)
    if m:
        name = f"INTERVAL {m.group(1)} TO {m.group(3)}"
        if m.group(1) == "YEAR":
            return name, JDBC_TYPES[name], col.precision, None
        return name, JDBC_TYPES[name], col.precision, col.scale
    jdbc = JDBC_TYPES.get(t, OTHER)
    if t == "NUMBER":
        return t, jdbc, col.precision if col.precision is not None else 38, col.scale
    if t == "FLOAT":
        return t, jdbc, col.precision, None
    if t in _CHARACTER:
        return t, jdbc, col.char_length or col.length, None
    if t == "RAW":
        return t, jdbc, col.length, None
    return t, jdbc, -1, None


def ddl_type(col: ColumnInfo) -> str:
    """The column's type as DDL (what a snapshot's CREATE TABLE record says)."""
    t = col.data_type.upper()
    if t == "NUMBER":
        if col.precision is None:
            return "NUMBER" if col.scale is None else "INTEGER" if col.scale == 0 else f"NUMBER(*,{col.scale})"
        return f"NUMBER({col.precision},{col.scale or 0})"
    if t == "FLOAT":
        return f"FLOAT({col.precision if col.precision is not None else 126})"
    if t in _CHARACTER:
        size = col.char_length or col.length
        return f"{t}({size} CHAR)" if t in ("VARCHAR2", "CHAR") else f"{t}({size})"
    if t == "RAW":
        return f"RAW({col.length})"
    return t  # DATE, TIMESTAMP(p) [WITH [LOCAL] TIME ZONE], INTERVAL ..., LOBs, BINARY_FLOAT/DOUBLE
