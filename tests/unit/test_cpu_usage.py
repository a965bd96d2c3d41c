"""tests/cpu_usage.py: a test's CPU counts what its processes used, while they run and after they end."""

from __future__ import annotations

import subprocess
import sys
import time

from cpu_usage import by_module, cpu_seconds

BURN = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"


def test_cpu_of_a_child_and_a_grandchild_counts_while_running_and_after_they_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    before = cpu_seconds()
    # the grandchild burns, then waits, so it is sampled live; its parent waits for it
    child = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, sys\n"
                              f"subprocess.run([sys.executable, '-c', {BURN + 'time.sleep(3)'!r}])"])
    time.sleep(2.0)
    live = cpu_seconds() - before
    assert child.wait(30) == 0
    ended = cpu_seconds() - before
    assert 0.5 <= live and live - 0.05 <= ended < 5  # nothing lost when the processes end
    report = tmp_path / "cpu"
    (tmp_path / "cpu.gw0.tsv").write_text("tests/a.py::t1\t1.5\t2.0\ntests/a.py::t2\t0.5\t1.0\n")
    (tmp_path / "cpu.gw1.tsv").write_text("tests/b.py::t\t3.0\t3.0\n")
    cpu, wall, tests = by_module(str(report))
    assert cpu == {"tests/a.py": 2.0, "tests/b.py": 3.0} and wall["tests/a.py"] == 3.0 and tests == 3
