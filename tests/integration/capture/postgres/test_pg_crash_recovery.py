"""kill -9 the capture at random points of a long workload, restart it, and lose nothing.

Two captures read the same database through two slots: one runs undisturbed, the other (the
``lakecdc capture`` CLI in a subprocess) is killed with SIGKILL several times and restarted from
its file offsets, each run writing its own JSON-lines file (a killed run may leave a torn last
line, which a consumer drops). The union of the killed runs' records, deduplicated by source
position, must equal the undisturbed run's records: nothing missing, nothing extra, same order.
The workload mixes small transactions with one large one, so kills also land inside a
transaction whose events were partly sent. The killed capture hands its inserts to worker
processes (``lakecdc.streaming.workers=2``), which must not outlive it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from incremental_checks import read_tolerant
from pg_capture_support import (
    CaptureThread,
    capture_subprocess,
    fresh_database,
    processes_running,
    slot_is_streaming,
    wait_for,
    write_properties,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def workload(dsn: str, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        n = 0
        while not stop.is_set():
            n += 1
            with conn.transaction():
                for _ in range(rng.randint(1, 20)):
                    conn.execute("INSERT INTO crash_t (v, note) VALUES (%s, %s)",
                                 (rng.randint(0, 10**6), "x" * rng.randint(0, 50)))
                conn.execute("UPDATE crash_t SET v = v + 1 WHERE id IN (SELECT id FROM crash_t ORDER "
                             "BY random() LIMIT 3)")
                conn.execute("DELETE FROM crash_t WHERE id IN (SELECT id FROM crash_t ORDER BY random() LIMIT 2)")
            if n == 40:  # one large transaction, streamed across several capture batches
                conn.execute("INSERT INTO crash_t (v, note) SELECT g, 'bulk' FROM generate_series(1, 60000) g")
            time.sleep(rng.uniform(0.0, 0.02))


def slot_holder(dsn: str, slot: str) -> int | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return row[0] if row else None


def wait_streaming_by_new_process(dsn: str, previous_holder: int | None) -> int:
    """The slot is held by a new walsender: the restarted capture streams (a killed capture's
    walsender can hold the slot a little longer, until the server notices the client is gone)."""
    holder: list[int] = []

    def check() -> bool:
        pid = slot_holder(dsn, "killed_slot")
        if pid is not None and pid != previous_holder:
            holder.append(pid)
            return True
        return False

    wait_for(check, timeout=120, what="the restarted capture to stream")
    return holder[-1]


def identity(record: dict[str, Any]) -> tuple[Any, ...]:
    """Source position of a record: what a consumer deduplicates on."""
    value = record["value"]
    key = json.dumps(record["key"]["payload"] if record["key"] else None, sort_keys=True)
    if record["topic"].endswith(".transaction"):
        return (record["topic"], value["payload"]["status"], value["payload"]["id"])
    if value is None:
        return (record["topic"], key, "tombstone")
    source = value["payload"]["source"]
    return (record["topic"], key, source["sequence"], value["payload"]["op"])


def masked(record: dict[str, Any]) -> str:
    """The record without processing timestamps and per-run headers."""
    value = record["value"]
    payload = dict(value["payload"]) if value else None
    if payload is not None:
        for name in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(name, None)
    return json.dumps({"topic": record["topic"], "key": record["key"], "payload": payload}, sort_keys=True)


def dedupe(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for record in records:
        ident = identity(record)
        if ident not in seen:
            seen.add(ident)
            out.append(record)
    return out


def test_kill_9_and_restart_loses_nothing(pg: Any, tmp_path: Path) -> None:
    dsn = fresh_database(pg, "crashdb")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE crash_t (id serial PRIMARY KEY, v int, note text)")
    common = {"table.include.list": "public.crash_t", "provide.transaction.metadata": "true",
              "snapshot.mode": "never", "offset.flush.interval.ms": "500"}
    steady_props = write_properties(tmp_path / "steady.properties", pg, "crashdb", common,
                                    **{"slot__name": "steady_slot", "publication__name": "steady_pub"})
    # the killed capture hands its inserts to worker processes (lakecdc.streaming.workers), the steady
    # one builds them itself: the comparison below also holds the workers to the serial records
    killed_props = write_properties(tmp_path / "killed.properties", pg, "crashdb", common,
                                    **{"slot__name": "killed_slot", "publication__name": "killed_pub",
                                       "lakecdc__streaming__workers": "2"})
    steady = CaptureThread(steady_props, tmp_path / "steady.jsonl", stop_when_idle=6.0).start()
    log = tmp_path / "killed.log"
    run = 0
    process = capture_subprocess(killed_props, tmp_path / f"killed-{run}.jsonl", None, log)
    wait_for(lambda: slot_is_streaming(dsn, "steady_slot") and slot_is_streaming(dsn, "killed_slot"),
             what="both captures to stream")
    stop = threading.Event()
    writer = threading.Thread(target=workload, args=(dsn, stop, 7), daemon=True)
    writer.start()
    rng = random.Random(11)
    kills = 0
    holder: int | None = None  # the first run's walsender counts as new
    try:
        while kills < 6:
            # kill only once this run streams and has written records, at a random moment after
            holder = wait_streaming_by_new_process(dsn, holder)
            current = tmp_path / f"killed-{run}.jsonl"
            wait_for(lambda: current.exists() and current.stat().st_size > 0, timeout=120,
                     what=f"run {run} to write records")
            time.sleep(rng.uniform(0.0, 2.0))
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            kills += 1
            run += 1
            process = capture_subprocess(killed_props, tmp_path / f"killed-{run}.jsonl", None, log)
        stop.set()
        writer.join()
        holder = wait_streaming_by_new_process(dsn, holder)
        time.sleep(rng.uniform(0.3, 1.5))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        run += 1
        # the last run drains everything and stops by itself
        process = capture_subprocess(killed_props, tmp_path / f"killed-{run}.jsonl", 6.0, log)
        assert process.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
            process.wait()
    steady.wait(timeout=300)

    expected = read_tolerant(tmp_path / "steady.jsonl")
    consumed: list[dict[str, Any]] = []
    for i in range(run + 1):
        consumed.extend(read_tolerant(tmp_path / f"killed-{i}.jsonl"))
    assert kills == 6
    assert len(expected) > 60_000
    # each of the six runs killed during the workload had written records before its kill
    produced = [i for i in range(kills) if read_tolerant(tmp_path / f"killed-{i}.jsonl")]
    assert len(produced) == kills, f"only runs {produced} of the killed ones produced records"
    assert len(dedupe(expected)) == len(expected)  # the undisturbed run has no duplicates
    got = dedupe(consumed)
    assert len(got) == len(expected), (len(got), len(expected))
    assert [masked(r) for r in got] == [masked(r) for r in expected]
    assert len(consumed) >= len(got)  # replays after kills are allowed, losses are not
    assert pg.password not in log.read_text()
    # no worker process of a killed run is left behind (each reads the end of its pipe and exits)
    wait_for(lambda: not processes_running(killed_props), timeout=30, what="the killed runs' workers to exit")

