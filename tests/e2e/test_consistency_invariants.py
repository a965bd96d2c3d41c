"""Transaction-consistent reads across tables, through kill -9 of the ingest job (issue 19, issue 12).

Source: money transfers between ``bank_a.checking`` and ``bank_b.savings`` (the sum over both is
constant at every source commit) and orders inserted and deleted together with their lines
(``workloads.invariants``). Half the tables are Delta, half Iceberg; the consistency log is Delta.

PostgreSQL also gets a transaction open across the snapshot: it begins after the replication slot
started building its snapshot and commits after the slot's consistent point, so its event LSNs lie
below the snapshot position and its ``source.sequence[0]`` is null -- it must still rank after the
snapshot rows (silver took none of its updates before).

The ingest job runs as its own process in small micro-batches (transactions split across batches)
and is killed with SIGKILL: right after one table's silver commit (before the next table's), at a
random bronze commit, and once it has caught up. While the last run goes on, every consistency point
it publishes is read: the tables at it must be a state the source had (one recorded commit, exactly).
At the end, every recorded source commit is read back as of its position across all tables
(``lakecdc.audit.consistency.read_consistent``) and must equal what the source held right after that commit.
On MariaDB, positions inside transactions (a change before the transaction's last one) must read as the
state before the transaction, also where one table's version ends with its whole part of it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_pipeline import CaptureRun, PgPipeline, _session_for, unique_name
from workloads.invariants import Commit, Workload, invariant_errors, rows_of

from lakecdc.audit.consistency import latest_point, read_consistent
from lakecdc.audit.notation import parse_position
from lakecdc.audit.tables import LakeTable, to_pandas

# each test starts, kills and restarts the job three times and reads every recorded commit back: on a
# loaded 2-core machine the MariaDB one took more than pytest's default 900 s
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(2400)]

LAKECDC = Path(sys.executable).with_name("lakecdc")
SEED = 1919
TABLES = {"checking": ("bank_a", "delta", "balance"), "savings": ("bank_b", "iceberg", "balance"),
          "orders": ("shop", "delta", "n_lines"), "order_lines": ("shop", "iceberg", "order_id")}


def start_ingest(config: Path, trigger: str, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([str(LAKECDC), "ingest", "--config", str(config), "--trigger", trigger],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True, env=env)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)


def wait_for_commits(process: subprocess.Popen[bytes], log: Path, kind: str, count: int,
                     timeout: float = 600) -> None:
    """Until the job has logged ``count`` ``kind`` (bronze/silver) commits in this log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if text.count(f" INFO lakecdc.writers.base: {kind} ") >= count:
            return
        if process.poll() is not None:
            raise AssertionError(f"ingest exited ({process.returncode}) early:\n{text[-3000:]}")
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} {kind} commits within {timeout}s:\n{log.read_text()[-3000:]}")


class Lakes:
    """The four silver tables and the consistency log of the job, as ``LakeTable``s."""

    def __init__(self, spark: Any, warehouse: Path, namespace: str) -> None:
        session = _session_for(spark, warehouse)
        self.silver = {t: (LakeTable.delta(warehouse, f"{namespace}_silver.{t}") if fmt == "delta"
                           else LakeTable.iceberg(session, f"{namespace}_silver.{t}"))
                       for t, (_, fmt, _) in TABLES.items()}
        self.bronze = {self.silver[t].name: (LakeTable.delta(warehouse, f"{namespace}_bronze.{t}") if fmt == "delta"
                                             else LakeTable.iceberg(session, f"{namespace}_bronze.{t}"))
                       for t, (_, fmt, _) in TABLES.items()}
        self.log = LakeTable.delta(warehouse, "lakecdc.consistency")
        #: source states before the first recorded commit (the snapshot's)
        self.earlier_states: list[dict[str, dict[int, int]]] = []

    def read(self, position: Any = None) -> dict[str, dict[int, int]]:
        tables = list(self.silver.values())
        reads = read_consistent(tables, position, self.log, self.bronze)
        out = {}
        for t, table in self.silver.items():
            key_value = TABLES[t][2]
            out[t] = rows_of(reads[table.name].rows, "id", key_value)
        return out


def check_published_point(lakes: Lakes, commits: list[Commit], where: str) -> bool:
    """The tables at the newest published point are exactly one recorded source state."""
    point = latest_point(lakes.log)
    if point is None:
        return False
    tables = lakes.read()
    errors = invariant_errors(tables, f"{where}, point {point.position}")
    assert not errors, "\n".join(errors)
    states = [*lakes.earlier_states, *(c.model.tables() for c in commits)]
    assert tables in states, f"{where}: the tables at point {point.position} are no state the source had"
    return True


# ---------------------------------------------------------------------------------- PostgreSQL

DDL = [
    "CREATE SCHEMA bank_a", "CREATE SCHEMA bank_b", "CREATE SCHEMA shop",
    "CREATE TABLE bank_a.checking (id int PRIMARY KEY, balance bigint NOT NULL)",
    "CREATE TABLE bank_b.savings (id int PRIMARY KEY, balance bigint NOT NULL)",
    "CREATE TABLE shop.orders (id int PRIMARY KEY, n_lines int NOT NULL)",
    "CREATE TABLE shop.order_lines (id int PRIMARY KEY, order_id int NOT NULL)",
    "CREATE TABLE public.noise (id int PRIMARY KEY, v int)",
    "INSERT INTO public.noise VALUES (1, 0), (2, 0)",
]
NAMES = {t: f"{schema}.{t}" for t, (schema, _, _) in TABLES.items()}


def pg_executor(conn: Any) -> Any:
    def execute(statements: list[str]) -> str:
        with conn.transaction():
            for statement in statements:
                conn.execute(statement.format(**NAMES))
        return str(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])
    return execute


def slot_state(pipe: PgPipeline) -> tuple[bool, bool]:
    """(the slot exists, its creation finished: it has a confirmed flush LSN)."""
    import psycopg

    with psycopg.connect(pipe.pg.dsn_for("postgres"), autocommit=True) as admin:
        row = admin.execute("SELECT confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots WHERE slot_name = %s",
                            (pipe.slot,)).fetchone()
    return (row is not None, bool(row and row[0]))


def wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def test_pg_transfers_and_orders_read_consistently_through_kills(pg, broker, spark, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    pipe = PgPipeline(pg, broker, spark, tmp_path, unique_name("cons"))
    try:
        _run_pg(pipe, rng, tmp_path, spark)
    finally:
        print("timings:", "; ".join(pipe.timings))
        pipe.close()


def _run_pg(pipe: PgPipeline, rng: random.Random, tmp_path: Path, spark: Any) -> None:
    started = time.monotonic()
    with pipe.connect() as conn, pipe.connect() as a, pipe.connect() as b, pipe.connect() as c, \
            pipe.connect() as admin:
        for statement in DDL:
            conn.execute(statement)
        workload = Workload(pg_executor(conn), rng)
        with conn.transaction():
            for statement in workload.seed_statements():
                conn.execute(statement.format(**NAMES))
        # A transaction open across the snapshot (module docstring): A is open while the slot starts,
        # B begins while it builds, C begins after A ends and commits after the consistent point.
        a.execute("BEGIN")
        a.execute("UPDATE public.noise SET v = v + 1 WHERE id = 1")
        capture = CaptureRun(pipe.properties, pipe.broker.bootstrap_servers, idle_s=6)
        wait_until(lambda: slot_state(pipe)[0], "the replication slot was not created")
        time.sleep(0.5)
        b.execute("BEGIN")
        b.execute("UPDATE public.noise SET v = v + 1 WHERE id = 2")
        a.execute("COMMIT")
        admin.execute("SELECT pg_log_standby_snapshot()")
        time.sleep(0.5)
        snapshot_state = _copy(workload).tables()
        c.execute("BEGIN")
        c.execute(f"UPDATE {NAMES['checking']} SET balance = balance - 7 WHERE id = 1")
        c.execute(f"UPDATE {NAMES['savings']} SET balance = balance + 7 WHERE id = 2")
        b.execute("COMMIT")
        admin.execute("SELECT pg_log_standby_snapshot()")
        wait_until(lambda: slot_state(pipe)[1], "the replication slot never became consistent")
        time.sleep(1.0)  # the snapshot runs on the exported snapshot (C is not in it)
        c.execute("COMMIT")
        workload.model.checking[1] -= 7
        workload.model.savings[2] += 7
        workload.commits.append(Commit(str(c.execute("SELECT pg_current_wal_lsn()").fetchone()[0]),
                                       _copy(workload), "open across the snapshot"))
        workload.run(26)
        # One more change after the recorded commits: a position is answerable once the job has
        # read past it (the last commit's own LSN is, a later LSN in the idle WAL is not yet).
        conn.execute("UPDATE public.noise SET v = v + 1 WHERE id = 1")
        capture.join(300)
    pipe.timings.append(f"source+capture {time.monotonic() - started:.1f}s")

    namespace = f"{pipe.name}_cons"
    mapping = {f"table.mapping.{pipe.name}.{schema}.{t}.format": fmt for t, (schema, fmt, _) in TABLES.items()}
    pipe.add_lake("cons", "delta", list(TABLES), **{"batch.max.records": "20", "batch.max.wait.ms": "200",
                                                    "apply.parallelism": "1", **mapping})
    config = pipe.ingest_config_file("cons")
    lakes = Lakes(spark, tmp_path / "cons-warehouse", namespace)
    lakes.earlier_states.append(snapshot_state)
    _kill_restart_and_check(config, lakes, workload.commits, rng, tmp_path / "ingest.log", pipe.timings)

    # The transaction open across the snapshot really had event LSNs below the snapshot's.
    bronze = to_pandas(lakes.bronze[lakes.silver["checking"].name].arrow())
    snapshot_lsn = max(s[1] for s, op in zip(bronze["_seq"], bronze["_op"]) if op == "r")
    crossing = [s for s, op in zip(bronze["_seq"], bronze["_op"]) if op == "u" and s[1] < snapshot_lsn]
    assert crossing, "the workload did not produce a transaction open across the snapshot"
    assert all(s[0] > snapshot_lsn for s in crossing)  # ranked at its commit, after the snapshot rows


def _copy(workload: Workload) -> Any:
    import copy

    return copy.deepcopy(workload.model)


def _kill_restart_and_check(config: Path, lakes: Lakes, commits: list[Commit], rng: random.Random, log: Path,
                            timings: list[str]) -> None:
    started = time.monotonic()
    # 1: killed right after a silver commit, before the next table's commit (apply.parallelism 1).
    first = start_ingest(config, "continuous", log)
    try:
        wait_for_commits(first, log, "silver", rng.randint(3, 6))
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(60)
    finally:
        kill_group(first)
    assert first.returncode == -signal.SIGKILL
    # 2: restarted, killed at a random bronze commit (a table half written: bronze without silver).
    done = log.read_text(errors="replace").count(" INFO lakecdc.writers.base: bronze ")
    second = start_ingest(config, "continuous", log)
    try:
        wait_for_commits(second, log, "bronze", done + rng.randint(1, 4))
        os.killpg(second.pid, signal.SIGKILL)
        second.wait(60)
    finally:
        kill_group(second)
    # 3: restarted again; every point it publishes is read while it runs, until it has caught up.
    connector = "postgres" if "/" in commits[-1].position else "mysql"
    last = parse_position(connector, commits[-1].position)
    live_checks = 0
    third = start_ingest(config, "continuous", log)
    try:
        seen = None
        deadline = time.monotonic() + 600  # it catches up in 1-3 minutes on a busy 2-core machine
        while True:
            point = latest_point(lakes.log)
            if point is not None and point.complete_through != seen:
                seen = point.complete_through
                live_checks += check_published_point(lakes, commits, "while the job runs")
                if point.reached >= last:
                    break
            assert third.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, f"the job did not catch up:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
    finally:
        kill_group(third)
    timings.append(f"ingest with 3 kills {time.monotonic() - started:.1f}s, {live_checks} live points checked")
    assert live_checks >= 1
    started = time.monotonic()
    assert lakes.read() == commits[-1].model.tables()
    for commit in commits:
        tables = lakes.read(commit.position)
        errors = invariant_errors(tables, f"as of {commit.position} ({commit.what})")
        assert not errors, "\n".join(errors)
        assert tables == commit.model.tables(), f"as of {commit.position} ({commit.what}): not the source's state"
    timings.append(f"{len(commits)} commits read as of their positions {time.monotonic() - started:.1f}s")
    _check_cli(config, lakes, commits[len(commits) // 2])


def _check_cli(config: Path, lakes: Lakes, commit: Commit) -> None:
    """``lakecdc audit`` with the ingest configuration: positions in the source's notation, 80 columns."""
    from typer.testing import CliRunner

    from lakecdc.cli.main import app

    runner = CliRunner()
    delta = [lakes.silver[t].name for t in ("checking", "orders")]  # Delta: no Spark session needed here
    sql = runner.invoke(app, ["audit", "consistent", "-c", str(config), "--sql"])
    assert sql.exit_code == 0, sql.output
    assert all(f"{name} VERSION AS OF" in sql.output or f"{name.split('.')[-1]}` VERSION AS OF" in sql.output
               for name in delta + [lakes.silver[t].name for t in ("savings", "order_lines")]), sql.output
    read = runner.invoke(app, ["audit", "as-of", *delta, "-c", str(config), "--position", commit.position])
    assert read.exit_code == 0, read.output
    assert all(name in read.output for name in delta) and "complete through" in read.output
    versions = runner.invoke(app, ["audit", "versions", delta[0], "-c", str(config)])
    assert versions.exit_code == 0, versions.output
    assert max(len(line) for line in versions.output.splitlines()) <= 80, versions.output
    assert "," not in versions.output.split("complete through", 1)[1]  # positions in notation, not a tuple


# ---------------------------------------------------------------------------------- MariaDB

def inside_positions(lakes: Lakes, commits: list[Commit], gtids: dict[str, str],
                     first: int = 3, ending: int = 6) -> list[tuple[tuple[int, ...], Commit, Commit, bool]]:
    """Positions strictly inside recorded transactions (MariaDB ranks each change at its own row
    event): (position, the commit before, the transaction, a silver version ends there). The first
    change of the ``first`` transactions with several, and up to ``ending`` positions where one
    table's version ends with its whole part of a transaction that goes on in another table (how
    the job commits decides whether a run has any)."""
    from lakecdc.audit.versions import table_versions

    changes: dict[str, set[tuple[int, ...]]] = {}
    for table in lakes.bronze.values():
        frame = to_pandas(table.arrow())
        for tx, seq in zip(frame["_tx_id"], frame["_seq"]):
            changes.setdefault(tx, set()).add(tuple(int(v) for v in seq))
    ends = {tuple(v.source_position) for table in lakes.silver.values() for v in table_versions(table)
            if v.source_position is not None}
    out = []
    for before, commit in zip(commits, commits[1:]):
        inner = sorted(changes.get(gtids[commit.position], ()))[:-1]  # before its last change
        if inner and first > 0:
            first -= 1
            out.append((inner[0], before, commit, inner[0] in ends))
        for position in [p for p in inner if p in ends and p != inner[0]][:ending]:
            ending -= 1
            out.append((position, before, commit, True))
    return out


def test_mariadb_transfers_and_orders_read_consistently_through_kills(mariadb, broker, spark, tmp_path: Path) -> None:
    from e2e_mysql import MariaDbPipeline

    rng = random.Random(SEED + 1)
    pipe = MariaDbPipeline(mariadb, broker, spark, tmp_path, unique_name("consmy"))
    other = f"{pipe.name}_b"  # savings lives in a second database (MySQL's schemas)
    mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{other}`;\nCREATE DATABASE `{other}`;\n")
    text = pipe.properties.read_text().replace(f"database.include.list={pipe.name}\n",
                                               f"database.include.list={pipe.name},{other}\n")
    pipe.properties.write_text(text)
    databases = {"checking": pipe.name, "savings": other, "orders": pipe.name, "order_lines": pipe.name}
    names = {t: f"`{databases[t]}`.`{t}`" for t in TABLES}
    conn = pipe.connect()
    try:
        with conn.cursor() as cur:
            for t, column in (("checking", "balance"), ("savings", "balance"), ("orders", "n_lines"),
                              ("order_lines", "order_id")):
                cur.execute(f"CREATE TABLE {names[t]} (id INT PRIMARY KEY, {column} BIGINT NOT NULL)")

        def execute(statements: list[str]) -> str:
            conn.begin()
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement.format(**names))
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SHOW MASTER STATUS")
                file, position = cur.fetchone()[:2]
                cur.execute("SELECT @@last_gtid")
                gtids[f"{file}:{position}"] = cur.fetchone()[0]
            return f"{file}:{position}"

        gtids: dict[str, str] = {}
        workload = Workload(execute, rng)
        execute(workload.seed_statements())  # before capture: in the snapshot, not a recorded commit
        snapshot_state = {t: dict(rows) for t, rows in workload.model.tables().items()}
        started = time.monotonic()
        with pipe.capture_while():
            workload.run(26)
            with conn.cursor() as cur:  # read past the last recorded commit (see the PostgreSQL test)
                cur.execute(f"UPDATE {names['orders']} SET n_lines = n_lines WHERE id < 0")
                cur.execute(f"INSERT INTO {names['checking']} (id, balance) VALUES (9999, 0)")
                cur.execute(f"DELETE FROM {names['checking']} WHERE id = 9999")
        pipe.timings.append(f"source+capture {time.monotonic() - started:.1f}s")
        mapping = {f"table.mapping.{pipe.name}.{databases[t]}.{t}.format": fmt for t, (_, fmt, _) in TABLES.items()}
        pipe.add_lake("cons", "delta", list(TABLES), **{"batch.max.records": "20", "batch.max.wait.ms": "200",
                                                        "apply.parallelism": "1", **mapping})
        lakes = Lakes(spark, tmp_path / "cons-warehouse", f"{pipe.name}_cons")
        lakes.earlier_states.append(snapshot_state)
        _kill_restart_and_check(pipe.ingest_config_file("cons"), lakes, workload.commits, rng,
                                tmp_path / "ingest.log", pipe.timings)
        for commit in workload.commits[::5]:  # a GTID names a transaction: the state right after it
            assert lakes.read(gtids[commit.position]) == commit.model.tables(), f"as of GTID {gtids[commit.position]}"
        # Binlog positions inside a transaction (a change before its last one): the state before it.
        inside = inside_positions(lakes, workload.commits, gtids)
        wrong = [f"inside {commit.what} at {position}{' (a version ends there)' * ends}"
                 for position, before, commit, ends in inside if lakes.read(list(position)) != before.model.tables()]
        pipe.timings.append(f"{len(inside)} positions inside transactions read, "
                            f"{sum(ends for *_, ends in inside)} where a table's version ends")
        assert len(inside) >= 3 and not wrong, wrong
    finally:
        conn.close()
        print("timings:", "; ".join(pipe.timings))
        mariadb.admin_sql(f"DROP DATABASE IF EXISTS `{other}`;\n")
        pipe.close()
