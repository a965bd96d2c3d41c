"""Shared checks for ingest integration tests: golden records in, the source's final state out."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

from ingest_broker import create_topics, golden_records, publish, publish_records

MALFORMED = b'{"schema":{"type":"struct","fields":[{"type":"int32"'


def publish_golden_with_a_malformed_record(broker, prefix: str) -> list[dict]:
    records = golden_records(prefix)
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    half = len(records) // 2
    publish_records(broker.bootstrap_servers, records[:half])
    publish(broker.bootstrap_servers, [(f"{prefix}.public.customers", b'{"id":999}', MALFORMED)])
    publish_records(broker.bootstrap_servers, records[half:])
    return records


def table_rows(spark, name: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.table(f"lake.{name}").collect()]


def snapshot_count(spark, name: str) -> int:
    return spark.sql(f"SELECT count(*) AS n FROM lake.{name}.snapshots").collect()[0].n


def assert_final_source_state(spark, prefix: str) -> None:
    customers = table_rows(spark, f"{prefix}_silver.customers")
    # TRUNCATE customers removed every earlier row; Frank was inserted after it.
    assert [(r["id"], r["name"]) for r in customers] == [(6, "Frank")]
    frank = customers[0]
    assert frank["email"] == "frank@example.com" and frank["balance"] == Decimal("7.00")
    assert frank["created_at"].replace(tzinfo=timezone.utc) == datetime(2024, 9, 10, 11, 12, 13, tzinfo=timezone.utc)
    assert frank["active"] is True and frank["payload"] is None and frank["tags"] == [] and frank["loyalty_points"] == 1
    audit = table_rows(spark, f"{prefix}_silver.audit_full")
    assert [(r["id"], r["note"], r["amount"]) for r in audit] == [
        (1, "changed", Decimal("99999999999999999999.123456789"))]
    assert audit[0]["b"] == bytearray(b"\x01\x02\xff") and audit[0]["i8"] == 9007199254740993
    bronze = table_rows(spark, f"{prefix}_bronze.customers")
    offsets = sorted(r["_offset"] for r in bronze)
    assert len(offsets) == 14 and len(set(offsets)) == 14  # every change once, none twice
    assert sorted(r["_op"] for r in bronze) == sorted("rrcudcdcudcutc")
    nopk = table_rows(spark, f"{prefix}_bronze.nopk_events")
    assert sorted(r["msg"] for r in nopk) == ["in-tx", "snapshot-row"]
    assert not spark.catalog.tableExists(f"lake.{prefix}_silver.nopk_events")
