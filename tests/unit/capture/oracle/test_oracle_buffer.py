"""LogMiner transaction buffer: a transaction far larger than the memory threshold, on the replay
connection (recorded V$LOGMNR_CONTENTS rows, no Oracle here).

``log.mining.buffer.type=sqlite`` keeps at most ``log.mining.buffer.memory.threshold`` rows of an open
transaction in memory (the rest in the local spill store), and every poll hands over at most
``max.batch.size`` records; the events stay complete and in redo order. Memory is checked twice:
rows held in Python objects (counted by the buffer after every poll) and the tracemalloc peak of the
whole stream, against the same stream with the default ``memory`` buffer.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from oracle_recorded import RecordedOracle, customers, delete_sql, insert_sql, redo

from lakecdc.capture.oracle import connection as oraconn
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.connector import OracleConnector
from lakecdc.capture.oracle.streaming import OracleStreamingSource

BASE = {"topic.prefix": "server1", "database.hostname": "db", "database.dbname": "ORCLCDB",
        "database.pdb.name": "ORCLPDB1", "database.user": "c##dbzuser", "database.password": "secret-pw",
        "table.include.list": "DEBEZIUM\\.CUSTOMERS", "log.mining.sleep.time.default.ms": "0"}
BIG = bytes.fromhex("0a00000001000000")
SMALL = bytes.fromhex("0b00000001000000")
ROLLED_BACK = bytes.fromhex("0c00000001000000")
ROWS = 5_000
THRESHOLD = 100
BATCH = 250


def row_values(i: int) -> dict[str, str | None]:
    return {"ID": str(i), "FIRST_NAME": f"first-{i}", "LAST_NAME": "L" * 40, "EMAIL": f"user{i}@example.com"}


def big_transaction() -> list[tuple[Any, ...]]:
    """A batch job's transaction of ROWS inserts, with a small transaction committed inside it, a
    rollback to savepoint undoing one of its rows after the spill, and a large rolled-back one."""
    rows = [redo(100, 6, BIG)]
    scn = 101
    for i in range(ROWS):
        rows.append(redo(scn, 1, BIG, insert_sql("DEBEZIUM", "CUSTOMERS", row_values(i)), "DEBEZIUM", "CUSTOMERS",
                         row_id=f"ROW{i:012d}"))
        scn += 1
        if i == ROWS // 2:  # another session commits while the batch runs
            rows.append(redo(scn, 1, SMALL, insert_sql("DEBEZIUM", "CUSTOMERS", row_values(10**6)), "DEBEZIUM",
                             "CUSTOMERS", row_id="SMALLROW"))
            rows.append(redo(scn + 1, 7, SMALL))
            scn += 2
        if i < 3 * THRESHOLD:
            rows.append(redo(scn, 1, ROLLED_BACK, insert_sql("DEBEZIUM", "CUSTOMERS", row_values(2 * 10**6 + i)),
                             "DEBEZIUM", "CUSTOMERS", row_id=f"RB{i}"))
            scn += 1
    undone = ROWS - 10  # "rollback to savepoint" of the batch's row ROWS-10, written after it
    rows.append(redo(scn, 2, BIG, delete_sql("DEBEZIUM", "CUSTOMERS", row_values(undone)), "DEBEZIUM", "CUSTOMERS",
                     row_id=f"ROW{undone:012d}", rollback=1))
    rows.append(redo(scn + 1, 36, ROLLED_BACK))
    rows.append(redo(scn + 2, 7, BIG))
    return rows


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedOracle:
    # a small stream first, so that lazy imports and compiled patterns are not counted in a peak
    warm = [redo(100, 6, SMALL), redo(101, 1, SMALL, insert_sql("DEBEZIUM", "CUSTOMERS", row_values(1)), "DEBEZIUM",
                                      "CUSTOMERS"), redo(102, 7, SMALL)]
    stream(RecordedOracle([customers()], scns=[99, 10**6], redo_rows=warm), tmp_path_factory.mktemp("warm"),
           **{"log.mining.buffer.type": "sqlite", "log.mining.buffer.drop.on.stop": "true"})
    return RecordedOracle([customers()], scns=[99, 10**6], redo_rows=big_transaction())


def stream(db: RecordedOracle, tmp_path: Path, **extra: str) -> dict[str, Any]:
    """Stream the recorded redo; keeps only what the checks need (records are dropped as they come)."""
    oraconn.set_connection_factory(db.connect)
    db.connections.clear()
    config = OracleConnectorConfig.from_properties({**BASE, **extra})
    connector = OracleConnector(config, show_progress=False)
    source = OracleStreamingSource(config, connector.modes, connector.namer, sleep=lambda s: None)
    ids: list[int] = []
    largest_poll = 0
    offsets: list[tuple[int, dict[str, Any] | None]] = []  # (records handed over so far, offset)
    try:
        source.start({"scn": "99"})
        gc.collect()
        tracemalloc.start()  # what streaming allocates: the buffer, the emission, the hand-overs
        for _ in range(200):
            out: list[Any] = []
            source.poll(out, 10_000, 0)
            largest_poll = max(largest_poll, len(out))
            ids.extend(int(r.key["ID"]) for r in out if r.value is not None)
            offsets.append((len(ids), source.committable_offset()))
            if source._window is None and source._next_start >= 10**6 - 1:
                break
        most_rows_held = source.buffer.peak_in_memory  # counted at every row buffered, spilled or released
        spill_path = source.buffer.spill.path if source.buffer.spill is not None else None
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        source.close()
    finally:
        tracemalloc.stop()
        oraconn.set_connection_factory(None)
    return {"ids": ids, "largest_poll": largest_poll, "rows_held": most_rows_held, "peak": peak,
            "offsets": offsets, "spill_path": spill_path}


def expected_ids() -> list[int]:
    big = [i for i in range(ROWS) if i != ROWS - 10]
    return [10**6] + big  # the small transaction commits first


def test_large_transaction_spills_and_is_emitted_whole_in_bounded_batches(recorded: RecordedOracle,
                                                                          tmp_path: Path) -> None:
    spilled = stream(recorded, tmp_path, **{"log.mining.buffer.type": "sqlite",
                                            "log.mining.buffer.memory.threshold": str(THRESHOLD),
                                            "max.batch.size": str(BATCH), "log.mining.buffer.drop.on.stop": "true"})
    assert spilled["ids"] == expected_ids()  # complete, in redo order, rolled-back rows left out
    assert spilled["largest_poll"] <= BATCH
    # per open transaction at most THRESHOLD + 1 rows, the moment before they move to the store
    assert spilled["rows_held"] <= 2 * (THRESHOLD + 1) + 1
    assert spilled["spill_path"] is not None and not spilled["spill_path"].exists()  # drop.on.stop
    in_memory = stream(recorded, tmp_path, **{"max.batch.size": str(BATCH)})
    assert in_memory["ids"] == expected_ids()
    assert in_memory["rows_held"] >= ROWS - 10  # Debezium's memory buffer holds the whole transaction
    # every buffered row costs a dict of ~21 values: the spilled stream's peak is a fraction of it
    assert spilled["peak"] * 3 < in_memory["peak"], (spilled["peak"], in_memory["peak"])


def test_commit_is_in_the_offset_only_once_all_its_records_are_handed_over(recorded: RecordedOracle,
                                                                           tmp_path: Path) -> None:
    result = stream(recorded, tmp_path, **{"log.mining.buffer.type": "sqlite",
                                           "log.mining.buffer.memory.threshold": str(THRESHOLD),
                                           "max.batch.size": str(BATCH)})
    big_commit = str(recorded.redo_rows[-1][0])
    with_big = [handed for handed, offset in result["offsets"]
                if offset is not None and offset["commit_scn"].startswith(big_commit + ":")]
    # an offset stored while the transaction is being handed over must not claim its commit: a
    # restart from it emits the whole transaction again; it is claimed once every record is out
    assert with_big and min(with_big) == len(expected_ids())
    polls_handing_over = [h for h, _ in result["offsets"] if 1 < h < len(expected_ids())]
    assert len(polls_handing_over) >= ROWS // BATCH - 1
    assert result["spill_path"] is not None and result["spill_path"].exists()  # kept: drop.on.stop=false
    result["spill_path"].unlink()


def test_transaction_over_the_events_threshold_is_abandoned(recorded: RecordedOracle, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    result = stream(recorded, tmp_path, **{"log.mining.buffer.transaction.events.threshold": "1000",
                                           "max.batch.size": str(BATCH)})
    assert result["ids"] == [10**6]  # Debezium's rule: a transaction over the threshold is not emitted
    assert "log.mining.buffer.transaction.events.threshold=1000" in caplog.text
