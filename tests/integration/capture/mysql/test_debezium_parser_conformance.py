"""Our DDL parser, type mapping and tableChanges against real Debezium 3.6.3 code (via JPype).

Each scenario is a list of DDL statements run through both parsers; afterwards every table must
have the same ``tableChanges`` entry and the same key and value Connect schemas.
"""

from __future__ import annotations

import pytest
from debezium_oracle import DebeziumMySqlOracle

from lakecdc.capture.mysql.ddl.model import TableId
from lakecdc.capture.mysql.ddl.parser import DdlParser, TableChange
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.table_changes import table_change_json
from lakecdc.capture.mysql.table_schema import build_table_schema
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.events.topics import TopicNamer

pytestmark = pytest.mark.conformance

_REASON = DebeziumMySqlOracle.available()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

ALL_TYPES = """CREATE TABLE all_types (
  id INT(11) NOT NULL AUTO_INCREMENT,
  b1 BIT(1), b10 BIT(10) DEFAULT b'101', bo BOOLEAN NOT NULL DEFAULT TRUE, bo2 BOOL,
  ti TINYINT DEFAULT -1, ti1 TINYINT(1) DEFAULT 1, tiu TINYINT UNSIGNED, si SMALLINT(6), siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INTEGER DEFAULT 42, iu INT(10) UNSIGNED NOT NULL DEFAULT 0,
  bi BIGINT(20), biu BIGINT UNSIGNED, bz BIGINT(20) UNSIGNED ZEROFILL,
  r REAL, f FLOAT DEFAULT 1.5, f10 FLOAT(10), f30 FLOAT(30), f72 FLOAT(7,2), d DOUBLE, dp DOUBLE PRECISION,
  de DECIMAL(10,2) DEFAULT '12.34', de0 DECIMAL, nu NUMERIC(5,3), dec2 DEC(4,1),
  c CHAR(3) DEFAULT 'ab', c0 CHAR, vc VARCHAR(255) NOT NULL DEFAULT '', nv NVARCHAR(10), nc NATIONAL CHAR(2),
  cb CHAR(5) BINARY, cbin CHAR(4) CHARACTER SET binary,
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  bn BINARY(4), vb VARBINARY(16), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  j JSON, e ENUM('S','M','L') NOT NULL DEFAULT 'M', s SET('a','b','c') DEFAULT 'a,c',
  y YEAR, y4 YEAR(4) DEFAULT 2000, dt DATE DEFAULT '2020-01-02',
  tm TIME, tm3 TIME(3), tm6 TIME(6) DEFAULT '01:02:03.5',
  dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6),
  ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, ts3 TIMESTAMP(3) NULL,
  ts6 TIMESTAMP(6) NULL DEFAULT '2020-01-01 00:00:00.000001',
  g GEOMETRY, p POINT, ls LINESTRING, pg POLYGON, mp MULTIPOINT, mls MULTILINESTRING, mpg MULTIPOLYGON,
  gc GEOMETRYCOLLECTION,
  gen INT GENERATED ALWAYS AS (i + 1) VIRTUAL, cmt INT COMMENT 'a comment',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=latin1 COMMENT='every type'"""

SCENARIOS = {
    "all_types": ([ALL_TYPES], [("inventory", "all_types")]),
    "seed_customers_alter": (
        [
            "CREATE TABLE customers (id INT(11) NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name VARCHAR(255) NOT NULL,"
            " last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE KEY) DEFAULT CHARSET=latin1",
            "ALTER TABLE customers ADD COLUMN middle_name VARCHAR(2000)",
        ],
        [("inventory", "customers")],
    ),
    "alter_sequence": (
        [
            "CREATE TABLE t (a INT NOT NULL, b VARCHAR(10), c INT, d DATETIME(6)) CHARSET utf8mb4",
            "ALTER TABLE t ADD PRIMARY KEY (a), ADD COLUMN e INT DEFAULT 7 FIRST",
            "ALTER TABLE t MODIFY b VARCHAR(20) NOT NULL DEFAULT 'x' AFTER d, CHANGE c c2 BIGINT UNSIGNED",
            "ALTER TABLE t DROP COLUMN d, RENAME COLUMN e TO e2",
            "ALTER TABLE t ALTER COLUMN e2 SET DEFAULT 9",
            "ALTER TABLE t CONVERT TO CHARACTER SET latin1",
        ],
        [("inventory", "t")],
    ),
    "unique_key_stands_in_for_pk": (
        ["CREATE TABLE nopk (a INT NOT NULL, b INT, UNIQUE KEY uk (a))", "CREATE TABLE nokey (a INT, b INT)"],
        [("inventory", "nopk"), ("inventory", "nokey")],
    ),
    "composite_pk_and_like": (
        [
            "CREATE TABLE o (tenant INT, id BIGINT, v TEXT, PRIMARY KEY (tenant, id))",
            "CREATE TABLE o2 LIKE o",
            "RENAME TABLE o2 TO o3",
        ],
        [("inventory", "o"), ("inventory", "o3")],
    ),
    "mariadb_show_create": (
        [
            "CREATE TABLE `m` (\n  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
            "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
            "  `s` set('x','y') NOT NULL DEFAULT '',\n  `d` datetime(6) DEFAULT current_timestamp(6),\n"
            "  `t` timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),\n"
            "  `n` int(11) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n"
            ") ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
        ],
        [("inventory", "m")],
    ),
}


@pytest.fixture(scope="module")
def oracle() -> DebeziumMySqlOracle:
    return DebeziumMySqlOracle.get()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_table_changes_and_schemas_match_debezium(oracle, scenario):
    statements, checked = SCENARIOS[scenario]
    oracle.reset()
    tables = Tables()
    parser = DdlParser(tables)
    for ddl in statements:
        oracle.parse(ddl, "inventory")
        parser.parse(ddl, "inventory")
    namer = TopicNamer("dbz", "mysql")
    for db, name in checked:
        ours = tables.get(TableId(db, name))
        assert ours is not None, f"{db}.{name} missing from our schema"
        expected_change = oracle.table_change_json(db, name, "CREATE")
        actual_change = table_change_json(TableChange("CREATE", ours))
        for exp_col, act_col in zip(expected_change["table"]["columns"], actual_change["table"]["columns"]):
            assert act_col == exp_col, f"column {exp_col['name']} of {db}.{name}"
        assert actual_change == expected_change
        schema = build_table_schema(ours, namer, TypeModes())
        expected_value = oracle.value_schema_json("dbz", db, name)
        actual_value = schema.value_schema.to_json()
        for exp_f, act_f in zip(expected_value["fields"], actual_value["fields"]):
            assert act_f == exp_f, f"field {exp_f['field']} of {db}.{name}"
        assert actual_value == expected_value
        expected_key = oracle.key_schema_json("dbz", db, name)
        assert (schema.key_schema.to_json() if schema.key_schema else None) == expected_key


@pytest.mark.parametrize(
    "modes, ours",
    [
        ({"decimal": "DOUBLE"}, TypeModes(decimal_handling="double")),
        ({"decimal": "STRING"}, TypeModes(decimal_handling="string")),
        ({"bigint": "PRECISE"}, TypeModes(bigint_unsigned_handling="precise")),
        ({"time": "CONNECT"}, TypeModes(time_precision="connect")),
        ({"binary": "BASE64"}, TypeModes(binary_handling="base64")),
        ({"binary": "HEX"}, TypeModes(binary_handling="hex")),
    ],
)
def test_handling_modes_match_debezium(modes, ours):
    oracle = DebeziumMySqlOracle.get(**modes)
    try:
        oracle.reset()
        tables = Tables()
        oracle.parse(ALL_TYPES, "db")
        DdlParser(tables).parse(ALL_TYPES, "db")
        schema = build_table_schema(tables.get(TableId("db", "all_types")), TopicNamer("dbz", "mysql"), ours)
        expected = oracle.value_schema_json("dbz", "db", "all_types")
        for exp_f, act_f in zip(expected["fields"], schema.value_schema.to_json()["fields"]):
            assert act_f == exp_f, f"field {exp_f['field']} with {modes}"
    finally:
        DebeziumMySqlOracle.get()
