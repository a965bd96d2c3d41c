"""Server processes started in their own process group, and stopped with nothing left behind.

Every devstack server runs as the leader of a new session (``start_new_session=True``). Stopping
it signals the leader's group, then kills whatever member or descendant is still there after a
grace period (PostgreSQL's children call setsid(), so descendants are tracked, not just the group).
When the caller runs as root, servers that refuse root (PostgreSQL, MariaDB) run as a system user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

_ZOMBIE_OR_DEAD = {"Z", "X"}


def running_as_root() -> bool:
    return os.geteuid() == 0


def service_user(preferred: Sequence[str]) -> str | None:
    """The system user a server must run as, or None when the caller is not root.

    Raises LookupError naming the users looked for when running as root and none exists.
    """
    if not running_as_root():
        return None
    for name in preferred:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise LookupError(
        f"running as root and none of the system users {list(preferred)} exists; "
        "run scripts/bootstrap.sh (it installs the Debian packages that create them)"
    )


def executable_by(user: str | None, path: Path) -> bool:
    """True when ``user`` (None: the caller) can execute ``path`` (a file) or enter it (a directory),
    which needs every parent directory to be searchable by that user too."""
    if user is None:
        return os.access(path, os.X_OK)
    return subprocess.run(["test", "-x", str(path)], user=user, timeout=10).returncode == 0


def give_to_user(path: Path, user: str | None) -> None:
    """Make ``path`` (recursively) owned by ``user`` so a de-privileged server can write it."""
    if user is None:
        return
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def run_checked(args: Sequence[str], log_path: Path, user: str | None = None, timeout: float = 60.0,
                stdin_text: str | None = None) -> None:
    """Run a set-up command (initdb, mariadb-install-db), appending its output to ``log_path``.

    Raises RuntimeError with the command name and exit code; the output is in the log, never in
    the message (a command may echo connection settings).
    """
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(args)}\n".encode())
        log.flush()
        completed = subprocess.run(
            list(args), stdout=log, stderr=subprocess.STDOUT, user=user, timeout=timeout,
            input=stdin_text.encode() if stdin_text is not None else None,
            stdin=None if stdin_text is not None else subprocess.DEVNULL,
        )
    if completed.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} exited with code {completed.returncode}")


def spawn(args: Sequence[str], log_path: Path, user: str | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a server as a process-group leader with stdout and stderr going to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, user=user, env=env, cwd=cwd,
        )


def _proc_table() -> dict[int, tuple[str, int, int]]:
    """pid -> (state, parent pid, process group) for every process, read from /proc."""
    table: dict[int, tuple[str, int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                stat = stat_file.read().decode(errors="replace")
        except OSError:
            continue
        # The command name (field 2) may contain spaces or parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        table[int(entry.name)] = (fields[0], int(fields[1]), int(fields[2]))
    return table


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes that belong to the server led by ``pgid``: its process group
    and every descendant (PostgreSQL backends call setsid(), leaving the group but not the tree)."""
    table = _proc_table()
    alive = {pid: info for pid, info in table.items() if info[0] not in _ZOMBIE_OR_DEAD}
    members = {pid for pid, (_, _, group) in alive.items() if group == pgid}
    if pgid in table:
        frontier = [pgid]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, (_, ppid, _) in table.items() if ppid == parent]
            frontier.extend(children)
            members.update(child for child in children if child in alive)
    return sorted(members)


def stop_group(pgid: int, proc: subprocess.Popen[bytes] | None = None, grace: float = 10.0,
               term_signal: int = signal.SIGTERM) -> None:
    """Stop the server led by ``pgid`` and all its processes: ``term_signal`` to the leader's
    group first (the server shuts its children down cleanly), SIGKILL to every member that is
    still there after ``grace`` seconds.

    ``proc`` is the leader's Popen when this process started it, so it is reaped (no zombie).
    """
    members = group_members(pgid)
    if not members:
        _reap(proc)
        return
    try:
        os.killpg(pgid, term_signal)
    except ProcessLookupError:
        pass
    known = set(members)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(proc, timeout=0.05)
        known.update(group_members(pgid))
        if not _any_alive(known):
            break
        time.sleep(0.05)
    else:
        for pid in known | set(group_members(pgid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5.0
        while _any_alive(known) and time.monotonic() < deadline:
            _reap(proc, timeout=0.05)
            time.sleep(0.05)
    _reap(proc, timeout=1.0)


def _any_alive(pids: set[int]) -> bool:
    table = _proc_table()
    return any(pid in table and table[pid][0] not in _ZOMBIE_OR_DEAD for pid in pids)


def _reap(proc: subprocess.Popen[bytes] | None, timeout: float = 0.0) -> None:
    if proc is None:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass


def remove_tree(path: Path) -> None:
    """Delete a part's directory; a directory that is already gone is fine."""
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        raise RuntimeError(f"could not remove {path}")
