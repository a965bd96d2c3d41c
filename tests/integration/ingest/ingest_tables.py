"""Shared checks for ingest integration tests: golden records in, the source's final state out."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

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
    """The Iceberg tables (through Spark) hold the source's final state."""
    assert_final_state(lambda name: table_rows(spark, name),
                       lambda name: spark.catalog.tableExists(f"lake.{name}"), prefix)


def delta_rows(warehouse: Path, name: str) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(str(warehouse.joinpath(*name.split(".")))).to_pyarrow_table().to_pylist()


def delta_exists(warehouse: Path, name: str) -> bool:
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(str(warehouse.joinpath(*name.split("."))))


def assert_final_state(read: Callable[[str], list[dict]], exists: Callable[[str], bool], prefix: str) -> None:
    """Silver equals the source tables after pg_workload.sql; bronze holds every change once."""
    customers = read(f"{prefix}_silver.customers")
    # TRUNCATE customers removed every earlier row; Frank was inserted after it.
    assert [(r["id"], r["name"]) for r in customers] == [(6, "Frank")]
    frank = customers[0]
    assert frank["email"] == "frank@example.com" and frank["balance"] == Decimal("7.00")
    assert frank["created_at"].replace(tzinfo=timezone.utc) == datetime(2024, 9, 10, 11, 12, 13, tzinfo=timezone.utc)
    assert frank["active"] is True and frank["payload"] is None and list(frank["tags"]) == []
    assert frank["loyalty_points"] == 1
    audit = read(f"{prefix}_silver.audit_full")
    assert [(r["id"], r["note"], r["amount"]) for r in audit] == [
        (1, "changed", Decimal("99999999999999999999.123456789"))]
    assert bytes(audit[0]["b"]) == b"\x01\x02\xff" and audit[0]["i8"] == 9007199254740993
    bronze = read(f"{prefix}_bronze.customers")
    offsets = sorted(r["_offset"] for r in bronze)
    assert len(offsets) == 14 and len(set(offsets)) == 14  # every change once, none twice
    assert sorted(r["_op"] for r in bronze) == sorted("rrcudcdcudcutc")
    nopk = read(f"{prefix}_bronze.nopk_events")
    assert sorted(r["msg"] for r in nopk) == ["in-tx", "snapshot-row"]
    assert not exists(f"{prefix}_silver.nopk_events")
