"""PostgreSQL without transaction metadata: the first transaction after the snapshot ranks after it
(``lakecdc.ingest.ordering.rank_after_snapshot``), on real Debezium records with their metadata removed."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from ingest_records import encode, golden_records, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.events.positions import PostgresPosition
from lakecdc.ingest.decode import Decoder
from lakecdc.ingest.job_state import JobState
from lakecdc.ingest.ordering import (
    FIRST_TRANSACTION_PHASE,
    event_seq,
    order_rows,
    rank_after_snapshot,
    snapshot_lsn,
    snapshot_lsn_below,
)
from lakecdc.lake.segments import union_segments

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=timezone.utc)
CONFIG = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"})
SEQ = pa.list_(pa.int64())


def without_metadata(crossing_tx: str) -> tuple[list[dict], int]:
    """The golden records as Debezium writes them with ``provide.transaction.metadata=false`` (no
    transaction topic, no ``transaction`` block), ``crossing_tx`` open across the snapshot: its events
    below the snapshot position with a null ``sequence[0]``, the first transaction streamed."""
    records = [r for r in golden_records() if r["topic"] != "dbz.transaction"]
    snapshot = next(r for r in records if r["value"] and r["value"]["payload"].get("op") == "r")
    snapshot_at = snapshot["value"]["payload"]["source"]["lsn"]
    for r in records:
        payload = r["value"]["payload"] if r["value"] else {}
        tx = payload.get("transaction") if payload else None
        if payload and "transaction" in payload:
            payload["transaction"] = None  # the envelope keeps the optional field, null
        if tx and str(tx.get("id")).startswith(crossing_tx + ":"):
            lsn = snapshot_at - 64 + tx["total_order"]
            payload["source"]["lsn"] = lsn
            payload["source"]["sequence"] = f'[null,"{lsn}"]'
    return records, snapshot_at


def customers(records: list[dict]) -> pa.Table:
    batch = Decoder(CONFIG).decode(kafka_table((r["topic"], encode(r["key"]), encode(r["value"])) for r in records),
                                   NOW)
    _, rows = union_segments([s for s in batch.segments if s.topic == "dbz.public.customers"])
    return rows


def test_the_first_transaction_without_an_end_marker_ranks_right_after_the_snapshot_rows() -> None:
    records, snapshot_at = without_metadata("1260")
    rows = customers(records)
    assert rows.column("_tx_id").null_count == rows.num_rows  # nothing tells a commit
    first = [s for s in rows.column("_seq").to_pylist() if s[2] == FIRST_TRANSACTION_PHASE]
    assert first and all(s[1] < snapshot_at for s in first)
    assert order_rows(rows).column("_op").to_pylist()[0] != "r"  # ranked as they come: before the snapshot
    assert snapshot_lsn(rows) == snapshot_at

    ranked = order_rows(rank_after_snapshot(rows, snapshot_lsn(rows)))
    ops, seqs = ranked.column("_op").to_pylist(), [tuple(s) for s in ranked.column("_seq").to_pylist()]
    snapshot_rows = ops.count("r")
    assert ops[:snapshot_rows] == ["r"] * snapshot_rows  # every streamed change after them
    raised = [s for s in seqs if s[2] == FIRST_TRANSACTION_PHASE]
    assert [s[0] for s in raised] == [snapshot_at + 1] * len(first)
    assert [s[1] for s in raised] == sorted(s[1] for s in first)  # the transaction keeps its own order
    later = seqs[snapshot_rows + len(raised):]
    assert later and all(s[0] > snapshot_at + 1 for s in later)  # the next transactions rank after it
    assert seqs == sorted(seqs)


def test_only_a_streamed_postgres_event_without_a_known_commit_is_marked() -> None:
    assert event_seq(PostgresPosition(lsn=500, commit_lsn=None)) == (500, 500, FIRST_TRANSACTION_PHASE, 0)
    assert event_seq(PostgresPosition(lsn=500, commit_lsn=480)) == (480, 500, 1, 0)
    assert event_seq(PostgresPosition(lsn=500, snapshot=True)) == (500, 500, 0, 0)


def test_the_snapshot_lsn_comes_back_from_a_tables_last_commit_and_the_job_state() -> None:
    assert snapshot_lsn_below((900, 900, 0, 3)) == 900  # the table holds snapshot rows last
    assert snapshot_lsn_below((901, 700, FIRST_TRANSACTION_PHASE, 0)) == 900  # a raised first-transaction event
    assert snapshot_lsn_below((950, 940, 1, 0)) is None and snapshot_lsn_below(None) is None
    assert JobState(snapshot_lsn=900).snapshot_lsn == 900


def _rows(seqs: list[tuple[int, int, int, int]]) -> pa.Table:
    n = len(seqs)
    return pa.table({"_seq": pa.array([list(s) for s in seqs], SEQ), "_tx_total_order": pa.nulls(n, pa.int64()),
                     "_partition": pa.array([0] * n, pa.int32()), "_offset": pa.array(range(n), pa.int64())})


@given(snapshot_at=st.integers(1000, 10**9),
       before=st.lists(st.integers(1, 999), min_size=1, max_size=8, unique=True),
       after=st.lists(st.integers(1, 500), max_size=4, unique=True),
       commit_gap=st.integers(501, 5000))
def test_ranked_first_transaction_lies_between_the_snapshot_and_the_next_transaction(
        snapshot_at: int, before: list[int], after: list[int], commit_gap: int) -> None:
    """Events of the first transaction at LSNs below and above the snapshot position; its commit
    lies above all of them; the next transaction's events carry that commit as ``sequence[0]``."""
    lsns = sorted({snapshot_at - d for d in before} | {snapshot_at + d for d in after})
    commit = snapshot_at + commit_gap
    snapshot = [(snapshot_at, snapshot_at, 0, i) for i in range(3)]
    first = [(lsn, lsn, FIRST_TRANSACTION_PHASE, 0) for lsn in lsns]
    following = [(commit, commit + 8 * (i + 1), 1, 0) for i in range(2)]
    ranked = rank_after_snapshot(_rows([*following, *first, *snapshot]), snapshot_at)
    ordered = [tuple(s) for s in order_rows(ranked).column("_seq").to_pylist()]
    assert ordered[:3] == snapshot
    assert [s[1] for s in ordered[3:3 + len(first)]] == lsns  # in their own order, after the snapshot
    assert ordered[3 + len(first):] == following
    assert rank_after_snapshot(ranked, snapshot_at).column("_seq").to_pylist() == ranked.column("_seq").to_pylist()
