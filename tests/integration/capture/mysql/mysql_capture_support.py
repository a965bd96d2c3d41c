"""Helpers for MySQL/MariaDB capture tests: a fresh database on the shared MariaDB, a connector
properties file, capture in a thread or a subprocess, and readers for the captured records."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pymysql

from lakecdc.capture.coordinator import CaptureStats
from lakecdc.capture.runner import run_capture
from lakecdc.transport import read_jsonl

REPO = Path(__file__).resolve().parents[4]


def fresh_database(mariadb: Any, name: str) -> None:
    mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{name}`;\nCREATE DATABASE `{name}` CHARACTER SET utf8mb4;\n")


def sql(mariadb: Any, database: str, *statements: str) -> None:
    """Run statements with autocommit (wrap in BEGIN ... COMMIT for a multi-statement transaction)."""
    conn = pymysql.connect(**mariadb.connect_kwargs(database), autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def query(mariadb: Any, database: str, statement: str) -> list[tuple[Any, ...]]:
    conn = pymysql.connect(**mariadb.connect_kwargs(database))
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
            return list(cur.fetchall())
    finally:
        conn.close()


def write_properties(path: Path, mariadb: Any, database: str, **overrides: str) -> Path:
    props = {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "topic.prefix": "dbz",
        "database.include.list": database,
        "schema.history.internal.file.filename": str(path.with_suffix(".history.jsonl")),
        "offset.storage.file.filename": str(path.with_suffix(".offsets.json")),
    }
    props.update(mariadb.connection_properties())
    props.update({k.replace("__", "."): v for k, v in overrides.items()})
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def capture(properties: Path, out: Path, stop_when_idle: float = 2.0, **overrides: str) -> CaptureStats:
    return run_capture(properties, f"jsonl:{out}", stop_when_idle=stop_when_idle, show_progress=False,
                       overrides={k.replace("__", "."): v for k, v in overrides.items()} or None)


class CaptureThread:
    """Capture in a background thread; ``wait()`` joins and re-raises its error."""

    def __init__(self, properties: Path, out: Path, stop_when_idle: float = 3.0, mariadb: Any = None,
                 **overrides: str) -> None:
        self.mariadb = mariadb
        self._existing_dumps: set[int] = set()
        self.stats: CaptureStats | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(properties, out, stop_when_idle, overrides),
                                        daemon=True)

    def _run(self, properties: Path, out: Path, stop_when_idle: float, overrides: dict[str, str]) -> None:
        try:
            self.stats = capture(properties, out, stop_when_idle, **overrides)
        except BaseException as exc:  # surfaced by wait()
            self.error = exc

    def start(self) -> CaptureThread:
        if self.mariadb is not None:
            self._existing_dumps = dump_threads(self.mariadb)
        self._thread.start()
        return self

    def wait_streaming(self, timeout: float = 30) -> None:
        """Block until this capture reads the binlog (changes made next are streamed)."""
        assert self.mariadb is not None, "CaptureThread(..., mariadb=...) is needed to see the binlog reader"
        wait_for_new_dump_thread(self.mariadb, self._existing_dumps, timeout)

    def wait(self, timeout: float = 120) -> CaptureStats:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("capture did not stop within the timeout")
        if self.error is not None:
            raise self.error
        assert self.stats is not None
        return self.stats


def capture_subprocess(properties: Path, out: Path, stop_when_idle: float | None, log: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(properties), "--sink", f"jsonl:{out}"]
    if stop_when_idle is not None:
        args += ["--stop-when-idle", str(stop_when_idle)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(args, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env, cwd=REPO)


def records(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path) if path.exists() else []


def data_events(recs: list[dict[str, Any]], table: str | None = None) -> list[dict[str, Any]]:
    """Envelope payloads of data events (tombstones and other topics left out)."""
    out = []
    for r in recs:
        value = r.get("value")
        if not value or "op" not in value["payload"]:
            continue
        if table is not None and not r["topic"].endswith("." + table):
            continue
        out.append(value["payload"])
    return out


def ops(recs: list[dict[str, Any]], table: str | None = None) -> list[str]:
    return [p["op"] for p in data_events(recs, table)]



def dump_threads(mariadb: Any) -> set[int]:
    """Ids of the server threads sending a binlog to a replica (our capture's reader)."""
    rows = query(mariadb, mariadb.dbname, "SHOW PROCESSLIST")
    return {int(r[0]) for r in rows if str(r[4]).startswith("Binlog Dump")}


def wait_for_new_dump_thread(mariadb: Any, existing: set[int], timeout: float = 30) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dump_threads(mariadb) - existing:
            return
        time.sleep(0.05)
    raise TimeoutError("no capture connected to the binlog")
