"""Which quarantined events a changed suite retries: an event's newest verdict decides (a real Delta
quarantine table, written by ``append_quarantine`` as the ingest job writes it)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecdc.audit.tables import LakeTable
from lakecdc.quality.quarantine import append_quarantine
from lakecdc.quality.quarantine_retry import RELEASED, fingerprint, open_events

T0 = datetime(2026, 11, 28, tzinfo=timezone.utc)
#: one verdict: held by suite "a" or "b" (or by an unnamed, older suite), released, or a warn record
VERDICTS = st.sampled_from(["held a", "held b", "held", RELEASED, "warn"])


def verdict(table: str, offset: int, kind: str, at: int) -> dict:
    event = {"_topic": "shop.public.customers", "_partition": 0, "_offset": offset, "_key_json": f'{{"id":{offset}}}'}
    suite = kind.split(" ")[1] * 12 if " " in kind else None
    reason = {"warn": "pipeline expectation failed (warn) at position [1]", RELEASED: "passes suite"}.get(
        kind, "pipeline expectation failed (quarantine) at position [1]" + (f", suite {suite}" if suite else ""))
    return {"table_name": table, "rule": RELEASED if kind == RELEASED else "expect_x(name)", "reason": reason,
            "row_key": json.dumps({"id": offset}), "row_json": json.dumps(event),
            "checked_at": T0 + timedelta(seconds=at)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories=st.lists(st.lists(VERDICTS, min_size=1, max_size=4), min_size=1, max_size=5))
def test_the_newest_verdict_decides_what_a_changed_suite_retries(histories: list[list[str]], tmp_path: Path) -> None:
    silver = LakeTable.delta(tmp_path / f"lake{abs(hash(str(histories)))}", "silver.customers")
    rows, at = [], 0
    for offset, history in enumerate(histories):
        for kind in history:
            at += 1
            rows.append(verdict(silver.name, offset, kind, at))
    rows.append(verdict("silver.other", 0, "held b", 0))  # another table's verdicts are not this table's
    append_quarantine(silver, rows[::-1])  # stored out of order: checked_at orders them
    quarantine = silver.sibling(f"{silver.name}_quarantine")
    # what a retry under suite "a" takes: held, by another suite (or one named before suites were)
    newest = {o: [k for k in h if k != "warn"][-1:] for o, h in enumerate(histories)}
    expected = sorted(o for o, last in newest.items() if last and last[0] in ("held b", "held"))
    assert sorted(r["event"]["_offset"] for r in open_events(quarantine, silver.name, "a" * 12)) == expected


def test_a_suite_is_named_by_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{"name": "s", "expectations": []}')
    before = fingerprint(str(path))
    assert len(before) == 12 and fingerprint(str(path)) == before
    path.write_text('{"name": "s", "expectations": [] }')
    assert fingerprint(str(path)) != before


def test_no_quarantine_table_means_nothing_to_retry(tmp_path: Path) -> None:
    silver = LakeTable.delta(tmp_path, "silver.customers")
    assert open_events(silver.sibling("silver.customers_quarantine"), silver.name, "a" * 12) == []
