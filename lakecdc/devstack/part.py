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
from lakecdc.devstack.process import group_members, remove_tree, spawn, stop_group

_PORT_RACE_MARKERS = ("address already in use", "address in use", "could not bind")


def _cleanup(pgid: int | None, proc: subprocess.Popen[bytes] | None, root_dir: Path | None,
             term_signal: int) -> None:
    if pgid is not None:
        stop_group(pgid, proc, term_signal=term_signal)
    if root_dir is not None:
        remove_tree(root_dir)


class ServicePart(ABC):
    """A local server with its own loopback port, directory and process group."""

    #: Names the part in logs and errors; subclasses may refine it per instance.
    part_name: str = "part"
    #: Signal that asks the server for a clean, quick shutdown.
    stop_signal: ClassVar[int] = signal.SIGTERM
    start_attempts: ClassVar[int] = 3

    def __init__(self, port: int | None = None, base_dir: Path | str | None = None,
                 start_timeout: float = 30.0) -> None:
        self.host = LOOPBACK
        self._requested_port = port
        self.port: int = port or 0
        self._base_dir = Path(base_dir) if base_dir is not None else None
        self.start_timeout = start_timeout
        self.root_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

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

    def _start_once(self) -> None:
        self.root_dir = Path(tempfile.mkdtemp(prefix=f"lakecdc-{self.part_name}-", dir=self._base_dir))
        self.port = self._requested_port or free_port()
        step = "preparing its data directory"
        try:
            self._prepare()
            step = "starting the server"
            args, user = self._command()
            self._proc = spawn(args, self.log_path, user=user)
            self._finalizer = weakref.finalize(
                self, _cleanup, self._proc.pid, self._proc, self.root_dir, self.stop_signal)
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
        """Copy the log out of the directory that stop() deletes, so the error can point to it."""
        if self.root_dir is None or not self.log_path.exists():
            return None
        kept = Path(tempfile.mkstemp(prefix=f"lakecdc-{self.part_name}-failed-", suffix=".log")[1])
        shutil.copyfile(self.log_path, kept)
        return kept

    def stop(self) -> None:
        """Stop the server and its children and delete the part's directory (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        elif self.root_dir is not None:
            remove_tree(self.root_dir)
        self._proc = None
        self.root_dir = None

    def detach(self) -> dict[str, Any]:
        """Leave the server running after this process exits; returns what ``stop_recorded`` needs."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
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
            **self._extra_state(),
        }

    @staticmethod
    def stop_recorded(state: dict[str, Any]) -> None:
        """Stop a part started by another process, from its ``state()``."""
        _cleanup(state.get("pid"), None, Path(state["root_dir"]) if state.get("root_dir") else None,
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
