"""Transformed topics through the whole pipeline: PostgreSQL -> ``lakecdc capture`` with transforms ->
broker -> the ingest job -> Iceberg tables.

- ``ByLogicalTableRouter`` merges two tables whose keys overlap into one topic: the ingest names the
  lake tables after the routed topic and keeps the rows apart by the key field the router adds
  (``__dbz__physicalTableIdentifier``), through a snapshot, an update and a delete;
- ``ExtractNewRecordState`` (limited to a third table by a predicate) removes the envelope: the
  ingest refuses those records as dead letters whose reason names the transform, and the other
  topic's tables are written all the same.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from harness import run_sql
from pg_slots import drop_slot
from test_pg_conformance import fresh_database
from test_pg_transforms_conformance import properties_file

from lakecdc.capture.runner import run_capture
from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SETUP = """
DROP TABLE IF EXISTS items, things, flat CASCADE;
CREATE TABLE items (id int PRIMARY KEY, name text);
CREATE TABLE things (id int PRIMARY KEY, name text);
CREATE TABLE flat (id int PRIMARY KEY, name text);
INSERT INTO items VALUES (1, 'item one'), (2, 'item two');
INSERT INTO things VALUES (1, 'thing one');
INSERT INTO flat VALUES (1, 'flat');
"""

CHANGES = """
UPDATE items SET name = 'item one, renamed' WHERE id = 1;
DELETE FROM things WHERE id = 1;
INSERT INTO things VALUES (2, 'thing two');
"""


def test_routed_topic_into_the_lake_and_unwrapped_topic_refused(pg: Any, broker: Any, spark: Any,
                                                                tmp_path: Path) -> None:
    prefix = f"tr{uuid.uuid4().hex[:6]}"
    dsn = fresh_database(pg, "smtlake")
    run_sql(dsn, SETUP)
    config = properties_file(tmp_path / "connector.properties", {
        "name": prefix, "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub", "publication.autocreate.mode": "filtered",
        "table.include.list": "public.items,public.things,public.flat",
        "offset.storage.file.filename": str(tmp_path / "offsets.json"), **pg.connection_properties("smtlake"),
        "transforms": "merge,unwrap",
        "transforms.merge.type": "io.debezium.transforms.ByLogicalTableRouter",
        "transforms.merge.topic.regex": rf"{prefix}\.public\.(items|things)",
        "transforms.merge.topic.replacement": f"{prefix}.all_rows",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.predicate": "isFlat",
        "predicates": "isFlat",
        "predicates.isFlat.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.isFlat.pattern": rf"{prefix}\.public\.flat",
    })
    try:
        run_capture(config, f"kafka:{broker.bootstrap_servers}", stop_when_idle=2, show_progress=False)  # snapshot
        run_sql(dsn, CHANGES)
        run_capture(config, f"kafka:{broker.bootstrap_servers}", stop_when_idle=2, show_progress=False)  # stream
    finally:
        drop_slot(pg.dsn_for("postgres"), f"{prefix}_slot")
    warehouse = spark.conf.get("spark.sql.catalog.lake.warehouse")
    cfg = IngestConfig.from_properties({
        "name": prefix, "kafka.bootstrap.servers": broker.bootstrap_servers, "topic.prefix": prefix,
        "warehouse": warehouse, "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
        "table.name.format.silver": f"{prefix}_silver.{{table}}", "progress.path": str(tmp_path / "progress"),
        "batch.max.wait.ms": "500"})

    summary = run_ingest(cfg, "available-now", spark=spark)

    assert summary.failed_tables == {}
    silver = sorted((r["id"], r["__dbz__physicalTableIdentifier"], r["name"])
                    for r in spark.table(f"lake.{prefix}_silver.all_rows").collect())
    assert silver == [(1, f"{prefix}.public.items", "item one, renamed"), (2, f"{prefix}.public.items", "item two"),
                      (2, f"{prefix}.public.things", "thing two")]
    bronze_ops = sorted((r["_op"], r["id"], r["__dbz__physicalTableIdentifier"].rsplit(".", 1)[-1])
                        for r in spark.table(f"lake.{prefix}_bronze.all_rows").collect())
    assert ("d", 1, "things") in bronze_ops and ("u", 1, "items") in bronze_ops
    assert summary.dead_letters == 1
    [dead] = [r for r in spark.table("lake.lakecdc.dead_letters").collect() if r.topic == f"{prefix}.public.flat"]
    assert "ExtractNewRecordState" in dead.reason and "envelope" in dead.reason
    assert not spark.catalog.tableExists(f"lake.{prefix}_silver.flat")
