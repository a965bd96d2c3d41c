"""Checks shared by the capture tests of every connector (signals and incremental snapshots
above all): the table that the captured events rebuild, the snapshot's read events, a workload
that races the chunks, a kill -9 mid-snapshot, and the records of runs that were killed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def data_payloads(records: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    """Envelope payloads of the data events of ``table`` (topic ``<prefix>.<...>.<table>``)."""
    return [r["value"]["payload"] for r in records
            if r["topic"].endswith("." + table) and r.get("value") and "op" in r["value"]["payload"]]


def reads(records: list[dict[str, Any]], table: str = "items") -> list[dict[str, Any]]:
    return [p for p in data_payloads(records, table) if p["op"] == "r"]


def assert_untouched_rows_have_one_read(records: list[dict[str, Any]], final: dict[Any, Any],
                                        table: str = "items", among: set[Any] | None = None) -> None:
    """Snapshot reads raced by changes: no row is read twice, and every row of ``final`` (or of
    ``among`` it) that no streamed change touched has its read. Rows deleted before their chunk, or
    changed inside its window, may have none; how many the churn reached depends on the machine's
    load, so only what must hold is asserted (and that some untouched row exists to check)."""
    read_ids = [p["after"]["id"] for p in reads(records, table)]
    assert len(read_ids) == len(set(read_ids)), "a row was read twice"
    touched = {(p["after"] or p["before"])["id"] for p in data_payloads(records, table) if p["op"] != "r"}
    untouched = {i for i in final if (among is None or i in among) and i not in touched}
    assert untouched, "the churn touched every row: the read coverage of untouched rows is not tested"
    missing = untouched - set(read_ids)
    assert not missing, f"rows never changed lack a read: {sorted(missing)[:10]}"


def replay(records: list[dict[str, Any]], table: str = "items") -> dict[Any, dict[str, Any]]:
    """The table as its events in order rebuild it (what a sink's MERGE would hold), by ``id``."""
    state: dict[Any, dict[str, Any]] = {}
    for record in records:
        if not record["topic"].endswith("." + table) or record.get("value") is None:
            continue
        payload = record["value"]["payload"]
        key = record["key"]["payload"]["id"]
        if payload["op"] == "d":
            state.pop(key, None)
        else:
            state[key] = payload["after"]
    return state


def stream_events(records: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(table, op, signal type) of every data event in order: where reads sit among watermarks."""
    return [(r["topic"].rsplit(".", 1)[1], r["value"]["payload"]["op"],
             (r["value"]["payload"]["after"] or {}).get("type"))
            for r in records if r.get("value") and "op" in r["value"]["payload"]]


def check_signals_and_windows(records: list[dict[str, Any]], log_text: str) -> None:
    """The stream of the shared basic workload (signals ``log``, ``no-such-action`` and an
    ``execute-snapshot`` of 12 rows in chunks of 5, with row 3 updated meanwhile): the signal table's
    rows are emitted (Debezium does so), watermarks included, windows [1-5], [6-10], [11-12], []
    (the empty chunk ends the table); a chunk's rows come at the end of its window, right before
    its close watermark's event (4 rows if the update of row 3 landed inside the first window)."""
    rows = [p["after"] for p in data_payloads(records, "debezium_signal")]
    assert [s["type"] for s in rows[:3]] == ["log", "no-such-action", "execute-snapshot"]
    assert [s["type"] for s in rows[3:]] == ["snapshot-window-open", "snapshot-window-close"] * 4
    assert all(s["id"].endswith("-open" if s["type"].endswith("open") else "-close") for s in rows[3:])
    events = stream_events(records)
    first_open = events.index(("debezium_signal", "c", "snapshot-window-open"))
    first_close = events.index(("debezium_signal", "c", "snapshot-window-close"))
    window = events[first_open + 1:first_close]
    chunk = [e for e in window if e[1] == "r"]
    assert 4 <= len(chunk) <= 5 and window[len(window) - len(chunk):] == chunk
    assert "hello from signal at {" in log_text
    assert "Signal 's-bogus' has been received but the type 'no-such-action' is not recognized" in log_text
    assert "incremental snapshot completed" in log_text


def kill_9_mid_snapshot(process: subprocess.Popen, streaming: Callable[[], bool], start_snapshot: Callable[[], None],
                        offsets: Path, first_chunk_key: str, wait_for: Callable[..., None]) -> dict[str, Any]:
    """Once ``process`` streams, ``start_snapshot``, wait until the stored offset's last key is past
    the first chunk (``first_chunk_key`` as it appears in the offsets file), kill -9 the process and
    return its stored offset."""
    try:
        wait_for(streaming, timeout=180, what="streaming")
        start_snapshot()
        wait_for(lambda: offsets.exists() and "incremental_snapshot_primary_key" in offsets.read_text()
                 and first_chunk_key not in offsets.read_text(), timeout=180, what="snapshot progress past a chunk")
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return next(iter(json.loads(offsets.read_text()).values()))


def read_tolerant(path: Path) -> list[dict[str, Any]]:
    """Records of one run; a torn last line (the run was killed mid-write) is dropped."""
    records = []
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for number, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            assert number == len(lines) - 1, f"{path}: unparseable line {number + 1} is not the last"
    return records


def load_runs(paths: list[Path]) -> list[dict[str, Any]]:
    """The records of several runs' JSON-lines files in order (see :func:`read_tolerant`)."""
    return [record for path in paths for record in read_tolerant(path)]

def start_churn(execute: Callable[[str, tuple[Any, ...]], None], rows: int, append_plus: str,
                stop: threading.Event) -> tuple[threading.Thread, list[int]]:
    """A thread updating (``append_plus``: the UPDATE that appends '+' to a label), deleting and
    inserting ``items`` rows at random until ``stop``; returns it and its count of changes."""
    done = [0]

    def churn() -> None:
        rng = random.Random(7)
        n = rows
        while not stop.is_set():
            key = rng.randint(1, n)
            choice = rng.random()
            if choice < 0.6:
                execute(append_plus, (key,))
            elif choice < 0.8:
                execute("DELETE FROM items WHERE id = %s", (key,))
            else:
                n += 1
                execute("INSERT INTO items VALUES (%s, 'new', 'green')", (n,))
            done[0] += 1

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    return worker, done
