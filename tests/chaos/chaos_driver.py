"""The chaos driver: capture and two ingest jobs killed with SIGKILL while a seeded workload runs.

A seeded PostgreSQL or MariaDB workload (``chaos_workload``) runs against a database captured by
``lakecdc capture`` into the broker, and two continuous ``lakecdc ingest`` jobs (one writing
Iceberg, one Delta) read it. A seeded schedule kills one of the three processes with SIGKILL (its
whole process group, JVM included) at a chosen kind of moment, then restarts it:

- ``random``: after a random pause;
- ``after-commit`` (ingest): right after the job logs a bronze or silver table commit;
- ``held`` (ingest): while the job holds events of a transaction it has not seen complete.

When the workload is done, capture drains and each job runs ``available-now``; then every silver
table must equal its source row by row with exact types, bronze must hold every change exactly
once, and no log may contain the database password.

By hand (its own local stack and Spark session)::

    .venv/bin/python tests/chaos/chaos_driver.py --seed 7 --operations 3000 --kills 60
    .venv/bin/python tests/chaos/chaos_driver.py --source mariadb --seed 7 --kills 30
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
from e2e_lake import Differences, check  # noqa: E402
from e2e_mysql import MariaDbPipeline  # noqa: E402
from e2e_pipeline import PgPipeline, unique_name  # noqa: E402
from workloads.changelog import ChangeLog, MySqlChangeLog  # noqa: E402

LAKECDC = Path(sys.executable).with_name("lakecdc")
COMMIT_LINE = (" INFO lakecdc.writers.base: bronze ", " INFO lakecdc.writers.base: silver ")


class Process:
    """One ``lakecdc`` command, restartable, killed with SIGKILL to its whole process group."""

    def __init__(self, name: str, args: list[str], log: Path) -> None:
        self.name, self.args, self.log = name, args, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            out.write(f"\n=== chaos: start {self.name} ===\n".encode())
        self.proc = subprocess.Popen([str(LAKECDC), *self.args], stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

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
    """The pipeline, its three processes and the kill schedule (module docstring)."""

    def __init__(self, database: Any, broker: Any, spark: Any, workdir: Path, seed: int) -> None:
        """``database``: the ``pg`` (PostgreSQL) or ``mariadb`` fixture's server."""
        self.rng = random.Random(seed)
        self.report = ChaosReport(seed)
        self.mariadb = not hasattr(database, "dsn_for")
        pipeline = MariaDbPipeline if self.mariadb else PgPipeline
        self.pipe = pipeline(database, broker, spark, workdir, unique_name("chaos"))
        self.password = database.password
        self.keys = MariaDbChaosWorkload.KEYS if self.mariadb else KEYS
        tables = list(self.keys)
        # batches smaller than the backlog: transactions straddle batch ends and are held
        self.pipe.add_lake("ice", "iceberg", tables, **{"batch.max.records": "1500"})
        self.pipe.add_lake("dlt", "delta", tables, **{"batch.max.records": "400"})
        self.capture = Process("capture", ["capture", "--config", str(self.pipe.properties),
                                           "--sink", f"kafka:{broker.bootstrap_servers}"], workdir / "capture.log")
        self.jobs = {label: Process(f"ingest-{label}", ["ingest", "--config", str(self.pipe.ingest_config_file(label)),
                                                         "--trigger", "continuous"], workdir / f"ingest-{label}.log")
                     for label in ("ice", "dlt")}
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
            self._deck = ["capture", "capture", "ice", "dlt"]
            rng.shuffle(self._deck)
        victim = self._deck.pop()
        proc = self.capture if victim == "capture" else self.jobs[victim]
        moment = "random" if victim == "capture" else rng.choice(["random", "after-commit", "held"])
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
                                                       "--trigger", "available-now"], job.log)
            final.start()
            assert final.proc is not None and final.proc.wait(900) == 0, final.text()[-4000:]

    # ------------------------------------------------------------------ checks

    def differences(self) -> list[Differences]:
        assert self.log is not None
        diffs = self.pipe.compare_all(self.log, f"chaos {self.report.summary()}")
        leaked = Differences()
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
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    import tempfile

    from lakecdc.devstack.broker import Broker
    from lakecdc.devstack.mariadb import MariaDB
    from lakecdc.devstack.postgres import Postgres
    from lakecdc.devstack.spark import spark_session

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lakecdc-chaos-"))
    with Broker() as broker, (MariaDB() if args.source == "mariadb" else Postgres(version=18)) as database:
        spark = spark_session(workdir / "reader-warehouse", app_name="lakecdc-chaos")
        run = ChaosRun(database, broker, spark, workdir, args.seed)
        try:
            report = run.run(args.operations, args.kills)
            print(report.summary())
            check(run.differences())
            print("every silver table equals its source; bronze holds every change exactly once; no password in logs")
        finally:
            run.close()
            spark.stop()


if __name__ == "__main__":
    main()
