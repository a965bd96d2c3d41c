"""The life cycle every devstack server shares: own port, own directory, own process group.

``ServicePart.start()`` runs these steps, and on any failure stops what it started, keeps a copy
of the part's log outside the removed directory, and raises ``PartStartError(part, reason, log)``:

1. create a private directory (``lakecdc-<part>-*`` under the temp dir or ``base_dir``);
2. pick a free loopback port (unless one was given);
3. ``_prepare()``: initialise the data directory (initdb, mariadb-install-db, config files);
4. spawn the server as a process-group leader, its output going to ``<dir>/server.log``;
5. wait until ``_ready()`` (the server answers), failing fast if the process exits;
6. ``_provision()``: users, passwords, databases.

``stop()`` signals the whole process group, waits for every member to exit and deletes the
directory. It is idempotent and also runs from a finalizer at interpreter exit, unless the part
was ``detach()``-ed to keep running for ``lakecdc dev up`` (then ``stop_recorded`` stops it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from typing_extensions import Self

from lakecdc.devstack.errors import PartStartError
from lakecdc.devstack.ports import LOOPBACK, free_port, wait_until
from lakecdc.devstack.process import executable_by, group_members, remove_tree, service_user, spawn, stop_group

_PORT_RACE_MARKERS = ("address already in use", "address in use", "could not bind")


OWNER_FILE = "owner.json"


def _cleanup(pgid: int | None, proc: subprocess.Popen[bytes] | None, root_dir: Path | None,
             term_signal: int) -> None:
    if pgid is not None:
        stop_group(pgid, proc, term_signal=term_signal)
    if root_dir is not None:
        remove_tree(root_dir)


def _is_our_server(pid: int, identity: str) -> bool:
    """True when ``pid`` still runs the server we started (its command line names ``identity``),
    so a recycled pid is never signalled."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return identity in cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False


def _process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read().decode(errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] not in ("Z", "X")


def reap_orphans(temp_dir: Path | str | None = None) -> list[Path]:
    """Stop parts whose owning process died without stopping them (``kill -9`` of a test run).

    Each started part records its owner's pid in ``<dir>/owner.json``; parts detached for
    ``lakecdc dev up`` record no owner and are left alone. Returns the directories removed.
    """
    reaped = []
    for owner_file in Path(temp_dir or tempfile.gettempdir()).glob(f"lakecdc-*/{OWNER_FILE}"):
        try:
            owner = json.loads(owner_file.read_text())
        except (OSError, ValueError):
            continue
        owner_pid = owner.get("owner_pid")
        if owner_pid is None or _process_alive(owner_pid):
            continue
        server_pid = owner.get("server_pid")
        alive = server_pid is not None and _is_our_server(server_pid, owner.get("identity", "\0"))
        _cleanup(server_pid if alive else None, None, owner_file.parent,
                 int(owner.get("stop_signal", signal.SIGTERM)))
        reaped.append(owner_file.parent)
    return reaped


class ServicePart(ABC):
    """A local server with its own loopback port, directory and process group."""

    #: Names the part in logs and errors; subclasses may refine it per instance.
    part_name: str = "part"
    #: Signal that asks the server for a clean, quick shutdown.
    stop_signal: ClassVar[int] = signal.SIGTERM
    start_attempts: ClassVar[int] = 3
    #: System users the server runs as when the caller is root (servers that refuse root).
    service_users: ClassVar[tuple[str, ...]] = ()

    def __init__(self, port: int | None = None, base_dir: Path | str | None = None,
                 start_timeout: float = 30.0) -> None:
        self.host = LOOPBACK
        self._requested_port = port
        self.port: int = port or 0
        self._base_dir = Path(base_dir) if base_dir is not None else None
        self.start_timeout = start_timeout
        self.root_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._run_as: str | None = None

    # -- the part-specific steps -------------------------------------------------------------
    @abstractmethod
    def _prepare(self) -> None:
        """Initialise the data directory under ``self.root_dir`` for ``self.port``."""

    @abstractmethod
    def _command(self) -> tuple[list[str], str | None]:
        """The server command line and the system user to run it as (None: the caller)."""

    @abstractmethod
    def _ready(self) -> bool:
        """True when the server answers its clients."""

    def _provision(self) -> None:
        """Create users and databases once the server answers."""

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _identity(self) -> str:
        """A string the server's command line contains (to recognise it by pid later)."""
        return str(self.root_dir)

    # -- life cycle ---------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        if self.root_dir is None:
            raise RuntimeError(f"{self.part_name} has not been started")
        return self.root_dir / "server.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and bool(group_members(self._proc.pid))

    def start(self) -> Self:
        if self._proc is not None:
            return self
        for attempt in range(1, self.start_attempts + 1):
            try:
                self._start_once()
                return self
            except PartStartError as error:
                if self._requested_port is None and attempt < self.start_attempts and _lost_port_race(error):
                    continue
                raise
        raise AssertionError("unreachable")

    def _make_root_dir(self) -> Path:
        """The part's private directory, in ``base_dir`` when the server's user can reach it.

        As root, servers run as a system user that may not be able to enter ``base_dir`` (e.g.
        under ``/root``, mode 0700); the directory then goes to the system temp dir instead.
        """
        base_dir = self._base_dir
        if base_dir is not None and self._run_as is not None and not executable_by(self._run_as, base_dir):
            base_dir = None
        return Path(tempfile.mkdtemp(prefix=f"lakecdc-{self.part_name}-", dir=base_dir))

    def _start_once(self) -> None:
        step = "preparing its data directory"
        try:
            self._run_as = service_user(self.service_users) if self.service_users else None
            self.root_dir = self._make_root_dir()
            self.port = self._requested_port or free_port()
            self._prepare()
            step = "starting the server"
            args, user = self._command()
            self._proc = spawn(args, self.log_path, user=user)
            self._finalizer = weakref.finalize(
                self, _cleanup, self._proc.pid, self._proc, self.root_dir, self.stop_signal)
            self._write_owner(os.getpid())
            step = "waiting for it to answer"
            started = time.monotonic()
            proc = self._proc
            ready = wait_until(self._ready, self.start_timeout, still_alive=lambda: proc.poll() is None)
            if not ready:
                code = proc.poll()
                if code is not None:
                    raise RuntimeError(f"server exited with code {code}")
                raise RuntimeError(
                    f"server did not answer on {self.host}:{self.port} within {self.start_timeout:.0f} s "
                    f"(waited {time.monotonic() - started:.1f} s)")
            step = "provisioning users and databases"
            self._provision()
        except Exception as error:
            kept_log = self._keep_log()
            self.stop()
            raise PartStartError(self.part_name, f"{step}: {error}", kept_log) from error

    def _keep_log(self) -> Path | None:
        """Copy the logs out of the directory that stop() deletes, so the error can point to them.

        The server log comes first, then the set-up logs (initdb, mariadb-install-db, admin SQL).
        """
        if self.root_dir is None:
            return None
        logs = sorted(self.root_dir.glob("*.log"), key=lambda path: (path.name != "server.log", path.name))
        if not logs:
            return None
        fd, kept_name = tempfile.mkstemp(prefix=f"lakecdc-{self.part_name}-failed-", suffix=".log")
        with os.fdopen(fd, "wb") as kept:
            for log in logs:
                kept.write(f"===== {log.name} =====\n".encode())
                with open(log, "rb") as source:
                    shutil.copyfileobj(source, kept)
        return Path(kept_name)

    def stop(self) -> None:
        """Stop the server and its children and delete the part's directory (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        elif self.root_dir is not None:
            remove_tree(self.root_dir)
        self._proc = None
        self.root_dir = None

    def restart(self, down_for: float = 0.0) -> None:
        """Stop the server with ``stop_signal`` (PostgreSQL: fast shutdown), stay down for
        ``down_for`` seconds, and start it again on the same directory and port (data kept)."""
        if self._proc is None or self.root_dir is None:
            raise RuntimeError(f"{self.part_name} is not running")
        if self._finalizer is not None:
            self._finalizer.detach()  # its cleanup would delete the directory we restart on
        stop_group(self._proc.pid, self._proc, term_signal=self.stop_signal)
        time.sleep(down_for)
        args, user = self._command()
        self._proc = proc = spawn(args, self.log_path, user=user)
        self._finalizer = weakref.finalize(self, _cleanup, proc.pid, proc, self.root_dir, self.stop_signal)
        self._write_owner(os.getpid())
        if not wait_until(self._ready, self.start_timeout, still_alive=lambda: proc.poll() is None):
            raise PartStartError(self.part_name, f"restarting: server did not answer on {self.host}:{self.port}",
                                 self._keep_log())

    def _write_owner(self, owner_pid: int | None) -> None:
        assert self.root_dir is not None and self._proc is not None
        (self.root_dir / OWNER_FILE).write_text(json.dumps({
            "owner_pid": owner_pid, "server_pid": self._proc.pid, "identity": self._identity(),
            "stop_signal": int(self.stop_signal)}))

    def detach(self) -> dict[str, Any]:
        """Leave the server running after this process exits; returns what ``stop_recorded`` needs."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
            self._write_owner(None)
        return self.state()

    def state(self) -> dict[str, Any]:
        """JSON-friendly description (never a password): pid, port, directories, log."""
        return {
            "part": self.part_name,
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "root_dir": str(self.root_dir) if self.root_dir else None,
            "log": str(self.log_path) if self.root_dir else None,
            "stop_signal": int(self.stop_signal),
            "identity": self._identity() if self.root_dir else None,
            **self._extra_state(),
        }

    @staticmethod
    def stop_recorded(state: dict[str, Any]) -> None:
        """Stop a part started by another process, from its ``state()``.

        The recorded pid is signalled only if it still runs that server (pids get recycled,
        e.g. after a reboot); the directory is removed either way.
        """
        pid = state.get("pid")
        if pid is not None and not _is_our_server(pid, state.get("identity") or state.get("root_dir") or "\0"):
            pid = None
        _cleanup(pid, None, Path(state["root_dir"]) if state.get("root_dir") else None,
                 int(state.get("stop_signal", signal.SIGTERM)))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _lost_port_race(error: PartStartError) -> bool:
    if error.log_path is None or not error.log_path.exists():
        return False
    text = error.log_path.read_text(errors="replace").lower()
    lost = any(marker in text for marker in _PORT_RACE_MARKERS)
    if lost:
        error.log_path.unlink(missing_ok=True)
    return lost
