"""Delete-ledger pruning by ``lakecdc maintain`` on real tables (Iceberg through Spark, delta-rs).

Removals at or before silver's newest truncate always go (the truncate's guard refuses every
event that old); ``ledger_retention`` also drops removals older than it. What must not change:
silver, and the refusals that still matter (a late event older than a kept delete stays out; one
older than the truncate stays out without its ledger row).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import SparkSession
from writer_harness import LONG, STR, Ev, Stream, TableReader

from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.run import Maintainer, maintain_tables
from lakecdc.writers.base import TableWriter

pytestmark = pytest.mark.integration




def _removals(reader: TableReader, s: Stream) -> list[tuple[object, int]]:
    return sorted((r["id"], r["_seq"][0]) for r in reader.rows(s.target.ledger_table) if r["_op"] == "d")


def test_ledger_loses_only_removals_that_no_longer_matter(setup: tuple[TableWriter, Maintainer],
                                                          spark: SparkSession) -> None:
    writer, maintainer = setup
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", [("id", LONG), ("name", STR)])
    reader = TableReader(writer)
    writer.apply(s.batch([Ev("c", 10 + i, {"id": i, "name": f"a{i}"}) for i in range(1, 5)]), 1)
    writer.apply(s.batch([Ev("d", 15, {"id": 1}), Ev("d", 16, {"id": 2})]), 2)
    writer.apply(s.batch([Ev("t", 20), Ev("c", 25, {"id": 3, "name": "after"}),
                          Ev("c", 26, {"id": 4, "name": "x"})]), 3)
    writer.apply(s.batch([Ev("d", 30, {"id": 3})]), 4)
    assert _removals(reader, s) == [(1, 15), (2, 16), (3, 30)]
    silver = reader.by_key(s.target.silver_table)
    ledger = [s.target.ledger_table]

    dry = maintain_tables([maintainer], MaintenanceOptions(dry_run=True), ledger)
    assert dry[0].removals_pruned == 2 and any("2 obsolete delete-ledger rows" in a for a in dry[0].actions)
    assert len(_removals(reader, s)) == 3  # a dry run changes nothing

    result = maintain_tables([maintainer], MaintenanceOptions(), ledger)[0]
    assert result.removals_pruned == 2 and "2 obsolete delete-ledger rows removed" in result.describe()
    assert _removals(reader, s) == [(3, 30)]  # the deletes before the truncate (seq 20) went
    assert reader.by_key(s.target.silver_table) == silver
    assert maintain_tables([maintainer], MaintenanceOptions(), ledger)[0].removals_pruned == 0

    # late events: older than the kept delete of 3, and older than the truncate for 1
    writer.apply(s.batch([Ev("u", 28, {"id": 3, "name": "late"}), Ev("u", 12, {"id": 1, "name": "late"})]), 5)
    assert set(reader.by_key(s.target.silver_table)) == {4}

    # a retention drops what is older than it (here: everything, the events' source times are 2023)
    result = maintain_tables([maintainer], MaintenanceOptions(ledger_retention=timedelta(days=1)), ledger)[0]
    assert result.removals_pruned == 1 and _removals(reader, s) == []
    assert set(reader.by_key(s.target.silver_table)) == {4}
