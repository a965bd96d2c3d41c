"""Malformed records in a real run: the good records reach silver, the bad ones are in the dead-letter
table with their reason, and running again (a restart) neither crashes nor adds anything (issue 12).

Each malformed record is a real Debezium record of the golden workload with one thing broken; before
the fix, some crashed the job on every restart (a one-element ``source.sequence``, a text
``transaction`` block, an LSN of 2^63, a schema ``parameters`` that is not an object, an END whose
``event_count`` is text) and the others reached silver as rows (a null key on a keyed table, a
column of the wrong type, a field the schema does not have).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ingest_broker import create_topics, encode, golden_records, publish, publish_records, unique_prefix
from ingest_tables import assert_final_source_state, snapshot_count, table_rows
from test_ingest_job import job_config

from lakecdc.ingest.job import run_ingest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Record = dict[str, Any]


def _broken(records: list[Record], topic_end: str, op_or_status: str,
            change: Callable[[Record], None]) -> tuple[str, bytes | None, bytes | None]:
    source = next(r for r in records if r["topic"].endswith(topic_end) and r["value"] is not None
                  and op_or_status in (r["value"]["payload"].get("op"), r["value"]["payload"].get("status")))
    record = copy.deepcopy(source)
    change(record)
    return record["topic"], encode(record["key"]), encode(record["value"])


def _payload(r: Record) -> dict[str, Any]:
    return r["value"]["payload"]


def _parameters_text(r: Record) -> None:
    for part in r["value"]["schema"]["fields"][:2]:
        next(f for f in part["fields"] if f["field"] == "balance")["parameters"] = "scale=2"


def _null_key(r: Record) -> None:
    r["key"] = None
    _payload(r)["after"]["name"] = "must not reach silver"


#: (what is broken, words its reason holds, how to break a golden record)
MALFORMED: list[tuple[str, tuple[str, ...], Callable[[list[Record]], tuple[str, bytes | None, bytes | None]]]] = [
    ("one-element sequence", ("source.sequence",), lambda rs: _broken(
        rs, "customers", "c", lambda r: _payload(r)["source"].update(sequence='["99090472"]'))),
    ("transaction block is text", ("'transaction'",), lambda rs: _broken(
        rs, "customers", "u", lambda r: _payload(r).update(transaction="1264"))),
    ("LSN of 2^63", ("source.lsn",), lambda rs: _broken(
        rs, "customers", "d", lambda r: _payload(r)["source"].update(lsn=1 << 63))),
    ("schema parameters not an object", ("parameters",), lambda rs: _broken(rs, "customers", "c", _parameters_text)),
    ("END event_count text", ("event_count",), lambda rs: _broken(
        rs, "transaction", "END", lambda r: _payload(r).update(event_count="five"))),
    ("null key on a keyed table", ("null key",), lambda rs: _broken(rs, "customers", "c", _null_key)),
    ("id of the wrong type", ("'id'", "int32"), lambda rs: _broken(
        rs, "customers", "c", lambda r: (_payload(r)["after"].update(id=6.5), r["key"]["payload"].update(id=6)))),
    ("field the schema does not have", ("'shadow'",), lambda rs: _broken(
        rs, "audit_full", "u", lambda r: _payload(r)["after"].update(shadow="x"))),
]


def test_malformed_records_are_dead_letters_and_a_restart_adds_nothing(broker, spark, tmp_path: Path) -> None:
    prefix = unique_prefix("dm")
    records = golden_records(prefix)
    bad = [make(records) for _, _, make in MALFORMED]
    create_topics(broker.bootstrap_servers, [r["topic"] for r in records])
    half = len(records) // 2
    publish_records(broker.bootstrap_servers, records[:half])
    publish(broker.bootstrap_servers, bad)
    publish_records(broker.bootstrap_servers, records[half:])
    # where each bad record landed: after the first half's records of its topic, in order
    expected: dict[tuple[str, int], tuple[str, ...]] = {}
    next_offset = {t: sum(1 for r in records[:half] if r["topic"] == t) for t in {r["topic"] for r in records}}
    for (topic, _, _), (_, words, _) in zip(bad, MALFORMED):
        expected[(topic, next_offset[topic])] = words
        next_offset[topic] += 1
    cfg = job_config(broker, spark, prefix, tmp_path)

    summary = run_ingest(cfg, "available-now", spark=spark)

    assert summary.failed_tables == {} and summary.held_events == 0
    assert summary.dead_letters == len(MALFORMED)
    assert_final_source_state(spark, prefix)  # the good records, exactly: nothing bad reached a table
    silver = table_rows(spark, f"{prefix}_silver.customers")
    assert all(r["name"] != "must not reach silver" for r in silver)

    def letters() -> list[dict[str, Any]]:
        return [r for r in table_rows(spark, "lakecdc.dead_letters") if r["topic"].startswith(prefix)]

    stored = {(r["topic"], r["offset"]): r for r in letters()}
    assert set(stored) == set(expected)
    for position, words in expected.items():
        reason = stored[position]["reason"]
        assert f"offset {position[1]}" in reason and position[0] in reason, reason
        for word in words:
            assert word in reason, (word, reason)
    by_value = {bytes(r["value"]) for r in stored.values()}
    assert by_value == {value for _, _, value in bad}  # kept as read, nothing lost

    # The restart: no crash, nothing new in any table, no dead letter stored twice.
    tables = ("silver.customers", "bronze.customers", "silver.audit_full", "bronze.audit_full")
    before = {t: snapshot_count(spark, f"{prefix}_{t}") for t in tables}
    again = run_ingest(cfg, "available-now", spark=spark)
    assert again.events == 0 and again.failed_tables == {}
    assert {t: snapshot_count(spark, f"{prefix}_{t}") for t in tables} == before
    assert sorted((r["topic"], r["offset"]) for r in letters()) == sorted(expected)
    assert_final_source_state(spark, prefix)
