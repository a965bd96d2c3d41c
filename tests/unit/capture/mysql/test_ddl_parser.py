"""DDL parser: statements of the MySQL/MariaDB dialect applied to the in-memory schema."""

from __future__ import annotations

import pytest

from lakecdc.capture.mysql.ddl.model import DefaultKind, TableId
from lakecdc.capture.mysql.ddl.parser import DdlParseError, DdlParser
from lakecdc.capture.mysql.ddl.tables import Tables


@pytest.fixture
def tables() -> Tables:
    return Tables()


@pytest.fixture
def parser(tables: Tables) -> DdlParser:
    return DdlParser(tables)


def table(tables: Tables, name: str, db: str = "inventory"):
    t = tables.get(TableId(db, name))
    assert t is not None, f"{db}.{name} not known"
    return t


def names(t) -> list[str]:
    return [c.name for c in t.columns]


def test_create_table_columns_keys_defaults_charset(parser, tables):
    parser.parse(
        """CREATE TABLE `customers` (
          `id` int(11) NOT NULL AUTO_INCREMENT,
          `first_name` varchar(255) NOT NULL,
          `email` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT 'x@y',
          `score` decimal(8,3) unsigned zerofill DEFAULT NULL COMMENT 'points',
          `created` timestamp(3) NOT NULL DEFAULT current_timestamp(3) ON UPDATE current_timestamp(3),
          `full_name` varchar(511) GENERATED ALWAYS AS (concat(`first_name`,' ')) VIRTUAL,
          PRIMARY KEY (`id`),
          UNIQUE KEY `email` (`email`),
          KEY `name_idx` (`first_name`(10)),
          CONSTRAINT `fk` FOREIGN KEY (`id`) REFERENCES `other` (`id`) ON DELETE CASCADE
        ) ENGINE=InnoDB AUTO_INCREMENT=1005 DEFAULT CHARSET=latin1 COMMENT='people'""",
        "inventory",
    )
    t = table(tables, "customers")
    assert names(t) == ["id", "first_name", "email", "score", "created", "full_name"]
    assert t.primary_key == ("id",)
    assert t.unique_keys == (("email", ("email",)),)
    assert t.default_charset == "latin1"
    assert t.comment == "people"
    id_, first, email, score, created, full = t.columns
    assert (id_.type_name, id_.length, id_.optional, id_.auto_increment) == ("INT", 11, False, True)
    assert (first.charset, first.length) == ("latin1", 255)
    assert (email.charset, email.collation) == ("utf8mb4", "utf8mb4_bin")
    assert email.default.kind is DefaultKind.LITERAL and email.default.text == "x@y"
    assert (score.length, score.scale, score.unsigned, score.zerofill, score.comment) == (8, 3, True, True, "points")
    assert score.default.kind is DefaultKind.NULL
    assert (created.type_name, created.length, created.default.kind) == ("TIMESTAMP", 3, DefaultKind.CURRENT_TIMESTAMP)
    assert full.generated


def test_multiple_statements_and_products_example_from_seed(parser, tables):
    results = parser.parse(
        "CREATE TABLE products ( id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(255) NOT NULL, "
        "description VARCHAR(512), weight FLOAT ); ALTER TABLE products AUTO_INCREMENT = 101;",
        "inventory",
    )
    assert [r.kind for r in results] == ["CREATE_TABLE", "ALTER_TABLE"]
    assert results[0].text.startswith("CREATE TABLE products (") and results[0].text.endswith("weight FLOAT )")
    assert results[1].text == "ALTER TABLE products AUTO_INCREMENT = 101"
    t = table(tables, "products")
    assert t.primary_key == ("id",)
    assert [c.type_name for c in t.columns] == ["INT", "VARCHAR", "VARCHAR", "FLOAT"]


def test_create_table_like_copies_structure(parser, tables):
    parser.parse("CREATE TABLE a (id INT PRIMARY KEY, v TEXT)", "db")
    [r] = parser.parse("CREATE TABLE IF NOT EXISTS b LIKE a", "db")
    assert r.kind == "CREATE_TABLE"
    b = table(tables, "b", "db")
    assert names(b) == ["id", "v"] and b.primary_key == ("id",) and b.id == TableId("db", "b")
    parser.parse("CREATE TABLE c (LIKE db.a)", "other")
    assert names(table(tables, "c", "other")) == ["id", "v"]


def test_alter_add_drop_modify_change_rename_column(parser, tables):
    parser.parse("CREATE TABLE t (id INT NOT NULL, a INT, b INT, PRIMARY KEY (id))", "db")
    parser.parse("ALTER TABLE t ADD COLUMN c VARCHAR(20) NOT NULL DEFAULT 'z' AFTER a, ADD d INT FIRST", "db")
    assert names(table(tables, "t", "db")) == ["d", "id", "a", "c", "b"]
    parser.parse("ALTER TABLE t DROP COLUMN d, DROP b", "db")
    assert names(table(tables, "t", "db")) == ["id", "a", "c"]
    parser.parse("ALTER TABLE t MODIFY a BIGINT UNSIGNED NOT NULL", "db")
    a = table(tables, "t", "db").column("a")
    assert (a.type_name, a.unsigned, a.optional) == ("BIGINT", True, False)
    parser.parse("ALTER TABLE t CHANGE COLUMN a a2 DECIMAL(9,2) NULL FIRST", "db")
    t = table(tables, "t", "db")
    assert names(t) == ["a2", "id", "c"] and t.column("a2").scale == 2
    parser.parse("ALTER TABLE t RENAME COLUMN id TO ident", "db")
    t = table(tables, "t", "db")
    assert t.primary_key == ("ident",) and names(t) == ["a2", "ident", "c"]
    parser.parse("ALTER TABLE t ADD COLUMN (x INT, y INT)", "db")
    assert names(table(tables, "t", "db"))[-2:] == ["x", "y"]
    parser.parse("ALTER TABLE t ADD COLUMN IF NOT EXISTS x INT, DROP COLUMN IF EXISTS nope", "db")
    assert names(table(tables, "t", "db")).count("x") == 1


def test_alter_column_set_and_drop_default(parser, tables):
    parser.parse("CREATE TABLE t (id INT, v INT DEFAULT 1)", "db")
    parser.parse("ALTER TABLE t ALTER COLUMN v SET DEFAULT 7", "db")
    assert table(tables, "t", "db").column("v").default.text == "7"
    parser.parse("ALTER TABLE t ALTER v DROP DEFAULT", "db")
    assert table(tables, "t", "db").column("v").default.kind is DefaultKind.NONE


def test_primary_key_add_drop_and_unique_key_fallback(parser, tables):
    parser.parse("CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT, UNIQUE KEY uk (b))", "db")
    t = table(tables, "t", "db")
    assert t.primary_key == () and t.key_columns == ("b",)
    parser.parse("ALTER TABLE t ADD PRIMARY KEY (a, c)", "db")
    t = table(tables, "t", "db")
    assert t.primary_key == ("a", "c") and not t.column("c").optional
    parser.parse("ALTER TABLE t DROP PRIMARY KEY, DROP INDEX uk", "db")
    t = table(tables, "t", "db")
    assert t.primary_key == () and t.key_columns == ()
    parser.parse("CREATE UNIQUE INDEX u2 ON t (a)", "db")
    assert table(tables, "t", "db").key_columns == ("a",)


def test_nullable_unique_key_is_not_a_key(parser, tables):
    parser.parse("CREATE TABLE t (a INT, UNIQUE (a))", "db")
    assert table(tables, "t", "db").key_columns == ()


def test_rename_table_and_alter_rename(parser, tables):
    parser.parse("CREATE TABLE a (id INT PRIMARY KEY)", "db")
    [r] = parser.parse("RENAME TABLE a TO b", "db")
    assert r.kind == "RENAME_TABLE"
    [change] = r.changes
    assert change.type == "ALTER" and change.previous_id == TableId("db", "a") and change.table.id == TableId("db", "b")
    assert tables.get(TableId("db", "a")) is None
    [r] = parser.parse("ALTER TABLE b RENAME TO other.c", "db")
    assert r.changes[0].previous_id == TableId("db", "b")
    assert table(tables, "c", "other").primary_key == ("id",)


def test_gh_ost_cut_over_swaps_the_shadow_table_in(parser, tables):
    """gh-ost: _t_gho is created LIKE t, altered, then swapped in with one atomic RENAME."""
    parser.parse("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "db")
    parser.parse("CREATE TABLE `_t_gho` LIKE `t`", "db")
    parser.parse("ALTER TABLE `_t_gho` ADD COLUMN w VARCHAR(5)", "db")
    parser.parse("CREATE TABLE `_t_ghc` (id bigint auto_increment, last_update timestamp, hint varchar(64), "
                 "value varchar(4096), primary key(id)) auto_increment=256", "db")
    [r] = parser.parse("RENAME TABLE `db`.`t` TO `db`.`_t_del`, `db`.`_t_gho` TO `db`.`t`", "db")
    assert [c.table.id.table for c in r.changes] == ["_t_del", "t"]
    assert names(table(tables, "t", "db")) == ["id", "v", "w"]
    assert names(table(tables, "_t_del", "db")) == ["id", "v"]
    parser.parse("DROP TABLE IF EXISTS `_t_del`, `_t_ghc`", "db")
    assert tables.get(TableId("db", "_t_del")) is None


def test_pt_online_schema_change_swap(parser, tables):
    parser.parse("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "db")
    parser.parse("CREATE TABLE `db`.`_t_new` (id INT PRIMARY KEY, v INT)", "db")
    parser.parse("ALTER TABLE `db`.`_t_new` MODIFY v BIGINT", "db")
    parser.parse("RENAME TABLE `db`.`t` TO `db`.`_t_old`, `db`.`_t_new` TO `db`.`t`", "db")
    parser.parse("DROP TABLE IF EXISTS `db`.`_t_old`", "db")
    assert table(tables, "t", "db").column("v").type_name == "BIGINT"


def test_drop_table_truncate_and_databases(parser, tables):
    parser.parse("CREATE DATABASE IF NOT EXISTS shop CHARACTER SET utf8mb4", None)
    assert tables.charset_for("shop") == "utf8mb4"
    parser.parse("CREATE TABLE shop.a (id INT); CREATE TABLE shop.b (id INT, s VARCHAR(3))", None)
    assert table(tables, "b", "shop").column("s").charset == "utf8mb4"
    [r] = parser.parse("TRUNCATE TABLE shop.a", None)
    assert r.kind == "TRUNCATE" and r.truncated == [TableId("shop", "a")]
    [r] = parser.parse("DROP TABLE `a` /* generated by server */", "shop")
    assert [c.type for c in r.changes] == ["DROP"] and tables.get(TableId("shop", "a")) is None
    [r] = parser.parse("DROP DATABASE shop", None)
    assert r.kind == "DROP_DATABASE" and [c.table.id.table for c in r.changes] == ["b"]
    assert len(tables) == 0


def test_use_changes_default_database(parser, tables):
    parser.parse("USE inv; CREATE TABLE x (id INT)", None)
    assert table(tables, "x", "inv")


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE VIEW v AS SELECT 1",
        "CREATE DEFINER=`root`@`localhost` PROCEDURE p() BEGIN SELECT 1; SELECT 2; END",
        "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
        "DROP VIEW IF EXISTS v",
        "GRANT SELECT ON *.* TO 'u'@'%'",
        "FLUSH PRIVILEGES",
        "CREATE INDEX i ON t (a)",
        "DROP INDEX i ON t",
        "CREATE USER 'u'@'%' IDENTIFIED BY 'secret'",
        "ANALYZE TABLE t",
        "SET GLOBAL x = 1",
        "CREATE OR REPLACE SEQUENCE s",
        "BEGIN",
    ],
)
def test_ignorable_statements(parser, sql):
    results = parser.parse(sql, "db")
    assert all(r.kind == "IGNORED" for r in results)
    assert len(results) == 1


def test_unparseable_ddl_names_the_statement(parser):
    parser.parse("CREATE TABLE t (id INT)", "db")
    with pytest.raises(DdlParseError) as info:
        parser.parse("ALTER TABLE t ADD COLUMN c NOSUCHTYPE", "db")
    assert "NOSUCHTYPE" in str(info.value) and "ALTER TABLE t ADD COLUMN c NOSUCHTYPE" in str(info.value)
    located = info.value.at("mysql-bin.000003:154")
    assert "mysql-bin.000003:154" in str(located)
    with pytest.raises(DdlParseError, match="not known"):
        parser.parse("ALTER TABLE unknown_table ADD COLUMN c INT", "db")
    with pytest.raises(DdlParseError, match="unsupported statement"):
        parser.parse("FROBNICATE TABLE t", "db")


def test_mariadb_show_create_table_output(parser, tables):
    parser.parse(
        "CREATE TABLE `all_types` (\n"
        "  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
        "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
        "  `e` enum('a','b''c','d,e') DEFAULT 'a',\n"
        "  `s` set('x','y') NOT NULL DEFAULT '',\n"
        "  `g` point NOT NULL,\n"
        "  `d` datetime(6) DEFAULT current_timestamp(6),\n"
        "  `u` uuid DEFAULT NULL,\n"
        "  `x` int(11) DEFAULT (`id` + 1),\n"
        "  PRIMARY KEY (`id`),\n"
        "  SPATIAL KEY `g` (`g`)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci\n"
        " PARTITION BY HASH (`id`)\n(PARTITION `p0` ENGINE = InnoDB,\n PARTITION `p1` ENGINE = InnoDB)",
        "db",
    )
    t = table(tables, "all_types", "db")
    assert names(t) == ["id", "j", "e", "s", "g", "d", "u", "x"]
    assert t.column("e").enum_values == ("a", "b'c", "d,e")
    assert t.column("x").default.kind is DefaultKind.EXPRESSION
    assert t.column("g").type_name == "POINT"


def test_executable_comments_and_quoting(parser, tables):
    parser.parse("/*!40101 SET NAMES utf8 */", "db")
    parser.parse("CREATE TABLE `we``ird` (`a b` INT /*!50606 STORAGE DISK */, `key` VARCHAR(2))", "db")
    t = table(tables, "we`ird", "db")
    assert names(t) == ["a b", "key"]


def test_case_insensitive_names(parser, tables):
    parser.parse("CREATE TABLE Orders (Id INT PRIMARY KEY)", "Shop")
    parser.parse("ALTER TABLE shop.ORDERS ADD COLUMN Total INT", None)
    t = table(tables, "orders", "shop")
    assert t.id == TableId("Shop", "Orders") and names(t) == ["Id", "Total"]


def test_convert_charset_and_table_option(parser, tables):
    parser.parse("CREATE TABLE t (a VARCHAR(3), b INT) DEFAULT CHARSET=latin1", "db")
    parser.parse("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", "db")
    assert table(tables, "t", "db").column("a").charset == "utf8mb4"
    assert table(tables, "t", "db").column("b").charset is None
