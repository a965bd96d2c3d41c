"""Behind a backlog the Spark readers grow their batches (``batch.backlog.max.records``), except when a
table is written by delta-rs, which collects every batch through the driver (``job.backlog_records``)."""

from __future__ import annotations

import pytest

from lakecdc.ingest import job


@pytest.mark.parametrize("props, delta_in_spark, expected", [
    ({"table.format": "iceberg"}, False, 400),  # batches grow behind a backlog (4x by default)
    ({"table.format": "delta"}, True, 400),  # Delta through Spark: the rows stay on the executors
    ({"table.format": "delta"}, False, 100),  # delta-rs writes from the driver: no growth
    ({"table.format": "iceberg", "table.mapping.db.public.t.format": "delta"}, False, 100),  # one table
    ({"table.format": "delta", "batch.backlog.max.records": "300"}, False, 300),  # set: as set
])
def test_spark_readers_do_not_grow_batches_that_delta_rs_collects_through_the_driver(
        monkeypatch: pytest.MonkeyPatch, props: dict[str, str], delta_in_spark: bool, expected: int) -> None:
    from lakecdc.config.ingest import IngestConfig
    from lakecdc.writers import base

    monkeypatch.setattr(base, "delta_in_session", lambda spark: delta_in_spark)
    cfg = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "db",
                                        "batch.max.records": "100", **props})
    assert job.backlog_records(cfg, None) == expected  # type: ignore[arg-type]
