"""Reconciliation reads silver as of the position of the source snapshot it reads, on real PostgreSQL 18
against a real Delta silver table (read by DataFusion) written by the delta-rs writer.

The source is read in the reconciler's own REPEATABLE READ snapshot, whose WAL position it reads in the
same transaction. Silver's changes carry real commit LSNs of the source table as ``_seq`` (a
transaction ranks at its own commit: its commit record's end, as the ingest ranks it with transaction
metadata on), and its commits the first/complete-through positions the job records.

Silver AHEAD of the snapshot: right after the reconciler has read its position P,
other sessions commit updates of two rows, an insert and a delete, and the pipeline applies them to
silver in two more versions, all before the reconciler reads silver. Those changes are in flight at
P: silver read as of P matches the source. Silver's newest version would not: four differences
against a copy of the source as it stood at P (while it matches the source as it stands afterwards).

Silver BEHIND the snapshot: the source has committed a change silver does not hold yet. Silver
cannot be read as of P, and the reconciler says so instead of reporting the lag as differences.
(An explicit ``source_position`` older than the source's state is covered by
``test_quality_tables.py::reconcile_against``.)

An ASYNCHRONOUS commit (``synchronous_commit = off``) the snapshot sees must be within its position
too, though PostgreSQL has not written its WAL yet when the snapshot is taken.

The moments "right before the reconciler begins" and "right after it read P" are reached through the
reconciler's own psycopg connection: its cursor factory runs the other sessions' work around the
reconciler's statements (nothing of the reconciler is replaced; the database and lake are real). The
reconciler's ``source_position`` option cannot pin the snapshot (it only chooses silver's version),
and a connection with a snapshot already open is rolled back first (``source_snapshot``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream

from lakecdc.audit import AuditError, LakeTable, table_versions
from lakecdc.events.position_text import lsn_from_text, lsn_to_text
from lakecdc.events.positions import STREAMING_PHASE
from lakecdc.lake.progress import CommitPositions
from lakecdc.quality import RuleResult, check_table
from lakecdc.quality.reconcile import DIFFERS, MISSING_AT_SOURCE, MISSING_IN_SILVER
from lakecdc.writers.base import TableWriter, create_writer

pytestmark = pytest.mark.integration

#: the position the reconciler reports in its reason ("silver version 3 as of source position 0/1A2B3C8;")
AS_OF = re.compile(r"silver version (\d+) as of source position ([0-9A-F]+/[0-9A-F]+)[;)]")


def commit(conn: psycopg.Connection[Any], *statements: str, synchronous: bool = True) -> int:
    """Run ``statements`` in one transaction; its commit LSN as the ingest ranks it: the end of its
    commit record (the WAL insert position right after the commit; nothing else writes WAL here)."""
    with conn.transaction():
        if not synchronous:
            conn.execute("SET LOCAL synchronous_commit = off")
        for statement in statements:
            conn.execute(statement)
    row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    return lsn_from_text(str(row[0]))


@dataclass
class Silver:
    """A Delta silver table of ``(id bigint, name text)`` written by the delta-rs writer, batch by batch."""

    writer: TableWriter
    stream: Stream
    table: LakeTable
    batches: int = 0

    @classmethod
    def create(cls, spark: SparkSession, tmp_path: Path) -> Silver:
        writer = create_writer("delta-rs", spark, warehouse=str(tmp_path / "delta"))
        stream = Stream(spark, "delta", [("id", LONG), ("name", STR)])
        return cls(writer, stream, LakeTable.delta(tmp_path / "delta", stream.target.silver_table))

    def apply(self, *transactions: tuple[int, list[tuple[str, dict[str, Any]]]]) -> int:
        """One micro-batch of source transactions ``(commit LSN, [(op, row), ...])``: each change at
        ``(commit LSN, commit LSN, streaming, index)``, the commit recording its first and
        complete-through positions as the job does. Returns the silver version it committed."""
        events = [Ev(op, (lsn, lsn, STREAMING_PHASE, i), row)
                  for lsn, changes in transactions for i, (op, row) in enumerate(changes)]
        seqs = [tuple(e.seq4()) for e in events]
        positions = CommitPositions(complete_through=max(seqs), first_seq=min(seqs), connector="postgres")
        self.batches += 1
        result = self.writer.apply(replace(self.stream.batch(events), positions=positions), self.batches)
        assert result.silver_version is not None
        return int(result.silver_version)


def hooked(dsn: str, after_position: Callable[[], None],
           before_snapshot: Callable[[], None] | None = None) -> psycopg.Connection[Any]:
    """A connection for the reconciler that runs ``before_snapshot`` once before the first statement
    it sends (its transaction has not begun), and ``after_position`` once right after the server
    answered the statement reading the WAL position: the reconciler's snapshot and its position P are
    taken by then, so whatever ``after_position`` commits is after P and invisible to that snapshot."""

    class Cursor(psycopg.Cursor[Any]):
        pending = {"before": before_snapshot, "after": after_position}

        def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,
                    binary: bool | None = None) -> Any:
            before = Cursor.pending.pop("before", None)
            if before is not None:
                before()
            out = super().execute(query, params, prepare=prepare, binary=binary)
            if "pg_current_wal" in str(query):
                after = Cursor.pending.pop("after", None)
                if after is not None:
                    after()
            return out

    return psycopg.connect(dsn, cursor_factory=Cursor)


@contextmanager
def items_source(pg, name: str) -> Iterator[tuple[str, psycopg.Connection[Any]]]:  # type: ignore[no-untyped-def]
    """A database of its own with ``public.items (id, name)``: its DSN and an autocommit session on it."""
    dsn = pg.create_database(name)
    with psycopg.connect(dsn, autocommit=True) as writer:
        writer.execute("CREATE TABLE public.items (id bigint PRIMARY KEY, name text)")
        yield dsn, writer


def reconcile(silver: Silver, conn: psycopg.Connection[Any], table: str = "public.items",
              **options: Any) -> RuleResult:
    return check_table(silver.table, rules=["source_reconciliation"], source_connection=conn,
                       source_table=table, buckets=4, leaf_rows=2, **options).results[0]


def problems(result: RuleResult) -> dict[int, str]:
    assert result.failing is not None, result.reason
    return dict(zip(result.failing["id"], result.failing["_problem"]))


def test_silver_ahead_of_the_source_snapshot_is_read_as_of_it(spark: SparkSession, tmp_path: Path, pg) -> None:  # type: ignore[no-untyped-def]
    silver = Silver.create(spark, tmp_path)
    with items_source(pg, "quality_in_flight_ahead") as (dsn, writer):
        # two transactions before the reconciler's snapshot, in silver's version v1
        c0 = commit(writer, "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')")
        c1 = commit(writer, "UPDATE items SET name = 'b2' WHERE id = 2", "DELETE FROM items WHERE id = 6")
        v1 = silver.apply((c0, [("c", {"id": i, "name": n}) for i, n in enumerate("abcdef", start=1)]),
                          (c1, [("u", {"id": 2, "name": "b2"}), ("d", {"id": 6, "name": "f"})]))
        later: dict[str, int] = {}

        def in_flight() -> None:
            """Other sessions and the pipeline, while the reconciler holds its snapshot at P."""
            # the source as it stands at P, kept to show what silver's newest version would report
            writer.execute("CREATE TABLE public.items_at_p AS SELECT * FROM items")
            later["c2"] = commit(writer, "UPDATE items SET name = 'a2' WHERE id = 1",
                                 "UPDATE items SET name = 'c2' WHERE id = 3")
            later["c3"] = commit(writer, "INSERT INTO items VALUES (7, 'g')")
            later["c4"] = commit(writer, "DELETE FROM items WHERE id = 4")
            # the pipeline is quick: silver holds all of it (v2, v3) before the reconciler reads silver
            later["v2"] = silver.apply((later["c2"], [("u", {"id": 1, "name": "a2"}), ("u", {"id": 3, "name": "c2"})]),
                                       (later["c3"], [("c", {"id": 7, "name": "g"})]))
            later["v3"] = silver.apply((later["c4"], [("d", {"id": 4, "name": "d"})]))

        with hooked(dsn, in_flight) as conn:
            result = reconcile(silver, conn)
        # the hook ran inside the reconciliation: the changes were committed after its snapshot
        assert set(later) == {"c2", "c3", "c4", "v2", "v3"}, "the reconciler never read its position"
        assert [v.version for v in table_versions(silver.table)][-3:] == [v1, later["v2"], later["v3"]]

        # no difference: silver was read as of P (version v1), neither at its newest version v3 nor at v2
        assert result.passed, result.reason
        assert result.failed_rows == 0 and "every key range's checksum matches" in result.reason
        assert result.reason.startswith("5 silver rows, 5 source rows"), result.reason
        match = AS_OF.search(result.reason)
        assert match is not None, result.reason
        version, position = int(match.group(1)), lsn_from_text(match.group(2))
        assert version == v1, result.reason
        # P is the reconciler's own: after v1's newest commit, before every change in flight
        assert c1 <= position < later["c2"] < later["c3"] < later["c4"], (c1, position, later)
        # exact: v2's first change ranks after P, so nothing of v2 belongs to P (no replay note)
        assert "not replayed" not in result.reason

        # the same source state against silver's newest version: the in-flight changes, as differences
        newest = lsn_to_text(later["c4"])
        with psycopg.connect(dsn) as conn:
            stale = reconcile(silver, conn, "public.items_at_p", source_position=newest)
            assert not stale.passed and stale.failed_rows == 4, stale.reason
            assert f"silver version {later['v3']} as of source position {newest}" in stale.reason
            assert problems(stale) == {1: DIFFERS, 3: DIFFERS, 4: MISSING_IN_SILVER, 7: MISSING_AT_SOURCE}
            # ... which are not errors of silver: its newest version is the source as it stands now
            now = reconcile(silver, conn, source_position=newest)
            assert now.passed, now.reason
            assert now.reason.startswith("5 silver rows, 5 source rows"), now.reason


def test_silver_behind_the_source_snapshot_is_not_compared(spark: SparkSession, tmp_path: Path, pg) -> None:  # type: ignore[no-untyped-def]
    silver = Silver.create(spark, tmp_path)
    with items_source(pg, "quality_in_flight_behind") as (dsn, writer):
        c0 = commit(writer, "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        silver.apply((c0, [("c", {"id": i, "name": n}) for i, n in enumerate("abc", start=1)]))
        # committed at the source, not yet in silver: the pipeline lags
        c1 = commit(writer, "UPDATE items SET name = 'b2' WHERE id = 2", "INSERT INTO items VALUES (4, 'd')")

        with psycopg.connect(dsn) as conn:
            # silver cannot be read as of the snapshot's position (at or after c1): no comparison of
            # the older silver against it (that would report the lag's two keys as differences)
            with pytest.raises(AuditError, match=rf"complete through {lsn_to_text(c0)}\)") as raised:
                reconcile(silver, conn)
            unreached = re.search(r"has not reached source position ([0-9A-F]+/[0-9A-F]+) yet", str(raised.value))
            assert unreached is not None, raised.value
            assert lsn_from_text(unreached.group(1)) >= c1, raised.value  # the reconciler's own, after the lag
            # the reconciler ended its snapshot even so: the connection is usable and not in a transaction
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            # the lag, compared on purpose (silver as of c0, the source read now): exactly its keys
            lagging = reconcile(silver, conn, source_position=lsn_to_text(c0))
            assert problems(lagging) == {2: DIFFERS, 4: MISSING_IN_SILVER}, lagging.reason


def test_an_asynchronous_commit_the_snapshot_sees_is_within_its_position(  # type: ignore[no-untyped-def]
        spark: SparkSession, tmp_path: Path, pg) -> None:
    """With ``synchronous_commit = off`` (a common setting, per server, session or transaction) a commit
    is visible before its WAL is written: ``pg_current_wal_lsn()``, the WAL *write* position, stays
    below it for up to ``wal_writer_delay``. The snapshot's position must still cover every commit the
    snapshot sees, else silver is read as of a version without it and its rows are false differences."""
    silver = Silver.create(spark, tmp_path)
    with items_source(pg, "quality_in_flight_async") as (dsn, writer):
        writer.execute("CREATE TABLE public.other (n int)")
        c0 = commit(writer, "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        silver.apply((c0, [("c", {"id": i, "name": n}) for i, n in enumerate("abc", start=1)]))
        state: dict[str, int] = {}

        def just_before() -> None:
            """An asynchronous commit right before the reconciler begins its transaction."""
            # another table's asynchronous commit first: it wakes the WAL writer from its idle
            # hibernation (a hibernating one is woken by every asynchronous commit and writes it at
            # once); back in its wal_writer_delay (200 ms) rounds, it leaves the next one unwritten
            commit(writer, "INSERT INTO other VALUES (1)", synchronous=False)
            time.sleep(0.3)
            state["c1"] = commit(writer, "UPDATE items SET name = 'b2' WHERE id = 2", synchronous=False)

        def applied() -> None:
            # the pipeline streams and applies it (once written) before the reconciler reads silver
            state["v2"] = silver.apply((state["c1"], [("u", {"id": 2, "name": "b2"})]))

        with hooked(dsn, applied, before_snapshot=just_before) as conn:
            result = reconcile(silver, conn)
        assert set(state) == {"c1", "v2"}, "the reconciler never read its position"
        # the snapshot saw the update (committed before it began), so silver must be read with it; read
        # at the WAL write position, the reconciler took version 1 and reported id 2 as differing
        assert result.passed, result.reason
        match = AS_OF.search(result.reason)
        assert match is not None, result.reason
        assert int(match.group(1)) == state["v2"], result.reason
        assert lsn_from_text(match.group(2)) >= state["c1"], (match.group(2), lsn_to_text(state["c1"]))
