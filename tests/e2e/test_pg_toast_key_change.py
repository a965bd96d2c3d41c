"""Primary-key changes of rows with an unchanged TOASTed column, PostgreSQL -> Iceberg and Delta.

pgoutput does not resend an unchanged out-of-line value, so the create of a key change
(delete(old key) + create(new key), header ``__debezium.oldkey``) holds the placeholder for
``body``: silver must take it from the old key's row. Covered: the old row stored in silver by an
earlier run, an update then a key change in one transaction, a row inserted and moved in the
same run, and chained key changes (in separate transactions and within one). REPLICA IDENTITY
DEFAULT, so the delete's before image holds only the key. Then the same without transaction
metadata and one record per micro-batch, so every delete is applied a batch before its create:
hard deletes find the old row in bronze, soft deletes in the old key's soft-deleted silver row.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow.compute as pc
import pytest
from e2e_lake import check
from e2e_pipeline import PgPipeline, unique_name
from workloads.changelog import ChangeLog
from workloads.pg_scenario import big_text

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

KEYS = {"docs": ("id",)}
SCHEMA = ("CREATE TABLE docs (id int PRIMARY KEY, title text, body text)",
          "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL")  # always out of line (TOAST)


@pytest.fixture
def pipeline(pg, broker, spark, tmp_path: Path):
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("e2etoast"))
    yield pipe
    print("timings:", "; ".join(pipe.timings))
    pipe.close()


def test_key_change_keeps_unchanged_toast_value(pipeline: PgPipeline) -> None:
    rng = random.Random(20261122)
    pipeline.add_lake("ice", "iceberg", list(KEYS))
    pipeline.add_lake("dlt", "delta", list(KEYS))
    with pipeline.connect() as conn:
        for statement in SCHEMA:
            conn.execute(statement)
        identity = conn.execute("SELECT relreplident FROM pg_class WHERE relname = 'docs'").fetchone()
        assert identity == ("d",)  # REPLICA IDENTITY DEFAULT: old tuples carry the key only
        log = ChangeLog(conn, KEYS)

        with pipeline.capture_while():
            for i in range(1, 7):
                log.insert("docs", {"id": i, "title": f"doc {i}", "body": big_text(rng)})
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "inserts"))

        with pipeline.capture_while():
            log.update("docs", (1,), {"id": 101})  # the old row is in silver (previous run)
            with log.transaction():  # an update, then the key change, in one transaction
                log.update("docs", (2,), {"title": "retitled"})
                log.update("docs", (2,), {"id": 102})
            log.update("docs", (3,), {"id": 103})  # two chained key changes, two transactions
            log.update("docs", (103,), {"id": 203, "title": "moved twice"})
            with log.transaction():  # two chained key changes in one transaction
                log.update("docs", (4,), {"id": 104})
                log.update("docs", (104,), {"id": 204})
            log.insert("docs", {"id": 7, "title": "doc 7", "body": big_text(rng)})
            log.update("docs", (7,), {"id": 107})  # created and moved within one run
            log.update("docs", (5,), {"title": "only the title"})  # plain unchanged-TOAST update
        pipeline.ingest_all()
        check(pipeline.compare_all(log, "key changes with an unchanged TOAST column"))

    for label, (_, lake) in pipeline.lakes.items():
        # bronze keeps the events as captured: the moved rows' body is the placeholder there
        bronze = lake.bronze("docs")
        assert bronze is not None
        moved = bronze.filter(pc.is_valid(bronze["_old_key_json"])).to_pylist()
        assert sorted(r["id"] for r in moved) == [101, 102, 103, 104, 107, 203, 204], label
        assert all(r["body"] is None and list(r["_unavailable"]) == ["body"] for r in moved), label
        assert {r["id"]: r["_old_key_json"] for r in moved}[203] == '{"id":103}'


def test_key_change_split_across_micro_batches(pg, broker, spark, tmp_path: Path) -> None:
    rng = random.Random(20261123)
    pipeline = PgPipeline(pg, broker, spark, tmp_path, unique_name("e2etoastsplit"),
                          capture={"provide.transaction.metadata": "false"})
    try:
        one_record = {"batch.max.records": "1"}  # a key change's delete and create: two batches
        pipeline.add_lake("ice", "iceberg", list(KEYS), **one_record)
        pipeline.add_lake("dltsoft", "delta", list(KEYS), **one_record, **{"table.delete.mode": "soft"})
        with pipeline.connect() as conn:
            for statement in SCHEMA:
                conn.execute(statement)
            log = ChangeLog(conn, KEYS)
            with pipeline.capture_while():
                for i in range(1, 4):
                    log.insert("docs", {"id": i, "title": f"doc {i}", "body": big_text(rng)})
                log.update("docs", (1,), {"id": 101})
                with log.transaction():  # an update (the placeholder in bronze), then the key change
                    log.update("docs", (2,), {"title": "retitled"})
                    log.update("docs", (2,), {"id": 102})
                log.update("docs", (3,), {"id": 103})  # chained: 103's create is a placeholder in bronze
                log.update("docs", (103,), {"id": 203, "title": "moved twice"})
            summaries = pipeline.ingest_all()
            check(pipeline.compare_all(log, "key changes split across micro-batches"))
        for label, summary in summaries.items():
            assert summary.batches >= summary.events, f"{label}: {summary.batches} batches, {summary.events} events"
        _, soft = pipeline.lakes["dltsoft"]
        silver = soft.silver("docs")
        assert silver is not None
        deleted = {r["id"]: r for r in silver.to_pylist() if r["_is_deleted"]}
        assert sorted(deleted) == [1, 2, 3, 103]
        assert all(r["_deleted_at"] is not None and r["body"] for r in deleted.values())
    finally:
        print("timings:", "; ".join(pipeline.timings))
        pipeline.close()
