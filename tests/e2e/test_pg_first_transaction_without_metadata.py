"""PostgreSQL without transaction metadata (``provide.transaction.metadata=false``, Debezium's default):
the first transaction streamed after the snapshot still ranks after the snapshot rows (issue 12).

Transaction C begins after the replication slot started building its snapshot and commits after the
slot's consistent point (the choreography of ``test_consistency_invariants``: A is open while the slot
starts, B begins while it builds, C begins once A ended). C's events carry LSNs below the snapshot
position and a null ``source.sequence[0]``, and without transaction metadata no END marker tells
their commit: ranked as they come they are older than the snapshot rows and silver refuses C's
updates and deletes. ``lakecdc.ingest.ordering.rank_after_snapshot`` ranks them right after the
snapshot. Checked through to silver on Iceberg and Delta, in one micro-batch and one event per
micro-batch, with ordinary transactions after C.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from e2e_lake import check, compare_silver
from e2e_pipeline import CaptureRun, PgPipeline, unique_name
from test_consistency_invariants import slot_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

KEYS = {"accounts": ("id",)}


def test_first_transaction_after_the_snapshot_without_transaction_metadata(pg, broker, spark,
                                                                          tmp_path: Path) -> None:
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("firsttx"),
                      capture={"provide.transaction.metadata": "false"})
    try:
        with pipe.connect() as conn, pipe.connect() as a, pipe.connect() as b, pipe.connect() as c, \
                pipe.connect() as admin:
            conn.execute("CREATE TABLE public.accounts (id int PRIMARY KEY, balance bigint NOT NULL, note text)")
            conn.execute("CREATE TABLE public.noise (id int PRIMARY KEY, v int)")
            conn.execute("INSERT INTO public.noise VALUES (1, 0), (2, 0)")
            conn.execute("INSERT INTO public.accounts SELECT i, 100 * i, 'seed' FROM generate_series(1, 6) i")
            a.execute("BEGIN")
            a.execute("UPDATE public.noise SET v = v + 1 WHERE id = 1")
            capture = CaptureRun(pipe.properties, pipe.broker.bootstrap_servers, idle_s=6)
            wait_until(lambda: slot_state(pipe)[0], "the replication slot was not created")
            time.sleep(0.5)
            b.execute("BEGIN")
            b.execute("UPDATE public.noise SET v = v + 1 WHERE id = 2")
            a.execute("COMMIT")
            admin.execute("SELECT pg_log_standby_snapshot()")
            time.sleep(0.5)
            c.execute("BEGIN")  # C: written before the consistent point, committed after it
            c.execute("UPDATE public.accounts SET balance = balance - 7, note = 'c1' WHERE id = 1")
            c.execute("UPDATE public.accounts SET balance = balance + 7, note = 'c2' WHERE id = 2")
            c.execute("DELETE FROM public.accounts WHERE id = 3")
            c.execute("INSERT INTO public.accounts VALUES (7, 700, 'c3')")
            c.execute("UPDATE public.accounts SET note = 'c4' WHERE id = 1")  # a row twice in C
            b.execute("COMMIT")
            admin.execute("SELECT pg_log_standby_snapshot()")
            wait_until(lambda: slot_state(pipe)[1], "the replication slot never became consistent")
            time.sleep(1.0)  # the snapshot runs on the exported snapshot (C is not in it)
            c.execute("UPDATE public.accounts SET note = 'c5' WHERE id = 4")  # after the consistent point
            c.execute("COMMIT")
            conn.execute("UPDATE public.accounts SET balance = balance + 1 WHERE id IN (2, 5)")  # later transactions
            conn.execute("UPDATE public.accounts SET note = 'after' WHERE id = 7")
            capture.join(300)

        pipe.add_lake("ice1", "iceberg", list(KEYS), **{"batch.max.records": "1"})
        pipe.add_lake("dlt", "delta", list(KEYS))
        pipe.add_lake("dlt1", "delta", list(KEYS), **{"batch.max.records": "1"})
        pipe.ingest_all()
        source = pipe.source_tables(KEYS)["accounts"]
        assert source.rows[(1,)]["note"] == "c4" and (3,) not in source.rows and (7,) in source.rows
        # silver took every change of C: none refused as older than the snapshot rows
        check(compare_silver(source, lake.silver("accounts"), f"[{label}]", lake.formats["accounts"])
              for label, (_, lake) in pipe.lakes.items())
        for label, (_, lake) in pipe.lakes.items():
            bronze = lake.bronze("accounts").to_pylist()
            snapshot_lsn = max(r["_seq"][1] for r in bronze if r["_op"] == "r")
            crossing = [r for r in bronze if r["_op"] != "r" and r["_seq"][1] < snapshot_lsn]
            # C really was open across the snapshot: its early events lie below the snapshot position
            assert len(crossing) == 5, (label, crossing)
            assert all(r["_seq"][0] > snapshot_lsn for r in crossing), (label, crossing)  # ranked after it
            assert len(bronze) == 6 + 6 + 3, (label, len(bronze))  # every change once: 6 rows, C's 6, 3 later
    finally:
        pipe.close()
