"""Property tests: positions are totally ordered, agree with seq(), and survive offsets/source/text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.events.gtid import GtidSet
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
from lakecdc.events.source import (
    BinlogSourceBuilder,
    OracleSourceBuilder,
    PostgresSourceBuilder,
    SqlServerSourceBuilder,
)

U63 = st.integers(0, 2**63 - 1)
U64 = st.integers(0, 2**64 - 1)
U80 = st.integers(0, 2**80 - 1)

postgres = st.builds(
    PostgresPosition,
    lsn=U63,
    commit_lsn=st.none() | U63,
    lsn_proc=st.none() | U63,
    tx_id=st.none() | st.integers(0, 2**32),
    ts_usec=st.none() | U63,
    snapshot=st.booleans(),
    last_snapshot_record=st.booleans(),
    message_type=st.none() | st.sampled_from(["BEGIN", "COMMIT", "INSERT", "UPDATE", "DELETE"]),
)
mysql = st.builds(
    MySqlPosition,
    file=st.integers(1, 999999).map(lambda i: f"mysql-bin.{i:06d}"),
    pos=st.integers(4, 2**40),
    row=st.integers(0, 1000),
    event=st.integers(0, 1000),
    restart_pos=st.none() | st.integers(4, 2**40),
    server_id=st.none() | st.integers(1, 2**32),
    gtid_set=st.none() | st.just("0-1-100,1-2-5"),
    ts_sec=st.none() | st.integers(0, 2**31),
    snapshot=st.booleans(),
)
sqlserver = st.builds(
    SqlServerPosition,
    commit_lsn=U80,
    change_lsn=st.none() | U80,
    event_serial_no=st.integers(0, 2**40),
    snapshot=st.booleans(),
    snapshot_completed=st.booleans(),
)
rs_ids = st.tuples(st.integers(0, 2**24 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1)).map(
    lambda t: f" 0x{t[0]:06x}.{t[1]:08x}.{t[2]:04x} "
)
oracle = st.builds(
    OraclePosition,
    scn=U63,
    commit_scn=st.none() | U63,
    rs_id=st.none() | rs_ids,
    ssn=st.integers(0, 2**40),
    tx_id=st.none() | st.just("0a001b00c3040000"),
    snapshot=st.booleans(),
)
ALL = [("postgresql", postgres), ("mysql", mysql), ("sqlserver", sqlserver), ("oracle", oracle)]


def _check_total_order(a: Any, b: Any, c: Any) -> None:
    # Exactly one of <, ==, > holds, consistent with seq(); transitivity over three points.
    assert [a < b, a == b, a > b].count(True) == 1
    assert (a < b) == (a.seq() < b.seq()) and (a == b) == (a.seq() == b.seq())
    assert (a <= b) == (not a > b) and (a >= b) == (not a < b)
    if a < b and b < c:
        assert a < c
    assert all(0 <= part < 2**63 for part in a.seq()) and len(a.seq()) == 4
    if a == b:
        assert hash(a) == hash(b)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_positions_are_totally_ordered_by_seq(data: st.DataObject) -> None:
    for _, strategy in ALL:
        a, b, c = data.draw(strategy), data.draw(strategy), data.draw(strategy)
        _check_total_order(a, b, c)
        assert sorted([a, b, c], key=lambda p: p.seq()) == sorted([a, b, c])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_offset_round_trip(data: st.DataObject) -> None:
    for connector, strategy in ALL:
        position = data.draw(strategy)
        offset = position.to_offset()
        # Offsets are stored as JSON by Kafka Connect's offset store: they must survive it.
        restored = position_from_offset(connector, json.loads(json.dumps(offset)))
        assert restored == position and restored.seq() == position.seq()
        assert restored.to_offset() == offset


@settings(max_examples=300, deadline=None)
@given(postgres)
def test_postgres_position_survives_its_source_block(position: PostgresPosition) -> None:
    source = PostgresSourceBuilder("dbz", "db").build(
        schema="public", table="t", ts_us=1, lsn=position.lsn, last_commit_lsn=position.commit_lsn,
        tx_id=position.tx_id, snapshot="true" if position.snapshot else "false",
    )
    assert position_from_source("postgresql", source).seq() == position.seq()


@settings(max_examples=200, deadline=None)
@given(mysql, sqlserver, oracle)
def test_other_positions_survive_their_source_blocks(
    my: MySqlPosition, ss: SqlServerPosition, ora: OraclePosition
) -> None:
    snap = {True: "true", False: "false"}
    my_source = BinlogSourceBuilder("s").build(
        db="d", table="t", ts_ms=0, server_id=1, file=my.file, pos=my.pos, row=my.row, snapshot=snap[my.snapshot]
    )
    assert position_from_source("mysql", my_source).seq() == my.seq()
    ss_source = SqlServerSourceBuilder("s").build(
        db="d", schema="dbo", table="t", ts_ms=0, commit_lsn=sqlserver_lsn_to_text(ss.commit_lsn),
        change_lsn=None if ss.change_lsn is None else sqlserver_lsn_to_text(ss.change_lsn),
        event_serial_no=ss.event_serial_no, snapshot=snap[ss.snapshot],
    )
    assert position_from_source("sqlserver", ss_source).seq() == ss.seq()
    ora_source = OracleSourceBuilder("s").build(
        db="D", schema="S", table="T", ts_ms=0, scn=ora.scn, commit_scn=ora.commit_scn, rs_id=ora.rs_id,
        ssn=ora.ssn, snapshot=snap[ora.snapshot],
    )
    assert position_from_source("oracle", ora_source).seq() == ora.seq()


@settings(deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_lsn_text_round_trip(value: int) -> None:
    text = lsn_to_text(value)
    assert lsn_from_text(text) == value and lsn_from_text(text.lower()) == value


@settings(deadline=None)
@given(U80)
def test_sqlserver_lsn_text_round_trip(value: int) -> None:
    assert sqlserver_lsn_from_text(sqlserver_lsn_to_text(value)) == value


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5), st.integers(1, 10**6)), min_size=1, max_size=8))
def test_mariadb_gtid_set_keeps_highest_sequence_per_domain(gtids: list[tuple[int, int, int]]) -> None:
    gtid_set = GtidSet()
    for domain, server, seq in gtids:
        gtid_set = gtid_set.add(f"{domain}-{server}-{seq}")
    for domain, server, seq in gtids:
        assert gtid_set.contains(f"{domain}-{server}-{seq}")
    assert GtidSet.parse(str(gtid_set)) == gtid_set


@settings(deadline=None)
@given(st.lists(st.integers(1, 200), min_size=1, max_size=30))
def test_mysql_gtid_set_intervals(transactions: list[int]) -> None:
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    gtid_set = GtidSet()
    for n in transactions:
        gtid_set = gtid_set.add(f"{uuid}:{n}")
    for n in range(1, 202):
        assert gtid_set.contains(f"{uuid}:{n}") == (n in transactions)
    assert GtidSet.parse(str(gtid_set)) == gtid_set


@st.composite
def interleaved_wal(draw: st.DrawFn) -> list[tuple[int, list[int]]]:
    """Random interleaving of transactions in the WAL: [(commit LSN, [change LSNs])] in commit order."""
    n_tx = draw(st.integers(1, 6))
    pending = {tx: draw(st.integers(1, 4)) for tx in range(n_tx)}
    changes: dict[int, list[int]] = {tx: [] for tx in range(n_tx)}
    commits: list[tuple[int, int]] = []
    lsn = draw(st.integers(1, 10**9))
    open_txs = list(range(n_tx))
    while open_txs:
        tx = draw(st.sampled_from(open_txs))
        lsn += draw(st.integers(1, 500))
        if pending[tx]:
            changes[tx].append(lsn)
            pending[tx] -= 1
        else:
            commits.append((lsn, tx))
            open_txs.remove(tx)
    return [(commit, changes[tx]) for commit, tx in commits]


@settings(max_examples=300, deadline=None)
@given(interleaved_wal(), st.booleans())
def test_postgres_seq_follows_commit_order_for_interleaved_transactions(
    wal: list[tuple[int, list[int]]], restored_last_commit: bool
) -> None:
    # pgoutput streams whole transactions in commit order; Debezium stamps every event with the
    # commit LSN of the previous transaction (none for the first one after start).
    emitted = []
    last_commit: int | None = 1 if restored_last_commit else None
    for commit, changes in wal:
        emitted.extend(PostgresPosition(lsn=change, commit_lsn=last_commit) for change in changes)
        last_commit = commit
    assert all(a < b for a, b in zip(emitted, emitted[1:]))


@settings(max_examples=200)
@given(st.one_of(postgres, mysql, sqlserver, oracle))
def test_seq_position_reads_back_the_commit_position_packed_in_seq(position: Any) -> None:
    # the ingest job's per-table position gauge is read back from silver's _seq alone
    from lakecdc.events.position_text import seq_position

    if isinstance(position, PostgresPosition):
        connector, expected = "postgres", ("lsn", position.lsn if position.commit_lsn is None else position.commit_lsn)
    elif isinstance(position, MySqlPosition):
        connector, expected = "mysql", ("pos", position.pos)
    elif isinstance(position, SqlServerPosition):
        connector, expected = "sqlserver", ("commit_lsn", position.commit_lsn)
    else:
        connector, expected = "oracle", ("scn", position.scn if position.commit_scn is None else position.commit_scn)
    assert seq_position(connector, position.seq()) == expected
