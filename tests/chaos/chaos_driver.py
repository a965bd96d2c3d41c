"""The chaos driver: capture and the ingest jobs killed with SIGKILL while a seeded workload runs.

A seeded PostgreSQL or MariaDB workload (``chaos_workload``) runs against a database captured by
``lakecdc capture`` into the broker (tansu, or Apache Kafka in KRaft mode), and continuous
``lakecdc ingest`` jobs read it, each on one path (``JOBS``; by default ``ice`` and ``dlt``):

- ``ice``: Iceberg, the Python reader;  ``dlt``: Delta through delta-rs, the Python reader;
- ``dsp``: Delta through Spark (Delta's Spark jars in the job's JVM: ``LAKECDC_SPARK_CONNECTORS``);
- ``skf``: Iceberg read with Spark's Kafka source (``reader: spark-kafka``, its jars in the JVM);
- ``spk``: Iceberg read by Spark's executors (``reader: spark``).

A seeded schedule kills one of the processes with SIGKILL (its whole process group, JVM included)
at a chosen kind of moment, then restarts it:

- ``random``: after a random pause;
- ``after-commit`` (ingest): right after the job logs a bronze or silver table commit;
- ``held`` (ingest): while the job holds events of a transaction it has not seen complete.

When the workload is done, capture drains and each job runs ``available-now``; then every silver
table must equal its source row by row with exact types, bronze must hold every change exactly
once, and no log may contain the database password.

By hand (its own local stack and Spark session)::

    .venv/bin/python tests/chaos/chaos_driver.py --seed 7 --operations 3000 --kills 60
    .venv/bin/python tests/chaos/chaos_driver.py --source mariadb --seed 7 --kills 30
    .venv/bin/python tests/chaos/chaos_driver.py --broker kafka --jobs dsp,skf --operations 600 --kills 12
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for extra in (HERE.parent / "e2e", HERE.parent):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from chaos_workload import KEYLESS, KEYS, ChaosWorkload, MariaDbChaosWorkload, create_schema  # noqa: E402
from e2e_lake import Differences, Lake, check  # noqa: E402
from e2e_mysql import MariaDbPipeline  # noqa: E402
from e2e_pipeline import PgPipeline, unique_name  # noqa: E402
from workloads.changelog import ChangeLog, MySqlChangeLog  # noqa: E402

LAKECDC = Path(sys.executable).with_name("lakecdc")
COMMIT_LINE = (" INFO lakecdc.writers.base: bronze ", " INFO lakecdc.writers.base: silver ")


@dataclass(frozen=True)
class JobPath:
    """One ingest job's path: table format, reader and the Spark connectors its JVM gets."""

    table_format: str
    reader: str
    batch_records: int  # smaller than the backlog: transactions straddle batch ends and are held
    connectors: str = "none"  # LAKECDC_SPARK_CONNECTORS of the job's process (lakecdc.devstack.spark)
    proof: str = ""  # a log line part that shows the job really took this path


_DELTA_RS, _DELTA_SPARK = " INFO lakecdc.writers.delta_rs: created", " INFO lakecdc.writers.delta_spark: created"


JOBS = {
    "ice": JobPath("iceberg", "python", 1500),
    "dlt": JobPath("delta", "python", 400, proof=_DELTA_RS),
    "dsp": JobPath("delta", "python", 400, connectors="delta", proof=_DELTA_SPARK),
    "skf": JobPath("iceberg", "spark-kafka", 700, connectors="spark-kafka", proof="through Spark's Kafka source"),
    "spk": JobPath("iceberg", "spark", 700, proof="reading Kafka on the Spark executors"),
}
DEFAULT_JOBS = ("ice", "dlt")
JOB_MOMENTS = ("random", "after-commit", "held")


class SessionCatalogDeltaLake(Lake):
    """The tables of a job writing Delta through Spark into ``spark_catalog``: managed tables under
    ``<warehouse>/spark-warehouse/<database>.db/<table>``, read with delta-rs like the others."""

    def read(self, table: str, name: str) -> Any:
        from deltalake import DeltaTable

        database, rest = name.split(".", 1)
        path = str(self.warehouse / "spark-warehouse" / f"{database}.db" / rest)
        return DeltaTable(path).to_pyarrow_table() if DeltaTable.is_deltatable(path) else None


class Process:
    """One ``lakecdc`` command, restartable, killed with SIGKILL to its whole process group."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.name, self.args, self.log = name, args, log
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            out.write(f"\n=== chaos: start {self.name} ===\n".encode())
        self.proc = subprocess.Popen([str(LAKECDC), *self.args], stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True, env=self.env)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.kills += 1
        self.proc.wait(60)

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class ChaosReport:
    seed: int
    operations: int = 0
    kills: Counter[str] = field(default_factory=Counter)  # "victim/moment" -> count
    seconds: float = 0.0

    @property
    def total_kills(self) -> int:
        return sum(self.kills.values())

    def summary(self) -> str:
        by = ", ".join(f"{k} {n}" for k, n in sorted(self.kills.items()))
        return (f"seed {self.seed}: {self.operations} operations, {self.total_kills} kills ({by}) "
                f"in {self.seconds:.0f}s")


class ChaosRun:
    """The pipeline, its processes and the kill schedule (module docstring)."""

    def __init__(self, database: Any, broker: Any, spark: Any, workdir: Path, seed: int,
                 jobs: tuple[str, ...] = DEFAULT_JOBS, job_moments: tuple[str, ...] = JOB_MOMENTS) -> None:
        """``database``: the ``pg`` (PostgreSQL) or ``mariadb`` fixture's server; ``broker``: tansu's
        ``broker`` or Apache Kafka's ``kafka_broker``; ``jobs``: labels of ``JOBS``; ``job_moments``:
        the moments a job is killed at, drawn by the seed (``after-commit`` and ``held`` wait for the job
        to work: a short run of slow-starting JVMs otherwise kills them mostly while they start)."""
        self.job_moments = job_moments
        self.rng = random.Random(seed)
        self.report = ChaosReport(seed)
        self.mariadb = not hasattr(database, "dsn_for")
        pipeline = MariaDbPipeline if self.mariadb else PgPipeline
        self.pipe = pipeline(database, broker, spark, workdir, unique_name("chaos"))
        self.password = database.password
        self.keys = MariaDbChaosWorkload.KEYS if self.mariadb else KEYS
        tables = list(self.keys)
        for label in jobs:
            path = JOBS[label]
            extra = {"batch.max.records": str(path.batch_records), "reader": path.reader}
            if path.connectors == "delta":  # Spark's Delta keeps its tables in the session catalog
                extra["catalog"] = "spark_catalog"
            lake = self.pipe.add_lake(label, path.table_format, tables, **extra)
            if path.connectors == "delta":
                self.pipe.lakes[label] = (self.pipe.lakes[label][0], SessionCatalogDeltaLake(
                    lake.spark, lake.warehouse, lake.namespace, lake.formats))
        self.capture = Process("capture", ["capture", "--config", str(self.pipe.properties),
                                           "--sink", f"kafka:{broker.bootstrap_servers}"], workdir / "capture.log")
        self.jobs = {label: Process(f"ingest-{label}", ["ingest", "--config", str(self.pipe.ingest_config_file(label)),
                                                         "--trigger", "continuous"], workdir / f"ingest-{label}.log",
                                           {"LAKECDC_SPARK_CONNECTORS": JOBS[label].connectors})
                     for label in jobs}
        self.log: ChangeLog | None = None
        self._deck: list[str] = []

    # ------------------------------------------------------------------ the run

    def run(self, operations: int, min_kills: int) -> ChaosReport:
        started = time.monotonic()
        conn = self.pipe.connect()
        workload: ChaosWorkload | MariaDbChaosWorkload
        if self.mariadb:
            self.log = MySqlChangeLog(conn, self.keys, keyless=MariaDbChaosWorkload.KEYLESS)
            workload = MariaDbChaosWorkload(self.log, self.rng.randrange(2**32))
            readers_before = self.pipe._binlog_readers()
            streaming = lambda: bool(self.pipe._binlog_readers() - readers_before)  # noqa: E731
        else:
            create_schema(conn)
            self.log = ChangeLog(conn, KEYS, keyless=KEYLESS)
            workload = ChaosWorkload(self.log, self.rng.randrange(2**32))
            streaming = self.pipe.slot_active
        workload.seed_rows()
        self.capture.start()
        self._wait(streaming, 120, "capture streaming")
        for job in self.jobs.values():
            job.start()
        done = threading.Event()
        failure: list[BaseException] = []

        def write() -> None:
            try:
                for _ in range(operations // 20):
                    workload.run_for(20)
                    time.sleep(self.rng.uniform(0.0, 0.15))
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                failure.append(exc)
            finally:
                done.set()

        writer = threading.Thread(target=write, name="chaos-workload", daemon=True)
        writer.start()
        while not done.is_set() or self.report.total_kills < min_kills:
            self._one_kill()
        writer.join()
        if failure:
            raise failure[0]
        self.report.operations = self.log.changes
        self._finish()
        self.report.seconds = time.monotonic() - started
        conn.close()
        return self.report

    def _one_kill(self) -> None:
        rng = self.rng
        if not self._deck:  # every process is killed each round, capture twice, in a seeded order
            self._deck = ["capture", "capture", *self.jobs]
            rng.shuffle(self._deck)
        victim = self._deck.pop()
        proc = self.capture if victim == "capture" else self.jobs[victim]
        moment = "random" if victim == "capture" else rng.choice(list(self.job_moments))
        if not proc.alive:
            proc.start()
        if moment == "after-commit" and not self._wait_for_commit(proc, 90):
            moment = "random (no commit came)"
        elif moment == "held" and not self._wait_for_held(victim, proc, 30):
            moment = "random (nothing held)"
        if moment.startswith("random"):
            time.sleep(rng.uniform(0.5, 6.0))
        if not proc.alive:  # it died by itself: that is a failure, not a kill
            raise AssertionError(f"{proc.name} exited by itself ({proc.proc.returncode if proc.proc else '?'}):\n"
                                 f"{proc.text()[-4000:]}")
        proc.kill9()
        self.report.kills[f"{victim}/{moment}"] += 1
        proc.start()

    def _wait_for_commit(self, proc: Process, timeout: float) -> bool:
        seen = proc.log_size()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.alive:
            if proc.log_size() > seen:
                with proc.log.open("rb") as f:
                    f.seek(seen)
                    fresh = f.read().decode(errors="replace")
                if any(line in fresh for line in COMMIT_LINE):
                    return True
            time.sleep(0.02)
        return False

    def _wait_for_held(self, label: str, proc: Process, timeout: float) -> bool:
        state = self.pipe.dir / f"{label}-state" / "state.json"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.alive:
            try:
                if json.loads(state.read_text()).get("held_events", 0) > 0:
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        return False

    def _finish(self) -> None:
        """Stop killing: capture drains, then each job reads everything present."""
        self.capture.kill9()
        drain = Process("capture-drain", ["capture", "--config", str(self.pipe.properties), "--sink",
                                          f"kafka:{self.pipe.broker.bootstrap_servers}", "--stop-when-idle", "3"],
                        self.capture.log)
        drain.start()
        assert drain.proc is not None and drain.proc.wait(600) == 0, drain.text()[-4000:]
        for label, job in self.jobs.items():
            job.kill9()
            final = Process(f"ingest-{label}-final", ["ingest", "--config", str(self.pipe.ingest_config_file(label)),
                                                       "--trigger", "available-now"], job.log, job.env)
            final.start()
            assert final.proc is not None and final.proc.wait(900) == 0, final.text()[-4000:]

    # ------------------------------------------------------------------ checks

    def differences(self) -> list[Differences]:
        assert self.log is not None
        diffs = self.pipe.compare_all(self.log, f"chaos {self.report.summary()}")
        leaked = Differences()  # a password in a log, or a job on the wrong path
        for label, job in self.jobs.items():
            if JOBS[label].proof not in job.text():
                leaked.add(f"job {label} did not take its path: no {JOBS[label].proof!r} in {job.log}")
        for path in self.pipe.dir.rglob("*.log"):
            if self.password in path.read_text(errors="replace"):
                leaked.add(f"the database password appears in {path}")
        return [*diffs, leaked]

    def close(self) -> None:
        for proc in (self.capture, *self.jobs.values()):
            proc.kill9()
        self.pipe.close()

    @staticmethod
    def _wait(condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout:.0f}s")
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=["postgres", "mariadb"], default="postgres")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--operations", type=int, default=3000, help="source changes the workload makes")
    parser.add_argument("--kills", type=int, default=50, help="at least this many SIGKILLs in all")
    parser.add_argument("--broker", choices=["tansu", "kafka"], default="tansu",
                        help="tansu (the fast broker) or Apache Kafka in KRaft mode (its jars cached by the bootstrap)")
    parser.add_argument("--jobs", default=",".join(DEFAULT_JOBS),
                        help=f"comma-separated ingest job paths of {sorted(JOBS)} (module docstring)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    import tempfile

    from lakecdc.devstack.broker import Broker
    from lakecdc.devstack.kafka import KafkaBroker
    from lakecdc.devstack.mariadb import MariaDB
    from lakecdc.devstack.postgres import Postgres
    from lakecdc.devstack.spark import spark_session

    jobs = tuple(label.strip() for label in args.jobs.split(",") if label.strip())
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown or not jobs:
        parser.error(f"--jobs: unknown job path(s) {unknown}: choose from {sorted(JOBS)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lakecdc-chaos-"))
    # The jobs it kills run no shutdown hook: their Spark folders (each a 43 MB copy of the jars) go
    # in the working directory instead of /tmp (as the test suite's do, tests/conftest.py).
    (workdir / "spark-local").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SPARK_LOCAL_DIRS", str(workdir / "spark-local"))
    with (KafkaBroker() if args.broker == "kafka" else Broker()) as broker, \
            (MariaDB() if args.source == "mariadb" else Postgres(version=18)) as database:
        spark = spark_session(workdir / "reader-warehouse", app_name="lakecdc-chaos")
        run = ChaosRun(database, broker, spark, workdir, args.seed, jobs)
        try:
            report = run.run(args.operations, args.kills)
            print(f"{report.summary()}; broker {args.broker}, jobs {','.join(jobs)}")
            check(run.differences())
            print("every silver table equals its source; bronze holds every change exactly once; no password in logs")
        finally:
            run.close()
            spark.stop()
    if args.workdir is None:  # passed: a failed run keeps its logs and tables for a look
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
