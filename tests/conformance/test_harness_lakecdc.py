"""capture_with_lakecdc: drives the real ``lakecdc capture`` command as a subprocess.

These tests check the harness function (streaming detection, workload timing, idle stop,
failure reporting). Whether lakecdc's records equal Debezium's is the PostgreSQL connector's
conformance suite, which calls this function.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import capture_with_lakecdc, drop_slot
from shared_paths import SHARED_ROOT

from lakecdc.config.sources import load_properties
from lakecdc.devstack.postgres import Postgres
from lakecdc.errors import ConformanceError

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

SHARED = SHARED_ROOT / "conformance/postgres"
SETUP = (SHARED / "pg_setup.sql").read_text()
WORKLOAD = (SHARED / "pg_workload.sql").read_text()


def fresh_database(pg: Postgres, name: str) -> str:
    import psycopg

    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
    return pg.create_database(name)


def write_config(pg: Postgres, dbname: str, work: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    props = load_properties(SHARED / "workload.properties", environ={})
    props.update(pg.connection_properties(dbname))
    props["database.password"] = "env:HARNESS_TEST_PGPASSWORD"  # the file never holds the password
    props["offset.storage.file.filename"] = str(work / "offsets.dat")
    props.update(extra)
    path = work / "connector.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path, props


def test_capture_runs_the_workload_while_streaming_and_stops_when_idle(pg: Postgres, tmp_path: Path) -> None:
    dsn = fresh_database(pg, "harness_lakecdc")
    config, props = write_config(pg, "harness_lakecdc", tmp_path)
    try:
        records = capture_with_lakecdc(config, setup_sql=SETUP, workload_sql=WORKLOAD, workload_dsn=dsn,
                                       slot_name=props["slot.name"], work_dir=tmp_path,
                                       env={"HARNESS_TEST_PGPASSWORD": pg.password})
    finally:
        drop_slot(dsn, props["slot.name"], props["publication.name"])
    ops = [r["value"]["payload"].get("op") for r in records if r["value"] is not None]
    snapshot_rows = ops.count("r")
    assert snapshot_rows == 4  # pg_setup.sql inserts 2 + 1 + 1 rows
    assert set(ops[:snapshot_rows]) == {"r"}  # the workload ran only after the snapshot
    last = next(r for r in reversed(records) if r["topic"] == "dbz.public.customers" and r["value"])
    assert last["value"]["payload"]["after"]["name"] == "Frank"  # the last workload statement was captured
    assert {"c", "u", "d", "t"} <= set(ops)
    assert all(set(r) == {"topic", "key", "value", "headers"} for r in records)
    assert pg.password not in (tmp_path / "lakecdc.log").read_text()


def test_capture_failure_raises_with_the_command_output(pg: Postgres, tmp_path: Path) -> None:
    dsn = fresh_database(pg, "harness_lakecdc_bad")
    config, props = write_config(pg, "harness_lakecdc_bad", tmp_path, **{"slot.nam": "typo"})
    with pytest.raises(ConformanceError) as info:
        capture_with_lakecdc(config, setup_sql="CREATE TABLE customers (id int primary key)", workload_sql="SELECT 1",
                             workload_dsn=dsn, slot_name=props["slot.name"], work_dir=tmp_path,
                             env={"HARNESS_TEST_PGPASSWORD": pg.password}, start_timeout_s=60)
    message = str(info.value)
    assert "exited" in message and "before streaming" in message
    assert "slot.nam" in message and "did you mean 'slot.name'" in message


def test_capture_into_kafka_equals_the_debezium_golden_per_topic(pg: Postgres, tmp_path: Path) -> None:
    """The real capture publishing through KafkaSink into tansu: per topic, Debezium's records."""
    from harness import MaskRules, compare_by_topic, format_report, load_capture

    from lakecdc.devstack.broker import Broker

    dbname = "dbzref"  # the golden's database name: it is in every source block
    dsn = fresh_database(pg, dbname)
    config, props = write_config(pg, dbname, tmp_path)
    with Broker(base_dir=tmp_path) as broker:  # a broker of its own: topic names as in the golden file
        try:
            records = capture_with_lakecdc(config, setup_sql=SETUP, workload_sql=WORKLOAD, workload_dsn=dsn,
                                           slot_name=props["slot.name"], work_dir=tmp_path,
                                           env={"HARNESS_TEST_PGPASSWORD": pg.password},
                                           kafka=broker.bootstrap_servers)
        finally:
            drop_slot(dsn, props["slot.name"], props["publication.name"])
    golden = load_capture(SHARED / "workload.jsonl")
    differences = compare_by_topic(golden, records, MaskRules.for_connector("postgres", compare_headers=False))
    assert differences == [], format_report(differences, len(golden), len(records))
    assert sum(1 for r in records if r["value"] is None) == 4  # tombstones survive Kafka as nulls
