"""A restart that finds every event already committed still publishes the point the tables hold.

The first run commits every transaction of the real Debezium output (pg_setup.sql + pg_workload.sql)
in a batch that has not read every partition to its end: the snapshot wait keeps the job's point,
and so each commit's ``lakecdc.complete-through``, at nothing (``consistency_point``). It is killed
before an end-of-data batch. The restarted job reads nothing new (its data offsets are committed, its
transaction markers consumed), and must still publish, once it has read everything, a point at the
highest change the tables hold -- with each table at its newest version, which holds exactly that.
Before, the restart floor was the recorded complete-through: the point published was "nothing" while
the tables held everything (on MariaDB, whose END markers carry no position, the point never reached
the last binlog position of the invariant test). Real Spark and delta-rs, no broker (as
``test_ingest_split_transactions``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_tables import delta_rows
from test_ingest_split_transactions import NOW, all_records, processor

from lakecdc.audit.consistency import latest_point, read_consistent
from lakecdc.audit.tables import LakeTable
from lakecdc.ingest.job_state import load_state
from lakecdc.ingest.reader import KafkaMicroBatch

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_restart_with_nothing_left_to_apply_publishes_what_the_tables_hold(spark, tmp_path: Path) -> None:
    records, warehouse, progress = all_records(), tmp_path / "lake", tmp_path / "progress"
    first = processor(spark, warehouse, progress)
    report = first.process(KafkaMicroBatch(records, NOW, at_end_of_data=False))
    assert report.held_events == 0 and report.tables  # everything released and committed
    assert load_state(progress).snapshot_pending_seq == [0, 0, 0, 0]  # but no point yet: the snapshot wait
    log = LakeTable.delta(warehouse, "lakecdc.consistency")
    assert latest_point(log) is None

    restarted = processor(spark, warehouse, progress, load_state(progress))  # the kill: a new job, same state
    resume = {t: restarted.start_offset(t, 0) for t in set(records.column("topic").to_pylist())}
    positions = zip(records.column("topic").to_pylist(), records.column("offset").to_pylist())
    unread = [i for i, (t, o) in enumerate(positions)
              if resume[t] is None or o > resume[t]]
    assert unread == []  # a reader resuming there gets nothing: only an end-of-data batch can move the point
    assert restarted.waits_for_end_of_data
    restarted.process(KafkaMicroBatch(records.slice(0, 0), NOW, at_end_of_data=True))

    point = latest_point(log)
    assert point is not None, "the restarted job published no consistency point"
    bronze = [n for n in point.versions if "_bronze." in n]
    held = max(tuple(r["_seq"]) for name in bronze for r in delta_rows(warehouse, name))
    assert point.complete_through == held and not restarted.waits_for_end_of_data
    from deltalake import DeltaTable

    for name, version in point.versions.items():  # each table's newest version holds exactly the point
        assert version == DeltaTable(str(warehouse.joinpath(*name.split(".")))).version(), name
    silver = [LakeTable.delta(warehouse, n) for n in point.versions if "_silver." in n]
    reads = read_consistent(silver, log=log)
    assert {n: len(r.rows) for n, r in reads.items()} == {t.name: len(t.pandas()) for t in silver}

    # Another job sharing the log publishes a later point for its own tables: it vouches for nothing here.
    import pyarrow as pa
    from deltalake import write_deltalake

    from lakecdc.audit.tables import AuditError

    other = {**log.arrow().to_pylist()[-1], "job": "other-job", "complete_through": [2**40, 2**40, 1, 0],
             "versions": '{"silver.other_table": 1}'}
    write_deltalake(log.uri, pa.Table.from_pylist([other], schema=log.arrow().schema), mode="append")
    assert latest_point(log, [t.name for t in silver]) == point
    again = read_consistent(silver, log=log)
    assert {n: r.version.version for n, r in again.items()} == {n: r.version.version for n, r in reads.items()}
    with pytest.raises(AuditError, match="has not reached source position"):
        read_consistent(silver, position=str(2**39), log=log)
