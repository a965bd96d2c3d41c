"""CPU seconds per test: the test's process and every process under it (Spark's JVM, servers, jobs).

The suite runs CPU-bound on 2 cores, so a test's wall time under load says more about what ran beside
it than about what it costs. ``LAKECDC_TEST_CPU_REPORT=/tmp/cpu ./run.sh test`` writes one line per
test (node id, CPU s, wall s) to ``/tmp/cpu.<worker>.tsv`` (``tests/conftest.py`` registers
``CpuReport``); this module sums them by module:

    python tests/cpu_usage.py /tmp/cpu        # the 40 costliest modules, then the total

A process's CPU counts once: while it runs from ``/proc/<pid>/stat``, after it ends in the ``cutime``
of the process that waited for it (ours, or a live descendant). Servers a session fixture started
count towards the tests that run while they serve. The child pytest of
``tests/integration/test_spark_connectors.py`` writes its tests' lines under ``<prefix>-child``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Generator
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


def _descendants_cpu(root: int) -> float:
    """utime + stime + cutime + cstime of every live process below ``root``."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
            fields = text[text.rindex(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
            parent, used = int(fields[1]), sum(int(value) for value in fields[11:15]) / _TICK
        except (OSError, ValueError, IndexError):  # ended meanwhile
            continue
        pid = int(entry.name)
        children.setdefault(parent, []).append(pid)
        cpu[pid] = used
    total, stack = 0.0, list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, ()))
    return total


def cpu_seconds() -> float:
    """This process, its children it waited for, and its live descendants."""
    own = os.times()
    return own.user + own.system + own.children_user + own.children_system + _descendants_cpu(os.getpid())


class CpuReport:
    """A pytest plugin: one line per test, its setup and teardown included."""

    def __init__(self, prefix: str) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.path = Path(f"{prefix}.{worker}.tsv")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        cpu, wall = cpu_seconds(), time.monotonic()
        try:
            return (yield)
        finally:
            with self.path.open("a") as out:
                out.write(f"{item.nodeid}\t{cpu_seconds() - cpu:.2f}\t{time.monotonic() - wall:.2f}\n")


def by_module(prefix: str) -> tuple[Counter[str], Counter[str], int]:
    cpu: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    tests = 0
    for path in Path(prefix).parent.glob(Path(prefix).name + ".*.tsv"):
        for line in path.read_text().splitlines():
            nodeid, used, took = line.split("\t")
            module = nodeid.split("::")[0]
            cpu[module] += float(used)
            wall[module] += float(took)
            tests += 1
    return cpu, wall, tests


def main(prefix: str, top: int = 40) -> None:
    cpu, wall, tests = by_module(prefix)
    print(f"{'CPU s':>8} {'wall s':>8}  module")
    for module, used in cpu.most_common(top):
        print(f"{used:8.1f} {wall[module]:8.1f}  {module}")
    print(f"{sum(cpu.values()):8.1f} {sum(wall.values()):8.1f}  all {tests} tests in {len(cpu)} modules")


if __name__ == "__main__":
    main(sys.argv[1], *(int(arg) for arg in sys.argv[2:3]))
