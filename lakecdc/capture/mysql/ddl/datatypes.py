"""MySQL data type names: aliases, JDBC type codes and Debezium type names.

Debezium's schema change events describe each column with ``jdbcType`` (``java.sql.Types``),
``typeName`` and ``typeExpression``; its MySQL parser resolves the same aliases listed here.
"""

from __future__ import annotations

# java.sql.Types codes used by Debezium's MySQL parser
JDBC_BIT = -7
JDBC_SMALLINT = 5
JDBC_INTEGER = 4
JDBC_BIGINT = -5
JDBC_FLOAT = 6
JDBC_REAL = 7
JDBC_DOUBLE = 8
JDBC_NUMERIC = 2
JDBC_DECIMAL = 3
JDBC_CHAR = 1
JDBC_VARCHAR = 12
JDBC_NCHAR = -15
JDBC_NVARCHAR = -9
JDBC_DATE = 91
JDBC_TIME = 92
JDBC_TIMESTAMP = 93
JDBC_TIMESTAMP_WITH_TIMEZONE = 2014
JDBC_BINARY = -2
JDBC_VARBINARY = -3
JDBC_BLOB = 2004
JDBC_BOOLEAN = 16
JDBC_OTHER = 1111

# alias -> canonical name (single-word aliases; multi-word ones are resolved by the parser)
TYPE_ALIASES: dict[str, str] = {
    "INTEGER": "INT",
    "INT1": "TINYINT",
    "INT2": "SMALLINT",
    "INT3": "MEDIUMINT",
    "MIDDLEINT": "MEDIUMINT",
    "INT4": "INT",
    "INT8": "BIGINT",
    "BOOL": "BOOLEAN",
    "DEC": "DECIMAL",
    "FIXED": "DECIMAL",
    "FLOAT4": "FLOAT",
    "FLOAT8": "DOUBLE",
    "CHARACTER": "CHAR",
    "NCHAR": "CHAR",
    "NVARCHAR": "VARCHAR",
    "VARCHARACTER": "VARCHAR",
    "GEOMCOLLECTION": "GEOMETRYCOLLECTION",
}

SPATIAL_TYPES = frozenset(
    {
        "GEOMETRY",
        "POINT",
        "LINESTRING",
        "POLYGON",
        "MULTIPOINT",
        "MULTILINESTRING",
        "MULTIPOLYGON",
        "GEOMETRYCOLLECTION",
    }
)

KNOWN_TYPES = frozenset(
    {
        "BIT", "BOOLEAN", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "SERIAL",
        "REAL", "FLOAT", "DOUBLE", "DECIMAL", "NUMERIC",
        "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT",
        "BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB",
        "DATE", "TIME", "DATETIME", "TIMESTAMP", "YEAR",
        "ENUM", "SET", "JSON",
        "INET4", "INET6", "UUID",
    }
) | SPATIAL_TYPES

_JDBC: dict[str, int] = {
    "BIT": JDBC_BIT,
    "BOOLEAN": JDBC_BOOLEAN,
    "TINYINT": JDBC_SMALLINT,
    "SMALLINT": JDBC_SMALLINT,
    "MEDIUMINT": JDBC_INTEGER,
    "INT": JDBC_INTEGER,
    "BIGINT": JDBC_BIGINT,
    "REAL": JDBC_REAL,
    "FLOAT": JDBC_FLOAT,
    "DOUBLE": JDBC_DOUBLE,
    "DECIMAL": JDBC_DECIMAL,
    "NUMERIC": JDBC_NUMERIC,
    "CHAR": JDBC_CHAR,
    "VARCHAR": JDBC_VARCHAR,
    "TINYTEXT": JDBC_VARCHAR,
    "TEXT": JDBC_VARCHAR,
    "MEDIUMTEXT": JDBC_VARCHAR,
    "LONGTEXT": JDBC_VARCHAR,
    "BINARY": JDBC_BINARY,
    "VARBINARY": JDBC_VARBINARY,
    "TINYBLOB": JDBC_BLOB,
    "BLOB": JDBC_BLOB,
    "MEDIUMBLOB": JDBC_BLOB,
    "LONGBLOB": JDBC_BLOB,
    "DATE": JDBC_DATE,
    "TIME": JDBC_TIME,
    "DATETIME": JDBC_TIMESTAMP,
    "TIMESTAMP": JDBC_TIMESTAMP_WITH_TIMEZONE,
    "YEAR": JDBC_INTEGER,
    "ENUM": JDBC_CHAR,
    "SET": JDBC_CHAR,
    "JSON": JDBC_OTHER,
    "INET4": JDBC_VARCHAR,
    "INET6": JDBC_VARCHAR,
    "UUID": JDBC_CHAR,
}


def jdbc_type(type_name: str) -> int:
    """The ``java.sql.Types`` code Debezium reports for a canonical MySQL type name."""
    if type_name in SPATIAL_TYPES:
        return JDBC_OTHER
    return _JDBC.get(type_name, JDBC_OTHER)


# types whose ( ... ) is a length/precision
FRACTIONAL_SECONDS_TYPES = frozenset({"TIME", "DATETIME", "TIMESTAMP"})
DEFAULT_LENGTHS: dict[str, tuple[int | None, int | None]] = {
    "DECIMAL": (10, 0),
    "NUMERIC": (10, 0),
}

# jdbcType by the type name as written, where it differs from the canonical type's
_WRITTEN_JDBC: dict[str, int] = {
    "NCHAR": JDBC_NCHAR,
    "NATIONAL CHAR": JDBC_NCHAR,
    "NATIONAL CHARACTER": JDBC_NCHAR,
    "NVARCHAR": JDBC_NVARCHAR,
    "NATIONAL VARCHAR": JDBC_NVARCHAR,
    "FLOAT": JDBC_FLOAT,
}


def jdbc_type_of_expression(type_expression: str, type_name: str) -> int:
    """jdbcType for a column: the written name decides first (NCHAR -> NCHAR, FLOAT(30) -> FLOAT)."""
    base = type_expression.replace(" UNSIGNED", "").replace(" ZEROFILL", "").replace(" BINARY", "")
    code = _WRITTEN_JDBC.get(base)
    return code if code is not None else jdbc_type(type_name)
