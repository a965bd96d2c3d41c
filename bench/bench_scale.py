"""Backlog drain with 1 and 2 Spark executors: does the ingest scale with the cluster? (issue 13)

    .venv/bin/python bench/bench_scale.py                       # 40,000 decode-heavy records, 4 partitions
    .venv/bin/python bench/bench_scale.py --records 100000 --partitions 8
    .venv/bin/python bench/bench_scale.py --records 300000 --executor-cpu 0.4   # as root: executors capped

1. starts the local broker and publishes a backlog of real Debezium records (PostgreSQL's
   ``audit_full`` change event from the conformance workload: decimals, binary, int8, timestamps,
   json -- decoding is the heavy part), one key per record, spread over ``--partitions`` partitions;
2. drains it twice with ``lakecdc ingest --trigger available-now`` (``reader: spark``, Iceberg through
   Spark), each a process started from nothing, on Spark's ``local-cluster[N,1,1024]`` master: separate
   executor JVMs with their own Python workers on this machine, N = 1 then 2;
3. prints both side by side: wall time of the drain (the batches' own seconds, without the JVM start),
   split into fetch + decode (until the executors have decoded) and the rest (the table writes), and
   the speed-up of 2 executors over 1, with the machine's CPU use through each drain and its load
   average before and after (the figures mean little on a machine shared with other work).

``--executor-cpu CORES`` puts each executor JVM, with its Python workers, in a cgroup of its own capped
at CORES CPUs (``ExecutorCpu``), the driver and broker outside: on this 2-core machine one uncapped
executor already keeps both cores busy with the driver and the broker, so a second one has no core of
its own; capped, each executor has the same budget and the machine stays below saturation, which is
what a cluster of separate machines gives. Measured 2026-11-29 06:33-06:54 UTC, idle machine, 300,000
records (1,508 MB, 3 batches of 100,000), every record at one source time (as until then):

    cap 0.5: drain 91.0 s -> 67.3 s (1.35x); fetch + decode 1.64x; last batch alone 24.4 -> 15.9 s (1.53x)
    cap 0.4: drain 123.8 s -> 96.4 s (1.28x); fetch + decode 1.51x; CPU use 34% / 53% of the 2 cores

The backlog's positions and commit times now advance (1,000 changes/s): with one source time for
every record, bronze's anti-join read all of bronze at each batch (it reads the batch's source-time
range), which no real source does. 2026-11-29 07:06-07:10 UTC, cap 0.5: drain 97.2 s -> 73.0 s
(1.33x), fetch + decode 1.70x, batches 2 and 3 alone 1.53x and 1.39x (the first carries each JVM's
warm-up); CPU use 35% / 60%.

Spark's event log of a 200,000-record pair (cap 0.4) says where the rest goes: the decode stage runs
1.89x faster (18.9 -> 10.0 s), the fetch 1.20x (the local broker serves both), and the table writes
keep stages of one task (the Iceberg MERGE's and bronze anti-join's reads, broadcasts) and the
driver's commits, which a second executor cannot share. Bronze appends were one such stage (all rows
of a day shuffled to one writer) until bronze tables were created with ``write.distribution-mode=none``
and fanout writers: at cap 0.5 and 100,000 records the drain went from 1.18x to 1.23-1.27x.

The drain is now timed from the first batch's fetch to the last commit (until then the sum of the
batches' own seconds, which start after each batch's fetch: the fetch was left out). 2026-11-29
09:45-10:01 UTC, idle machine (load 0.4-1.2 before), cap 0.5, 300,000 records:

    batches of 100,000:            drain 148.0 s -> 116.4 s (1.27x); fetch 51.2 -> 36.2 s, decode
                                   37.1 -> 22.7 s (1.50x together), writes 59.7 -> 57.5 s (1.04x)
    growing behind the backlog     drain 143.5 s -> 108.3 s (1.33x); fetch + decode 1.44x, writes
    (100,000 then 200,000):        57.9 -> 49.0 s; 3% and 7% faster than fixed batches (a run
                                   11 minutes later, not the same run)

Spark's event log of a 200,000-record pair (09:26 UTC): the second batch, warm, 39.6 s -> 24.2 s
(1.64x): fetch 1.9x, decode 1.85x, the bronze append 1.3x, the silver MERGE 1.15x, and about 3 s of
the driver's own work between jobs. The first batch carries the executors' start: its first fetch
task on each executor takes 10 s (a fresh JVM and Python worker capped at half a core), later ones 2 s.
Larger fixed batches cost less per record (200,000: 35% less with 1 executor, 18% with 2) but scale
less (1.30x). A CFS period of 10 ms instead of 100 ms, to shorten throttling stalls between
executors, made both drains slower (157.3 s / 123.5 s).

``publish_backlog`` and ``drain`` are shared with the driver-memory test
(``tests/integration/ingest/test_ingest_driver_memory.py``), which also samples the driver's RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLDEN = "conformance/postgres/workload.jsonl"
_BATCH_LINE = re.compile(r"^(\S+ \S+) .*batch \d+: applied ([\d,]+) changes? .* in ([\d.]+) s", re.M)
_DECODED_LINE = re.compile(r"^(\S+ \S+) .*executor_batch: decoded ", re.M)
_FIRST_READ_LINE = re.compile(r"^(\S+ \S+) .*reading \d+ new partition", re.M)


def _shared_root() -> Path:
    beside = ROOT.parent / "shared"
    return beside if (beside / "conformance").is_dir() else Path("/work/shared")


def template(table: str) -> dict[str, Any]:
    """The first streamed insert (``op`` c) of ``public.<table>`` in the conformance workload."""
    import orjson

    for line in (_shared_root() / GOLDEN).read_bytes().splitlines():
        record = orjson.loads(line) if line.strip() else None
        value = (record or {}).get("value") or {}
        payload = value.get("payload") or {}
        if record and record["topic"].endswith(f".public.{table}") and payload.get("op") == "c":
            return record
    raise LookupError(f"no insert of public.{table} in {GOLDEN}")


def backlog(prefix: str, count: int, table: str = "audit_full", text_bytes: int = 0) -> list[tuple[str, bytes, bytes]]:
    """``count`` inserts of ``public.<table>`` under ``prefix``, keys 1..count, positions and commit times
    advancing; ``text_bytes`` > 0 puts a text that long in ``name`` (customers) to make records large. No
    transaction block: each passes alone."""
    import orjson

    base = template(table)
    topic = f"{prefix}.public.{table}"
    base["value"]["payload"]["transaction"] = None
    filler = ("lakecdc-" * (text_bytes // 8 + 1))[:text_bytes] if text_bytes else ""
    out = []
    record = base  # one record, its values replaced and serialised per key
    source = record["value"]["payload"]["source"]
    lsn, ts_ms = source["lsn"], source["ts_ms"]
    for i in range(1, count + 1):
        record["key"]["payload"]["id"] = i
        record["value"]["payload"]["after"]["id"] = i
        # a source writing 1,000 changes/s, one transaction each: positions and commit times advance
        # (bronze's anti-join reads the stored rows of a batch's source-time range, as on a real source)
        source.update(lsn=lsn + 8 * i, ts_ms=ts_ms + i, ts_us=(ts_ms + i) * 1000, ts_ns=(ts_ms + i) * 1_000_000,
                      sequence=f'["{lsn + 8 * i - 8}","{lsn + 8 * i}"]')
        if filler:
            record["value"]["payload"]["after"]["name"] = f"{i}:{filler}"
        out.append((topic, orjson.dumps(record["key"]), orjson.dumps(record["value"])))
    return out


def publish_backlog(bootstrap: str, records: list[tuple[str, bytes, bytes]], partitions: int) -> int:
    """Creates the topics with ``partitions`` partitions and publishes ``records`` round-robin; returns bytes."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from lakecdc.devstack.broker import kafka_client_defaults

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, partitions, 1) for t in sorted({r[0] for r in records})]).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, **kafka_client_defaults("producer"),
                         "message.max.bytes": 8_000_000})
    size = 0
    for i, (topic, key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=i % partitions)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.5)
        size += len(key) + len(value)
    assert producer.flush(300) == 0, "records not delivered"
    return size


@dataclass
class Drain:
    """One ``lakecdc ingest`` run over the backlog."""

    executors: int
    seconds: float  # process start to exit
    batch_seconds: float  # the sum of the batches' own seconds, after each batch's fetch
    events: int
    returncode: int
    log: str
    decode_seconds: float = 0.0  # of ``batch_seconds``, until the executors had decoded
    fetch_seconds: float = 0.0  # before each batch's own seconds: the executors fetching its ranges
    busy: float = 0.0  # the machine's CPU use through the run, 0-1 over all cores (saturated near 1)
    #: driver RSS samples in bytes: the job's Python process, and the driver JVM (its java child)
    python_rss: list[int] = field(default_factory=list)
    jvm_rss: list[int] = field(default_factory=list)

    @property
    def drain_seconds(self) -> float:
        """From the first batch's fetch to the last batch's commit."""
        return self.fetch_seconds + self.batch_seconds


class ExecutorCpu:
    """Each executor JVM of a run, with every process it starts (its Python workers), in a cgroup of its
    own capped at ``cores`` CPUs (cgroup v1 ``cpu.cfs_quota_us``), as on a cluster where an executor's
    core is its own: on this 2-core machine the driver, the broker and the executors otherwise share
    the same cores, so a second executor finds no free one. The driver stays outside the caps."""

    ROOT = Path("/sys/fs/cgroup/cpu")

    def __init__(self, cores: float, tag: str) -> None:
        self.cores, self.tag = cores, tag
        self.groups: dict[int, Path] = {}  # executor JVM pid -> its cgroup

    @classmethod
    def available(cls) -> bool:
        return os.access(cls.ROOT, os.W_OK) and (cls.ROOT / "cpu.cfs_quota_us").exists()

    def place(self, driver: Any) -> None:
        """Moves new executor JVMs, and every descendant of each, into their cgroups (called often)."""
        import psutil

        try:
            children = driver.children(recursive=True)
        except psutil.Error:
            return
        for proc in children:
            try:
                if proc.name() != "java" or "CoarseGrainedExecutorBackend" not in " ".join(proc.cmdline()):
                    continue
                group = self.groups.get(proc.pid)
                if group is None:
                    group = self.ROOT / f"{self.tag}-{len(self.groups)}"
                    group.mkdir(exist_ok=True)
                    period = int((group / "cpu.cfs_period_us").read_text())
                    (group / "cpu.cfs_quota_us").write_text(str(int(period * self.cores)))
                    self.groups[proc.pid] = group
                for member in [proc, *proc.children(recursive=True)]:
                    (group / "cgroup.procs").write_text(str(member.pid))
            except (psutil.Error, OSError):
                continue

    def remove(self) -> None:
        for group in self.groups.values():
            for _ in range(50):  # an executor that just exited may still be reaped
                try:
                    for pid in (group / "cgroup.procs").read_text().split():  # leftovers go back to the root
                        (self.ROOT / "cgroup.procs").write_text(pid)
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def drain(bootstrap: str, prefix: str, workdir: Path, executors: int, *, driver_memory: str = "1g",
          max_records: int = 100_000, timeout: float = 3600, executor_cpu: float | None = None) -> Drain:
    """``lakecdc ingest --trigger available-now`` on ``local-cluster[executors,1,1024]`` into Iceberg;
    ``executor_cpu`` caps each executor at that many CPUs (``ExecutorCpu``)."""
    import psutil

    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "ingest.yaml"
    settings = {"name": prefix, "kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix, "reader": "spark",
                "warehouse": str(workdir / "lake"), "table.format": "iceberg", "progress.path": str(workdir / "state"),
                "table.name.format.bronze": f"{prefix}_bronze.{{table}}",
                "table.name.format.silver": f"{prefix}_silver.{{table}}",
                "batch.max.records": str(max_records), "batch.max.wait.ms": "500"}
    config.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
    env = {**os.environ, "LAKECDC_SPARK_MASTER": f"local-cluster[{executors},1,1024]",
           "LAKECDC_SPARK_DRIVER_MEMORY": driver_memory, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log_path = workdir / "ingest.log"
    started, cpu_before = time.monotonic(), psutil.cpu_times()
    result = Drain(executors, 0.0, 0.0, 0, -1, "")
    with log_path.open("wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("lakecdc")), "ingest", "--config", str(config),
                                 "--trigger", "available-now"], stdout=out, stderr=subprocess.STDOUT, env=env)
        watched = psutil.Process(proc.pid)
        stop = threading.Event()
        caps = ExecutorCpu(executor_cpu, f"lakecdc-bench-{proc.pid}") if executor_cpu else None

        def sample() -> None:
            while not stop.is_set():
                if caps is not None:
                    caps.place(watched)
                try:
                    result.python_rss.append(watched.memory_info().rss)
                    jvms = [c for c in watched.children() if c.name() == "java"]
                    if jvms:
                        result.jvm_rss.append(sum(j.memory_info().rss for j in jvms))
                except psutil.Error:
                    pass
                stop.wait(0.25)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            result.returncode = proc.wait(timeout)
        finally:
            stop.set()
            sampler.join()
            if proc.poll() is None:
                proc.kill()
            if caps is not None:
                caps.remove()
    result.seconds = time.monotonic() - started
    cpu_after = psutil.cpu_times()
    spent = {f: getattr(cpu_after, f) - getattr(cpu_before, f) for f in cpu_after._fields}
    result.busy = 1 - (spent["idle"] + spent.get("iowait", 0.0)) / max(1e-9, sum(spent.values()))
    result.log = log_path.read_text(errors="replace")
    decoded = [_stamp(t) for t in _DECODED_LINE.findall(result.log)]
    first_read = _FIRST_READ_LINE.search(result.log)
    previous_end = _stamp(first_read.group(1)) if first_read else None
    for (ended, events, seconds), done in zip(_BATCH_LINE.findall(result.log), decoded):
        result.events += int(events.replace(",", ""))
        result.batch_seconds += float(seconds)
        begun = _stamp(ended) - float(seconds)
        result.decode_seconds += done - begun
        if previous_end is not None:
            result.fetch_seconds += max(0.0, begun - previous_end)
        previous_end = _stamp(ended)
    return result


def _stamp(text: str) -> float:
    """Seconds of a log line's time stamp (``2026-11-26 16:41:05,194``)."""
    from datetime import datetime

    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=40_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--executor-cpu", type=float, default=None, metavar="CORES",
                        help="cap each executor (JVM and Python workers) at CORES CPUs in its own cgroup (root)")
    parser.add_argument("--batch-records", type=int, default=100_000, metavar="N", help="batch.max.records")
    args = parser.parse_args()
    if args.executor_cpu and not ExecutorCpu.available():
        raise SystemExit(f"--executor-cpu needs a writable cgroup v1 cpu controller at {ExecutorCpu.ROOT}")
    from lakecdc.devstack.broker import Broker

    directory = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    load_before = os.getloadavg()
    (directory / "stack").mkdir()
    with Broker(base_dir=directory / "stack") as broker:
        prefix = f"scale{os.getpid()}"
        size = publish_backlog(broker.bootstrap_servers, backlog(prefix, args.records), args.partitions)
        print(f"backlog: {args.records:,} records ({size / 1e6:,.0f} MB) in {args.partitions} partitions")
        runs = [drain(broker.bootstrap_servers, prefix, directory / f"x{n}", n, executor_cpu=args.executor_cpu,
                      max_records=args.batch_records)
                for n in (1, 2)]
    load_after = os.getloadavg()
    for run in runs:
        if run.returncode != 0 or run.events != args.records:
            print(run.log[-3000:])
            raise SystemExit(f"{run.executors} executor(s): exit {run.returncode}, {run.events} events")
    print(f"{'executors':>10} {'drain s':>9} {'events/s':>10} {'fetch s':>8} {'decode s':>9} {'write s':>8} "
          f"{'process s':>10} {'CPU busy':>9}")
    for run in runs:
        rate = run.events / run.drain_seconds
        print(f"{run.executors:>10} {run.drain_seconds:>9.1f} {rate:>10,.0f} {run.fetch_seconds:>8.1f} "
              f"{run.decode_seconds:>9.1f} {run.batch_seconds - run.decode_seconds:>8.1f} {run.seconds:>10.1f} "
              f"{run.busy:>9.0%}")
    one, two = runs
    print(f"speed-up with 2 executors: {one.drain_seconds / two.drain_seconds:.2f}x drain (first fetch to last "
          f"commit), {one.seconds / two.seconds:.2f}x process (JVM start included), "
          f"{(one.fetch_seconds + one.decode_seconds) / (two.fetch_seconds + two.decode_seconds):.2f}x fetch + decode "
          f"(target >= 1.7x); load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, "
          f"{os.cpu_count()} cores" + (f"; each executor capped at {args.executor_cpu:g} CPU" if args.executor_cpu
                                         else ""))


if __name__ == "__main__":
    main()
