"""Where an event ranks, for every connector: a transaction at its own commit, after the snapshot it follows.

The snapshot boundary (issue 12): a transaction that began before the snapshot's position and commits
after it must rank after the snapshot rows. PostgreSQL needs the commit LSN from the END marker
(``rank_by_commit``, tested on real Debezium records in ``test_ingest_transactions``); the others carry
their commit in the event (SQL Server ``commit_lsn``, Oracle ``commit_scn``) or write it to the binlog
at commit (MySQL), which these tests pin down on positions shaped as each connector's events are.
Positions in the source's notation (``lakecdc.audit.notation``) bound a transaction's ranks exactly.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.audit.notation import format_position, parse_position
from lakecdc.events.position_text import lsn_to_text, sqlserver_lsn_to_text
from lakecdc.events.positions import MySqlPosition, OraclePosition, PostgresPosition, SqlServerPosition
from lakecdc.ingest.ordering import rank_by_commit
from lakecdc.lake.segments import METADATA_ARROW


def test_sqlserver_a_change_made_before_the_snapshot_and_committed_after_ranks_after_it() -> None:
    snapshot = SqlServerPosition(commit_lsn=0x27_00000758_0005, snapshot=True)
    crossing = SqlServerPosition(commit_lsn=0x27_00000760_0002, change_lsn=0x27_00000740_0001, event_serial_no=1)
    assert crossing.seq() > snapshot.seq()
    assert crossing.seq() <= parse_position("sqlserver", sqlserver_lsn_to_text(crossing.commit_lsn))
    assert not crossing.seq() <= parse_position("sqlserver", sqlserver_lsn_to_text(snapshot.commit_lsn))


def test_oracle_a_change_made_before_the_snapshot_and_committed_after_ranks_after_it() -> None:
    snapshot = OraclePosition(scn=289_600, snapshot=True)
    crossing = OraclePosition(scn=289_590, commit_scn=289_620, rs_id=" 0x0000a5.00012345.0124 ", ssn=2)
    assert crossing.seq() > snapshot.seq()
    assert crossing.seq() <= parse_position("oracle", "289620")
    assert not crossing.seq() <= parse_position("oracle", "289619")
    assert format_position("oracle", crossing.seq()) == "289620"


def test_mysql_a_transaction_committed_after_the_snapshot_is_written_after_its_binlog_position() -> None:
    snapshot = MySqlPosition(file="mysql-bin.000003", pos=154, snapshot=True)
    after = MySqlPosition(file="mysql-bin.000003", pos=400, row=0)
    assert after.seq() > snapshot.seq()
    assert snapshot.seq() <= parse_position("mysql", "mysql-bin.000003:154")
    assert not after.seq() <= parse_position("mysql", "mysql-bin.000003:399")
    assert after.seq() <= parse_position("mysql", format_position("mysql", after.seq()))


def _rows(seqs: list[tuple[int, ...]], tx_ids: list[str | None]) -> pa.Table:
    return pa.table({"_seq": pa.array([list(s) for s in seqs], METADATA_ARROW["_seq"]),
                     "_tx_id": pa.array(tx_ids, pa.string())})


@settings(deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=8), st.integers(0, 3))
def test_postgres_ranked_by_commit_sorts_in_commit_order_and_within_positions(sizes: list[int], crossing: int) -> None:
    """Transactions with ``sizes`` events each, committed one after another; the first ``crossing`` of
    them began before the snapshot (event LSNs below it, null last commit). Ranked by commit, every
    event sorts after the snapshot rows and in commit order, and ``parse(format(rank))`` bounds it."""
    snapshot_lsn, lsn, previous = 10_000, 10_100, None
    seqs, tx_ids, commits, early = [], [], {}, 9_000
    for n, size in enumerate(sizes):
        for i in range(size):
            event_lsn = early + i if n < crossing else lsn + i
            seqs.append(PostgresPosition(lsn=event_lsn, commit_lsn=previous).seq())
            tx_ids.append(f"{500 + n}:{event_lsn}")
        early += size
        lsn += size + 10
        commits[str(500 + n)] = previous = lsn - 5
    ranked = rank_by_commit(_rows(seqs, tx_ids), lambda tx: commits.get(tx.split(":")[0]))
    out = [tuple(s) for s in ranked.column("_seq").to_pylist()]
    snapshot_row = PostgresPosition(lsn=snapshot_lsn, snapshot=True).seq()
    assert all(s > snapshot_row for s in out)
    order = [commits[t.split(":")[0]] for t in tx_ids]
    assert [s[0] for s in out] == order and order == sorted(order)
    for s, commit in zip(out, order):
        assert s <= parse_position("postgres", lsn_to_text(commit))
        assert format_position("postgres", s) == lsn_to_text(commit)
