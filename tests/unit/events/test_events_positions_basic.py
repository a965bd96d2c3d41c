"""Position text forms, offsets and ordering on hand-picked cases."""

from __future__ import annotations

import pytest

from lakecdc.events.positions import (
    MySqlPosition,
    OraclePosition,
    PostgresPosition,
    SqlServerPosition,
    lsn_from_text,
    lsn_to_text,
    position_from_offset,
    position_from_source,
    sqlserver_lsn_from_text,
    sqlserver_lsn_to_text,
)


def test_postgres_lsn_text() -> None:
    assert lsn_from_text("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert lsn_to_text((0x16 << 32) | 0xB374D848) == "16/B374D848"
    assert lsn_to_text(0) == "0/0"
    with pytest.raises(ValueError, match="not a PostgreSQL LSN"):
        lsn_from_text("16B374D848")


def test_sqlserver_lsn_text() -> None:
    value = sqlserver_lsn_from_text("00000027:00000758:0003")
    assert value == (0x27 << 48) | (0x758 << 16) | 3
    assert sqlserver_lsn_to_text(value) == "00000027:00000758:0003"
    with pytest.raises(ValueError, match="SQL Server LSN"):
        sqlserver_lsn_from_text("27:758:3")


def test_postgres_order_snapshot_before_streaming_at_same_lsn() -> None:
    snap = PostgresPosition(lsn=100, snapshot=True)
    stream = PostgresPosition(lsn=100)
    later_tx = PostgresPosition(lsn=50, commit_lsn=120)  # interleaved tx committed later
    assert snap < stream < later_tx
    assert sorted([later_tx, stream, snap]) == [snap, stream, later_tx]


def test_postgres_event_without_last_commit_orders_by_its_lsn() -> None:
    # Before a restart: an event with last commit 100 at LSN 150. After a restart without a
    # restored last commit, the next event (LSN 200) must still sort after it.
    before_restart = PostgresPosition(lsn=150, commit_lsn=100)
    after_restart = PostgresPosition(lsn=200)
    assert before_restart < after_restart


def test_postgres_offset_shape() -> None:
    pos = PostgresPosition(lsn=99091416, commit_lsn=99091160, lsn_proc=99091160, tx_id=1264, ts_usec=5)
    assert pos.to_offset() == {
        "lsn_proc": 99091160, "lsn_commit": 99091160, "lsn": 99091416, "txId": 1264, "ts_usec": 5,
    }
    assert position_from_offset("postgresql", pos.to_offset()) == pos


def test_mysql_order_and_source() -> None:
    a = position_from_source("mysql", {"file": "mysql-bin.000009", "pos": 900, "row": 3, "snapshot": "false"})
    b = position_from_source("mysql", {"file": "mysql-bin.000010", "pos": 4, "row": 0, "snapshot": "false"})
    assert isinstance(a, MySqlPosition) and a < b
    assert a.seq() == (9, 900, 3, 1)


def test_sqlserver_order_uses_all_80_bits() -> None:
    low = SqlServerPosition(commit_lsn=sqlserver_lsn_from_text("00000027:00000758:0003"))
    high_slot = SqlServerPosition(commit_lsn=sqlserver_lsn_from_text("00000027:00000758:0004"))
    high_vlf = SqlServerPosition(commit_lsn=sqlserver_lsn_from_text("00000028:00000000:0000"))
    assert low < high_slot < high_vlf
    assert all(0 <= part < 2**63 for p in (low, high_slot, high_vlf) for part in p.seq())
    src = position_from_source(
        "sqlserver",
        {"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003",
         "event_serial_no": "2", "snapshot": "false"},
    )
    assert isinstance(src, SqlServerPosition) and src.event_serial_no == 2


def test_oracle_order_commit_then_scn_then_rs_id_then_ssn() -> None:
    a = OraclePosition(scn=10, commit_scn=20, rs_id=" 0x0000a5.00012345.0124 ", ssn=1)
    b = OraclePosition(scn=10, commit_scn=20, rs_id=" 0x0000a5.00012345.0124 ", ssn=2)
    c = OraclePosition(scn=11, commit_scn=20, rs_id=" 0x000001.00000001.0001 ", ssn=0)
    d = OraclePosition(scn=5, commit_scn=21)
    assert a < b < c < d


def test_unknown_connector_is_named() -> None:
    with pytest.raises(ValueError, match="db2"):
        position_from_source("db2", {})


def test_gtid_set_text_forms() -> None:
    from lakecdc.events.gtid import GtidSet

    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    mysql = GtidSet.parse(f"{uuid.upper()}:1-5:7-9,8f2b7b5e-0000-11e1-9e33-c80aa9429562:1-3")
    assert mysql.contains(f"{uuid}:4") and not mysql.contains(f"{uuid}:6") and mysql.contains(f"{uuid}:9")
    assert str(mysql) == f"{uuid}:1-5:7-9,8f2b7b5e-0000-11e1-9e33-c80aa9429562:1-3"
    assert str(mysql.add(f"{uuid}:6")).startswith(f"{uuid}:1-9,")
    tagged = GtidSet.parse(f"{uuid}:1-3:mytag:1-2")
    assert tagged.contains(f"{uuid}:mytag:2") and not tagged.contains(f"{uuid}:mytag:3")
    assert tagged.contains(f"{uuid}:3") and GtidSet.parse(str(tagged)) == tagged
    mariadb = GtidSet.parse("0-1-100,1-2-5,0-2-90")
    assert str(mariadb) == "0-1-100,1-2-5"
    assert mariadb.contains("0-1-100") and not mariadb.contains("0-1-101") and mariadb.contains("1-9-5")
    assert GtidSet.parse("") == GtidSet() and str(GtidSet()) == ""
    with pytest.raises(ValueError, match="bad GTID interval"):
        GtidSet.parse(f"{uuid}:1-x")
