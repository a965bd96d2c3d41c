"""Helpers for PostgreSQL capture tests: a fresh database, a connector file, a workload runner,
capture in a thread or a subprocess, and masking of what legitimately differs between runs."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from pg_slots import drop_database_slots
from psycopg import sql
from shared_paths import SHARED_ROOT

from lakecdc.capture.coordinator import CaptureStats
from lakecdc.capture.runner import run_capture
from lakecdc.transport import read_jsonl

REPO = Path(__file__).resolve().parents[4]
GOLDEN_DIR = SHARED_ROOT / "conformance/postgres"


def fresh_database(pg: Any, name: str) -> str:
    """Drop (with its replication slots) and recreate database ``name``; returns its DSN."""
    drop_database_slots(pg.dsn_for("postgres"), name)
    with psycopg.connect(pg.dsn_for("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return pg.create_database(name)


def write_properties(path: Path, pg: Any, dbname: str, base: dict[str, str] | None = None,
                     **overrides: str) -> Path:
    """A Debezium-style .properties file for ``dbname`` with our offsets file beside it."""
    props: dict[str, str] = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": "dbz",
        "slot.name": f"{dbname}_slot",
        "publication.name": f"{dbname}_pub",
        "publication.autocreate.mode": "filtered",
        "plugin.name": "pgoutput",
    }
    props.update(base or {})
    props.update(pg.connection_properties(dbname))
    props["offset.storage"] = "org.apache.kafka.connect.storage.FileOffsetBackingStore"
    props["offset.storage.file.filename"] = str(path.with_suffix(".offsets.json"))
    props.update({k.replace("__", "."): v for k, v in overrides.items()})
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def sql_statements(text: str) -> list[str]:
    """Split a workload file into statements (no ';' inside literals in our workloads)."""
    without_comments = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in without_comments.split(";") if s.strip()]


def run_sql(dsn: str, text: str, pause: float = 0.0) -> None:
    """Each statement autocommits unless wrapped in BEGIN/COMMIT (as the golden workload ran)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in sql_statements(text):
            conn.execute(statement)
            if pause:
                time.sleep(pause)


class CaptureThread:
    """``run_capture`` in a background thread; ``wait()`` joins and re-raises its error."""

    def __init__(self, properties: Path, out: Path, stop_when_idle: float = 3.0, **kwargs: Any) -> None:
        self.stats: CaptureStats | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(properties, out, stop_when_idle, kwargs), daemon=True
        )

    def _run(self, properties: Path, out: Path, stop_when_idle: float, kwargs: dict[str, Any]) -> None:
        try:
            self.stats = run_capture(properties, f"jsonl:{out}", stop_when_idle=stop_when_idle,
                                     show_progress=False, **kwargs)
        except BaseException as exc:  # surfaced by wait()
            self.error = exc

    def start(self) -> CaptureThread:
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float = 120) -> CaptureStats:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("capture did not stop within the timeout")
        if self.error is not None:
            raise self.error
        assert self.stats is not None
        return self.stats


def wait_for(predicate: Callable[[], bool], timeout: float = 180, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def slot_is_streaming(dsn: str, slot: str) -> bool:
    """A walsender streams from the slot (state streaming/catchup): a slot is also active, in
    state startup, while CREATE_REPLICATION_SLOT is still waiting for its consistent point."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT s.state FROM pg_replication_slots r JOIN pg_stat_replication s ON s.pid = r.active_pid "
            "WHERE r.slot_name = %s", (slot,)).fetchone()
    return bool(row and row[0] in ("streaming", "catchup"))


def capture_subprocess(properties: Path, out: Path, stop_when_idle: float | None, log: Path) -> subprocess.Popen:
    """``lakecdc capture`` as a separate process (for kill -9 tests)."""
    args = [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(properties),
            "--sink", f"jsonl:{out}"]
    if stop_when_idle is not None:
        args += ["--stop-when-idle", str(stop_when_idle)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(args, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env, cwd=REPO)


def processes_running(properties: Path) -> list[int]:
    """Processes whose command line names ``properties``: a capture subprocess and the workers it
    forked (a fork keeps the command line)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(properties).encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


# -- masking ------------------------------------------------------------------------------------
_TX_ID = re.compile(r"^\d+:\d+$")


def mask_record(record: dict[str, Any]) -> dict[str, Any]:
    """Replace positions, transaction ids and timestamps as the shared normalized golden file does."""
    r = copy.deepcopy({k: record[k] for k in ("topic", "key", "value", "headers")})
    if r["topic"].endswith(".transaction"):
        if r["key"] is not None:
            r["key"]["payload"]["id"] = "<txid>"
        if r["value"] is not None:
            r["value"]["payload"]["id"] = "<txid>"
            r["value"]["payload"]["ts_ms"] = "<ts>"
        return r
    value = r["value"]
    if value is None:
        return r
    payload = value["payload"]
    for name in ("ts_ms", "ts_us", "ts_ns"):
        if name in payload:
            payload[name] = "<ts>"
    source = payload.get("source")
    if source:
        for name in ("ts_ms", "ts_us", "ts_ns"):
            source[name] = "<ts>"
        for name in ("lsn", "sequence"):
            source[name] = "<pos>"
        if source.get("txId") is not None:
            source["txId"] = "<txid>"
    if payload.get("transaction"):
        payload["transaction"]["id"] = "<txid>"
    return r


def load_records(path: Path) -> list[dict[str, Any]]:
    return [dict(r) for r in read_jsonl(path)]


def load_golden(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN_DIR / name).read_text().splitlines() if line.strip()]
