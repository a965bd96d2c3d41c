"""Values where lakecdc differed from Debezium's MariaDB connector on the same MariaDB
(tests/conformance/test_mariadb_debezium.py found them): negative TIME(n) fractions as the binlog
reader decodes them, SRID 0, and the order of a transaction END's ``data_collections``."""

from __future__ import annotations

import datetime as dt
import struct

from hypothesis import given
from hypothesis import strategies as st

from lakecdc.capture.mysql.ddl.parser import DdlParser
from lakecdc.capture.mysql.ddl.tables import Tables
from lakecdc.capture.mysql.row_decoder import negative_time, row_values
from lakecdc.capture.mysql.types import TypeModes, value_converter
from lakecdc.events.transaction import TransactionTracker

MAX_TIME_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000


def read_time2_as_mysql_replication(micros: int, fsp: int = 6) -> dt.timedelta:
    """What mysql-replication's ``__read_time2`` returns for a TIME(fsp) value: MySQL packs it as
    one signed number (seconds << 24 | fraction, negated as a whole), the reader negates the two
    parts separately (a model of the decoding, checked on a real binlog by the conformance test)."""
    unit = 10 ** (6 - fsp)
    negative, magnitude = micros < 0, abs(micros)
    seconds, fraction = divmod(magnitude, 1_000_000)
    fraction //= unit
    if negative and fraction:
        seconds, fraction = seconds + 1, -fraction  # the borrow from the seconds
    sign = -1 if negative else 1
    return dt.timedelta(seconds=seconds, microseconds=fraction * unit) * sign


@given(st.integers(0, MAX_TIME_US // 1_000_000), st.sampled_from([1, 2, 3, 4, 5, 6]), st.booleans(), st.data())
def test_fractional_times_read_from_the_binlog_are_the_stored_values(seconds: int, fsp: int, negative: bool,
                                                                     data: st.DataObject) -> None:
    fraction = data.draw(st.integers(0, 10 ** fsp - 1)) * 10 ** (6 - fsp)
    micros = (seconds * 1_000_000 + fraction) * (-1 if negative else 1)
    assert negative_time(read_time2_as_mysql_replication(micros, fsp)) == dt.timedelta(microseconds=micros)


def test_only_time_columns_with_a_fraction_are_corrected() -> None:
    read = read_time2_as_mysql_replication(-3_723_000_004)
    assert read == -dt.timedelta(seconds=3723, microseconds=999_996)  # -01:02:03.999996
    row = row_values({"t6": read, "other": read}, {}, frozenset({"t6"}))
    assert row == (-dt.timedelta(seconds=3723, microseconds=4), read)


def test_srid_0_is_null_as_debezium_binlog_geometry() -> None:
    tables = Tables()
    DdlParser(tables).parse("CREATE TABLE g (p POINT, g GEOMETRY)", "db")
    columns = tables.get(next(iter(tables)).id).columns
    wkb = bytes.fromhex("0101000000000000000000f03f0000000000000040")
    for column in columns:
        convert = value_converter(column, TypeModes())
        assert convert(struct.pack("<I", 0) + wkb)["srid"] is None
        assert convert(struct.pack("<I", 4326) + wkb)["srid"] == 4326


def test_end_lists_data_collections_in_java_hashmap_order() -> None:
    # Debezium's TransactionContext counts per table in a java.util.HashMap: the END lists them in
    # its iteration order (measured with Debezium's MariaDB connector: times before numbers here)
    tracker = TransactionTracker()
    tracker.begin("0-1-5", 0)
    tracker.event("dbzmaria.times")
    tracker.event("dbzmaria.numbers")
    end = tracker.end(None, 0)
    assert [c["data_collection"] for c in end["data_collections"]] == ["dbzmaria.numbers", "dbzmaria.times"]
