"""The whole local stack: broker, PostgreSQL and MariaDB started together, and its state file.

From Python (tests, notebooks)::

    with DevStack() as stack:
        stack.broker.bootstrap_servers, stack.postgres.dsn, stack.mariadb.connect_kwargs()

For ``lakecdc dev up | status | down`` the stack outlives the command: ``up()`` detaches the
servers and records them in ``.lakecdc/devstack.json`` (ports, pids, directories, masked DSNs;
passwords only as ``file:`` references to 0600 files next to it), ``down()`` stops what is
recorded and removes every directory and password file. Example state file::

    {"parts": {"postgres": {"part": "postgres18", "pid": 4242, "port": 40123,
                            "root_dir": "/tmp/lakecdc-postgres18-ab12", "user": "lakecdc",
                            "dsn": "host=127.0.0.1 port=40123 user=lakecdc password=*** dbname=lakecdc",
                            "password": "file:/repo/.lakecdc/devstack/postgres.password"}, ...},
     "jars": ["/repo/.venv/share/lakecdc/jars/iceberg-shaded-jackson-2.15.2.jar", ...]}
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from typing_extensions import Self

from lakecdc.devstack.broker import Broker
from lakecdc.devstack.errors import DevStackError
from lakecdc.devstack.kafka import KafkaBroker
from lakecdc.devstack.mariadb import MariaDB
from lakecdc.devstack.part import ServicePart
from lakecdc.devstack.ports import port_is_open
from lakecdc.devstack.postgres import Postgres
from lakecdc.devstack.process import group_members, remove_tree
from lakecdc.errors import SparkSetupError

PART_NAMES = ("broker", "postgres", "mariadb")
#: the broker part: tansu (fast, the default) or Apache Kafka (KRaft, jars from Maven Central)
BrokerKind = Literal["tansu", "kafka"]
BROKER_KINDS: tuple[BrokerKind, ...] = ("tansu", "kafka")
PartT = TypeVar("PartT", bound=ServicePart)


def state_dir() -> Path:
    """``$LAKECDC_HOME`` or ``./.lakecdc``: where ``lakecdc dev up`` records the running stack."""
    return Path(os.environ.get("LAKECDC_HOME", ".lakecdc")).resolve()


def state_path() -> Path:
    return state_dir() / "devstack.json"


class DevStack:
    """Broker, PostgreSQL and MariaDB, each on its own port and directory, started in parallel."""

    def __init__(self, parts: tuple[str, ...] = PART_NAMES, pg_version: int = 18,
                 base_dir: Path | str | None = None, broker: BrokerKind = "tansu") -> None:
        unknown = sorted(set(parts) - set(PART_NAMES))
        if unknown:
            raise ValueError(f"unknown devstack part(s) {unknown}: choose from {list(PART_NAMES)}")
        self.parts: dict[str, ServicePart] = {}
        if broker not in BROKER_KINDS:
            raise ValueError(f"unknown broker {broker!r}: choose from {list(BROKER_KINDS)}")
        if "broker" in parts:
            self.parts["broker"] = Broker(base_dir=base_dir) if broker == "tansu" else KafkaBroker(base_dir=base_dir)
        if "postgres" in parts:
            self.parts["postgres"] = Postgres(version=pg_version, base_dir=base_dir)
        if "mariadb" in parts:
            self.parts["mariadb"] = MariaDB(base_dir=base_dir)

    @property
    def broker(self) -> Broker | KafkaBroker:
        part = self.parts.get("broker")
        if not isinstance(part, (Broker, KafkaBroker)):
            raise DevStackError("this stack was created without its broker")
        return part

    @property
    def postgres(self) -> Postgres:
        return self._part("postgres", Postgres)

    @property
    def mariadb(self) -> MariaDB:
        return self._part("mariadb", MariaDB)

    def _part(self, name: str, kind: type[PartT]) -> PartT:
        part = self.parts.get(name)
        if not isinstance(part, kind):
            raise DevStackError(f"this stack was created without its {name}")
        return part

    def start(self) -> Self:
        """Start every part in parallel; if one fails, stop the others and raise its error."""
        with ThreadPoolExecutor(max_workers=len(self.parts) or 1) as pool:
            futures = {name: pool.submit(part.start) for name, part in self.parts.items()}
            errors = [future.exception() for future in futures.values()]
        failures = [error for error in errors if error is not None]
        if failures:
            self.stop()
            if len(failures) == 1:
                raise failures[0]
            raise DevStackError("; ".join(str(error) for error in failures)) from failures[0]
        return self

    def stop(self) -> None:
        for part in self.parts.values():
            part.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass(frozen=True)
class PartStatus:
    name: str
    pid: int | None
    port: int | None
    alive: bool
    port_open: bool
    endpoint: str
    root_dir: str | None
    log: str | None


def read_state(path: Path | None = None) -> dict[str, Any] | None:
    path = path or state_path()
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _write_secret(directory: Path, name: str, secret: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    secret_file = directory / f"{name}.password"
    fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret)
    return f"file:{secret_file}"


def up(parts: tuple[str, ...] = PART_NAMES, pg_version: int = 18, with_jars: bool = True,
       path: Path | None = None, broker: BrokerKind = "tansu") -> dict[str, Any]:
    """Start the stack detached from this process and record it; returns the recorded state.

    Refuses when a recorded stack is still running (``down()`` first).
    """
    path = path or state_path()
    existing = read_state(path)
    if existing is not None:
        if any(row.alive for row in status(path)):
            raise DevStackError(f"a local stack is already running (state: {path}); run `lakecdc dev down` first")
        down(path)
    started = time.monotonic()
    stack = DevStack(parts=parts, pg_version=pg_version, broker=broker).start()
    secrets_dir = path.parent / "devstack"
    recorded: dict[str, Any] = {}
    for name, part in stack.parts.items():
        entry = part.detach()
        password = getattr(part, "password", None)
        if password:
            entry["password"] = _write_secret(secrets_dir, name, password)
        recorded[name] = entry
    state: dict[str, Any] = {"parts": recorded, "started_in_s": round(time.monotonic() - started, 2)}
    if with_jars:
        from lakecdc.spark.jars import iceberg_jars

        try:
            state["jars"] = [str(jar) for jar in iceberg_jars()]
        except SparkSetupError as error:
            state["jars_error"] = str(error)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")
    return state


def status(path: Path | None = None) -> list[PartStatus]:
    state = read_state(path)
    if state is None:
        return []
    rows = []
    for name, entry in state["parts"].items():
        pid, port = entry.get("pid"), entry.get("port")
        endpoint = entry.get("dsn") or entry.get("bootstrap_servers") or f"127.0.0.1:{port}"
        rows.append(PartStatus(
            name=name, pid=pid, port=port,
            alive=bool(pid and group_members(pid)),
            port_open=bool(port and port_is_open(port)),
            endpoint=endpoint, root_dir=entry.get("root_dir"), log=entry.get("log"),
        ))
    return rows


def down(path: Path | None = None) -> list[str]:
    """Stop every recorded part, delete its directory and password file, remove the state file.

    Returns the names of the parts that were recorded.
    """
    path = path or state_path()
    state = read_state(path)
    if state is None:
        return []
    stopped = []
    for name, entry in state["parts"].items():
        ServicePart.stop_recorded(entry)
        secret = entry.get("password", "")
        if secret.startswith("file:"):
            Path(secret[len("file:"):]).unlink(missing_ok=True)
        stopped.append(name)
    secrets_dir = path.parent / "devstack"
    if secrets_dir.exists() and not any(secrets_dir.iterdir()):
        remove_tree(secrets_dir)
    path.unlink(missing_ok=True)
    return stopped
