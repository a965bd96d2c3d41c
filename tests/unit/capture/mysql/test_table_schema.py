"""Per-table schemas and row builders: key columns, column filters, message.key.columns, naming."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from lakecdc.capture.mysql.ddl.model import TableId
from lakecdc.capture.mysql.ddl.parser import DdlParser
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.errors import UnknownTableError
from lakecdc.capture.mysql.table_schema import build_table_schema
from lakecdc.capture.mysql.types import TypeModes
from lakecdc.config.filters import ColumnFilter, KeyColumns, compile_regex_list
from lakecdc.events.topics import TopicNamer

DDL = ("CREATE TABLE orders (tenant INT NOT NULL, id BIGINT NOT NULL, code VARCHAR(8) NOT NULL, "
       "amount DECIMAL(8,2), ts TIMESTAMP(3) NULL, secret VARCHAR(5), PRIMARY KEY (tenant, id))")
ROW = (7, 42, "A-1", Decimal("9.50"), dt.datetime(2024, 5, 6, 7, 8, 9, 250000), "pssst")


def table():
    t = Tables()
    DdlParser(t).parse(DDL, "shop")
    return t.get(TableId("shop", "orders"))


def test_composite_key_row_and_names():
    schema = build_table_schema(table(), TopicNamer("dbz", "mysql"), TypeModes())
    assert schema.topic == "dbz.shop.orders" and schema.data_collection == "shop.orders"
    assert schema.key_schema.name == "dbz.shop.orders.Key"
    assert [f.name for f in schema.key_schema.fields] == ["tenant", "id"]
    assert schema.key(ROW) == {"tenant": 7, "id": 42}
    assert schema.row(ROW) == {"tenant": 7, "id": 42, "code": "A-1", "amount": (950).to_bytes(2, "big"),
                               "ts": "2024-05-06T07:08:09.250Z", "secret": "pssst"}
    assert schema.envelope_schema.name == "dbz.shop.orders.Envelope"
    assert schema.envelope_schema.field("source").schema.name == "io.debezium.connector.mysql.Source"


def test_column_filter_drops_value_columns_but_never_key_columns():
    filt = ColumnFilter(exclude=compile_regex_list("shop.orders.secret,shop.orders.id", "column.exclude.list"))
    schema = build_table_schema(table(), TopicNamer("dbz", "mysql"), TypeModes(), column_filter=filt)
    assert list(schema.row(ROW)) == ["tenant", "code", "amount", "ts"]
    assert schema.key(ROW) == {"tenant": 7, "id": 42}


def test_message_key_columns_override_and_bad_column():
    override = KeyColumns.parse("shop.orders:code")
    schema = build_table_schema(table(), TopicNamer("dbz", "mysql"), TypeModes(), key_override=override)
    assert schema.key(ROW) == {"code": "A-1"}
    with pytest.raises(UnknownTableError, match="key column 'nope' of table 'shop.orders'"):
        build_table_schema(table(), TopicNamer("dbz", "mysql"), TypeModes(),
                           key_override=KeyColumns.parse("shop.orders:nope"))


def test_table_without_key_has_a_null_key_and_mariadb_names_its_source():
    t = Tables()
    DdlParser(t).parse("CREATE TABLE log (msg TEXT)", "shop")
    schema = build_table_schema(t.get(TableId("shop", "log")), TopicNamer("dbz", "mariadb"), TypeModes())
    assert schema.key_schema is None and schema.key(("x",)) is None
    assert schema.envelope_schema.field("source").schema.name == "io.debezium.connector.mariadb.Source"


def test_awkward_column_names_survive_the_generated_builder():
    t = Tables()
    DdlParser(t).parse("CREATE TABLE w (`a'b` INT PRIMARY KEY, `c\"d` INT, `e\\\\f` INT)", "shop")
    schema = build_table_schema(t.get(TableId("shop", "w")), TopicNamer("dbz", "mysql"), TypeModes())
    assert schema.row((1, 2, 3)) == {"a'b": 1, 'c"d': 2, "e\\\\f": 3}  # backslashes are literal in `names`
