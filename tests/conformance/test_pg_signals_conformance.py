"""Signals, an incremental and a blocking snapshot through real Debezium 3.6.3 and through lakecdc,
compared record by record: the same signal-table workloads on the same PostgreSQL 18 database.

The workload pauses the incremental snapshot after its first chunk, changes rows (one already
read, rows of later chunks, a delete, an insert past the maximum key) and resumes it: the later
chunks must show the changed rows, the deleted one must not come back. The changes wait until the
first window's close watermark is committed, so they follow it in the WAL and both runs emit the
events in the same order. What differs by nature is masked: the watermark rows' generated ids
(``<uuid>-open``/``-close``) and their timestamps, besides the harness's positions and times.
The blocking snapshots' workload sleeps after each signal: Debezium reads on another thread, so a
change right after the signal could come before or after its rows. Its second blocking snapshot
has an additional condition (a whole SELECT of the red rows, as Debezium takes it).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from harness import MaskRules, assert_conformant, drop_slot
from test_pg_conformance import capture_with_lakecdc, debezium_with_retry, fresh_database

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

SETUP = """
DROP TABLE IF EXISTS debezium_signal, items CASCADE;
CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
CREATE TABLE items (id int PRIMARY KEY, label text, color text);
INSERT INTO items SELECT g, 'item' || g, CASE WHEN g % 2 = 0 THEN 'blue' ELSE 'red' END FROM generate_series(1, 12) g;
INSERT INTO debezium_signal VALUES ('before-start', 'log', '{"message": "written before the connector started"}');
"""

WORKLOAD = """
INSERT INTO debezium_signal VALUES ('s-log', 'log', '{"message": "hello from a signal"}');
INSERT INTO debezium_signal VALUES ('s-bogus', 'no-such-action', '{}');
BEGIN;
INSERT INTO debezium_signal VALUES ('ad-hoc-1', 'execute-snapshot', '{"data-collections": ["public.items"], "type": "incremental"}');
INSERT INTO debezium_signal VALUES ('hold', 'pause-snapshot', NULL);
COMMIT;
DO $$ BEGIN
  FOR i IN 1..1200 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM debezium_signal WHERE type = 'snapshot-window-close');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
UPDATE items SET label = 'changed' WHERE id = 8;
DELETE FROM items WHERE id = 9;
UPDATE items SET color = 'green' WHERE id = 2;
INSERT INTO items VALUES (13, 'late', 'red');
INSERT INTO debezium_signal VALUES ('go-on', 'resume-snapshot', NULL);
"""  # noqa: E501 (SQL statements, one a line)

BLOCKING_WORKLOAD = """
INSERT INTO debezium_signal VALUES ('b-1', 'execute-snapshot', '{"data-collections": ["public.items"], "type": "blocking"}');
SELECT pg_sleep(10);
UPDATE items SET label = 'after' WHERE id = 3;
INSERT INTO debezium_signal VALUES ('b-red', 'execute-snapshot', '{"data-collections": ["public.items"], "type": "blocking", "additional-conditions": [{"data-collection": "public.items", "filter": "SELECT * FROM public.items WHERE color = ''red'' ORDER BY id"}]}');
SELECT pg_sleep(10);
UPDATE items SET label = 'later' WHERE id = 4;
"""  # noqa: E501 (SQL statements, one a line)

WATERMARK = re.compile(r"^[0-9a-f-]{36}-(open|close)$")


def mask_watermarks(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Watermark rows carry generated ids and the window's wall-clock times."""
    out = copy.deepcopy(records)
    for record in out:
        if not record["topic"].endswith(".debezium_signal"):
            continue
        key = (record["key"] or {}).get("payload") or {}
        if isinstance(key.get("id"), str) and WATERMARK.match(key["id"]):
            key["id"] = "<uuid>-" + key["id"].rsplit("-", 1)[1]
        after = ((record["value"] or {}).get("payload") or {}).get("after") or {}
        if isinstance(after.get("id"), str) and WATERMARK.match(after["id"]):
            after["id"] = "<uuid>-" + after["id"].rsplit("-", 1)[1]
            after["data"] = "<window times>"
    return out


BASE = {
    "name": "sig-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "topic.prefix": "sig", "plugin.name": "pgoutput", "slot.name": "sig_slot", "publication.name": "sig_pub",
    "publication.autocreate.mode": "filtered", "snapshot.mode": "initial",
    "table.include.list": "public.items", "signal.data.collection": "public.debezium_signal",
    "incremental.snapshot.chunk.size": "5",
}


def both(pg: Any, tmp_path: Path, workload: str, minimum: int,
         idle: float = 12.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Debezium's records, lakecdc's records) for SETUP + ``workload`` on fresh copies of one database."""
    dbz_dir, our_dir = tmp_path / "debezium", tmp_path / "lakecdc"
    dbz_dir.mkdir()
    our_dir.mkdir()
    dsn = fresh_database(pg, "sigdb")
    dbz_props = {**BASE, **pg.connection_properties("sigdb")}

    def reset() -> None:
        fresh_database(pg, "sigdb")
        for leftover in dbz_dir.glob("debezium-offsets*"):
            leftover.unlink()

    expected = debezium_with_retry(dbz_props, minimum=minimum, setup_sql=SETUP, workload_sql=workload,
                                   workload_dsn=dsn, work_dir=dbz_dir, headers=True, reset=reset)
    drop_slot(dsn, "sig_slot", "sig_pub")
    dsn = fresh_database(pg, "sigdb")
    config = our_dir / "connector.properties"
    props = {**dbz_props, "offset.storage.file.filename": str(our_dir / "offsets.json")}
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    # idle longer than the workload's waits, or lakecdc would stop during them
    actual = capture_with_lakecdc(config, setup_sql=SETUP, workload_sql=workload, workload_dsn=dsn,
                                  work_dir=our_dir, stop_when_idle=idle)
    return expected, actual


def test_incremental_snapshot_with_changes_equals_live_debezium(pg: Any, tmp_path: Path) -> None:
    expected, actual = both(pg, tmp_path, WORKLOAD, 40)
    incremental = [r for r in expected if r["value"] and r["value"]["payload"]["source"]["snapshot"] == "incremental"]
    # the oracle really ran the paused and resumed snapshot: 12 rows, 9 deleted before its chunk
    assert sorted(r["key"]["payload"]["id"] for r in incremental) == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]
    assert_conformant(mask_watermarks(expected), mask_watermarks(actual), MaskRules.for_connector("postgres"))


def test_blocking_snapshot_equals_live_debezium(pg: Any, tmp_path: Path) -> None:
    """A whole-table blocking snapshot, then one with an additional condition (its SELECT)."""
    expected, actual = both(pg, tmp_path, BLOCKING_WORKLOAD, 34, idle=15.0)
    # initial snapshot (12), the signal, the blocking snapshot (12), the update, then the
    # conditioned signal, its 6 red rows, the last update
    assert [r["value"]["payload"]["op"] for r in expected[12:]] == \
        ["c"] + ["r"] * 12 + ["u"] + ["c"] + ["r"] * 6 + ["u"]
    assert [r["key"]["payload"]["id"] for r in expected[27:33]] == [1, 3, 5, 7, 9, 11]
    assert_conformant(expected, actual, MaskRules.for_connector("postgres"))
