"""Oracle incremental snapshots of tables keyed by a DATE, a TIMESTAMP(9) and (NUMBER, TIMESTAMP(6)),
on the replay connection (``oracle_chunks`` answers the chunk statements with Oracle's conversions).

A chunk bound must reach the database as the key's own value: python-oracledb binds a ``datetime``
as DATE (the fraction dropped) and reads a TIMESTAMP as a ``datetime`` (nanoseconds dropped), so
the keys travel as text in the snapshot's formats, converted by ``TO_DATE`` / ``TO_TIMESTAMP``.
Chunks must cover every row once, also across a restart from the offset, and the read events
carry Debezium's encodings (DATE -> io.debezium.time.Timestamp, TIMESTAMP(6) -> MicroTimestamp,
TIMESTAMP(9) -> NanoTimestamp, epoch based, ``time.precision.mode=adaptive``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from oracle_recorded import Table
from test_oracle_signals import SIGNAL, SignalOracle, polls, reads, source

from lakecdc.capture.oracle import connection as oraconn

EVENTS = Table("DEBEZIUM", "EVENTS", [("DAY", "DATE", 7, None, None, False),
                                      ("NOTE", "VARCHAR2", 50, None, None, True)], ["DAY"],
               [(dt.datetime(2024, 1, d, h, 30, 15), f"e{d}") for d, h in ((1, 0), (1, 23), (2, 9), (3, 12), (4, 8))])
READINGS = Table("DEBEZIUM", "READINGS", [("TAKEN", "TIMESTAMP(9)", 11, None, 9, False),
                                          ("VAL", "NUMBER", 22, 10, 0, True)], ["TAKEN"],
                 [(f"2024-03-01 10:00:{s}", i) for i, s in enumerate(
                     ("00.000000000", "00.500000000", "00.500000001", "01.123456789", "01.123457000"))])
SHIFTS = Table("DEBEZIUM", "SHIFTS", [("SITE", "NUMBER", 22, 5, 0, False),
                                      ("STARTS", "TIMESTAMP(6)", 11, None, 6, False),
                                      ("CREW", "VARCHAR2", 20, None, None, True)], ["SITE", "STARTS"],
               [(site, f"2024-05-0{d} 06:00:00.{us}000", f"c{site}{d}") for site in (1, 2) for d, us in
                ((1, "000001"), (1, "250000"), (2, "000000"))][:5])
INCLUDE = {"table.include.list": "DEBEZIUM\\.EVENTS,DEBEZIUM\\.READINGS,DEBEZIUM\\.SHIFTS"}
TS_BIND = "TO_TIMESTAMP(:{}, 'YYYY-MM-DD HH24:MI:SS.FF9')"


def epoch(text: str) -> tuple[int, int]:
    """Seconds since the epoch and the nanoseconds of a ``YYYY-MM-DD HH:MM:SS.fffffffff`` value."""
    seconds, fraction = text.split(".")
    return calendar.timegm(dt.datetime.strptime(seconds, "%Y-%m-%d %H:%M:%S").timetuple()), int(fraction)


@pytest.fixture
def db() -> Any:
    recorded = SignalOracle([EVENTS, READINGS, SHIFTS, SIGNAL], scns=[2000])
    oraconn.set_connection_factory(recorded.connect)
    yield recorded
    oraconn.set_connection_factory(None)


def snapshot(db: SignalOracle, table: str, windows: int) -> list[Any]:
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": [f"ORCLPDB1.DEBEZIUM.{table}"]})
    src = source(None, **INCLUDE)
    records = polls(src, windows)
    src.close()
    return reads(records)


def chunk_statements(db: SignalOracle, table: str) -> list[tuple[str, dict[int, Any]]]:
    return [(sql, binds) for conn in db.connections for sql, binds in conn.executed
            if f'"{table}"' in sql and sql.startswith("SELECT")]


def field_type(record: Any, name: str) -> str | None:
    return record.key_schema.field(name).schema.name


def test_date_key_chunks_and_encoding(db: SignalOracle) -> None:
    read = snapshot(db, "EVENTS", 8)
    expected = [calendar.timegm(row[0].timetuple()) * 1000 for row in EVENTS.rows]
    assert [r.key["DAY"] for r in read] == expected  # every row once, in key order
    assert [r.value["after"]["NOTE"] for r in read] == [row[1] for row in EVENTS.rows]
    assert read[0].value["after"]["DAY"] == expected[0]
    assert field_type(read[0], "DAY") == "io.debezium.time.Timestamp"
    statements = chunk_statements(db, "EVENTS")
    # the maximum key, then chunks bounded by DATE values converted from text
    assert statements[2] == (
        'SELECT "DAY", "NOTE" FROM "DEBEZIUM"."EVENTS" WHERE (("DAY" > TO_DATE(:1, \'YYYY-MM-DD HH24:MI:SS\'))) AND '
        '(NOT (("DAY" > TO_DATE(:2, \'YYYY-MM-DD HH24:MI:SS\')))) ORDER BY "DAY" FETCH FIRST 2 ROWS ONLY',
        {1: "2024-01-01 23:30:15", 2: "2024-01-04 08:30:15"})


def test_timestamp9_key_keeps_nanoseconds_in_bounds(db: SignalOracle) -> None:
    """Keys a microsecond or a nanosecond apart, the largest with a fraction: a bound read or bound
    as a datetime would end the snapshot before its last rows."""
    read = snapshot(db, "READINGS", 8)
    expected = [(lambda s, n: s * 10**9 + n)(*epoch(row[0])) for row in READINGS.rows]
    assert [r.key["TAKEN"] for r in read] == expected
    assert [r.value["after"]["VAL"] for r in read] == [row[1] for row in READINGS.rows]
    assert field_type(read[0], "TAKEN") == "io.debezium.time.NanoTimestamp"
    statements = chunk_statements(db, "READINGS")
    assert statements[0][0] == ('SELECT TO_CHAR("TAKEN", \'YYYY-MM-DD HH24:MI:SS.FF9\') AS "TAKEN" FROM '
                                '"DEBEZIUM"."READINGS" ORDER BY "TAKEN" DESC FETCH FIRST 1 ROWS ONLY')
    sql, binds = statements[2]
    assert f'("TAKEN" > {TS_BIND.format(1)})' in sql and f'("TAKEN" > {TS_BIND.format(2)})' in sql
    assert binds == {1: "2024-03-01 10:00:00.500000000", 2: "2024-03-01 10:00:01.123457000"}


def test_composite_key_with_a_timestamp(db: SignalOracle) -> None:
    read = snapshot(db, "SHIFTS", 8)
    expected = [{"SITE": row[0], "STARTS": (lambda s, n: s * 10**6 + n // 1000)(*epoch(row[1]))}
                for row in sorted(SHIFTS.rows)]
    assert [r.key for r in read] == expected
    assert field_type(read[0], "STARTS") == "io.debezium.time.MicroTimestamp"
    sql, binds = chunk_statements(db, "SHIFTS")[2]
    assert (f'("SITE" > :1) OR ("SITE" = :2 AND "STARTS" > {TS_BIND.format(3)})') in sql
    assert binds[3] == "2024-05-01 06:00:00.250000000"


def test_restart_from_the_offset_continues_after_the_last_key(db: SignalOracle) -> None:
    """The offset keeps the keys as text in the snapshot's format (no ``str()`` of a datetime); the
    restarted snapshot binds them the same way and neither repeats nor skips a row."""
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.READINGS"]})
    src = source(None, **INCLUDE)
    first = reads(polls(src, 2))
    offset = src.committable_offset()
    src.close()
    assert offset is not None
    assert json.loads(offset["incremental_snapshot_primary_key"]) == ["2024-03-01 10:00:00.500000000"]
    assert json.loads(offset["incremental_snapshot_maximum_key"]) == ["2024-03-01 10:00:01.123457000"]
    src = source(json.loads(json.dumps(offset)), **INCLUDE)
    rest = reads(polls(src, 8))
    src.close()
    expected = [(lambda s, n: s * 10**9 + n)(*epoch(row[0])) for row in READINGS.rows]
    assert [r.key["TAKEN"] for r in first + rest] == expected


def test_date_offset_written_by_an_earlier_version_still_binds(db: SignalOracle) -> None:
    """An offset holding ``str()`` of a datetime (what lakecdc stored before) is read as the key's text."""
    db.signal("ad-hoc-1", "execute-snapshot", {"data-collections": ["ORCLPDB1.DEBEZIUM.READINGS"]})
    src = source(None, **INCLUDE)
    polls(src, 2)
    offset = src.committable_offset()
    src.close()
    assert offset is not None
    offset["incremental_snapshot_primary_key"] = json.dumps([str(dt.datetime(2024, 3, 1, 10, 0, 0, 500000))])
    offset["incremental_snapshot_maximum_key"] = json.dumps([str(dt.datetime(2024, 3, 1, 10, 0, 1, 123457))])
    src = source(offset, **INCLUDE)
    rest = reads(polls(src, 8))
    src.close()
    expected = [(lambda s, n: s * 10**9 + n)(*epoch(row[0])) for row in READINGS.rows]
    assert [r.key["TAKEN"] for r in rest] == expected[2:]
