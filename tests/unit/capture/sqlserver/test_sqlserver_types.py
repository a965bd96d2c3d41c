"""Type mapping cases the Debezium comparison (test_sqlserver_types_vs_debezium.py) does not
cover: refusals, and the pymssql value shapes."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from lakecdc.capture.sqlserver.connection import ColumnDef
from lakecdc.capture.sqlserver.errors import SqlServerTypeError
from lakecdc.capture.sqlserver.types import TypeModes, column_schema, value_converter


def col(type_name: str, precision: int | None = None, nullable: bool = True) -> ColumnDef:
    return ColumnDef("c", type_name, None, None, None, precision, nullable, 1)


@pytest.mark.parametrize("type_name", ["geometry", "geography", "sql_variant", "hierarchyid"])
def test_unmapped_types_name_the_column_and_the_way_out(type_name: str) -> None:
    with pytest.raises(SqlServerTypeError, match=rf"column 'c' has SQL Server type '{type_name}'.*column.exclude.list"):
        column_schema(col(type_name), TypeModes())


def test_nulls_pass_and_optionality_follows_the_column() -> None:
    modes = TypeModes()
    assert value_converter(col("datetime2", 7), modes)(None) is None
    assert column_schema(col("int", nullable=False), modes).optional is False
    assert column_schema(col("int"), modes).optional is True


def test_pymssql_shapes() -> None:
    modes = TypeModes()
    assert value_converter(col("uniqueidentifier"), modes)(uuid.UUID("6f9619ff-8b86-d011-b42d-00c04fc964ff")) == \
        "6F9619FF-8B86-D011-B42D-00C04FC964FF"
    # pymssql has microseconds only: a time(7) value's last two nanosecond digits are zero
    assert value_converter(col("time", 7), modes)(dt.time(0, 0, 1, 1)) == 1_000_001_000
    # seed 2.10.4: DATETIME2 "2018-06-20 15:13:16.945104" -> MicroTimestamp 1529507596945104
    assert value_converter(col("datetime2", 6), modes)(dt.datetime(2018, 6, 20, 15, 13, 16, 945104)) == 1529507596945104
    assert value_converter(col("datetimeoffset", 7), modes)(
        dt.datetime(1, 1, 1, 0, 0, tzinfo=dt.timezone.utc)) == "0001-01-01T00:00:00Z"
