"""scripts/bootstrap.sh: installs only what is missing, and is a no-op once its stamp matches.

The script runs for real on a copy of the repository's pyproject.toml; the virtualenv's python
is a recorder (a real pip install takes minutes and is what the fresh-clone CI run exercises).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "bootstrap.sh", tmp_path / "scripts" / "bootstrap.sh")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    recorder = tmp_path / ".venv" / "bin" / "python"
    recorder.parent.mkdir(parents=True)
    recorder.write_text('#!/bin/sh\necho "python $*" >> "$(dirname "$0")/../calls.log"\ncat >/dev/null\n')
    recorder.chmod(0o755)
    return tmp_path


def _bootstrap(checkout: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls_log = checkout / ".venv" / "calls.log"
    calls_log.unlink(missing_ok=True)
    result = subprocess.run(["bash", str(checkout / "scripts" / "bootstrap.sh")], capture_output=True,
                            text=True, timeout=120, env={**os.environ, "LC_ALL": "C"})
    calls = calls_log.read_text().splitlines() if calls_log.exists() else []
    return result, calls


def test_installs_once_then_returns_immediately_until_pyproject_changes(checkout: Path) -> None:
    first, calls = _bootstrap(checkout)
    assert first.returncode == 0, first.stderr
    assert "python -m pip install -e .[dev]" in calls
    assert any(call.startswith("python -") for call in calls if "pip" not in call), "jars step did not run"
    assert (checkout / ".venv" / ".lakecdc-bootstrap-stamp").exists()

    started = time.monotonic()
    second, calls = _bootstrap(checkout)
    assert second.returncode == 0 and calls == []
    assert time.monotonic() - started < 5

    with open(checkout / "pyproject.toml", "a") as pyproject:
        pyproject.write("\n# a new dependency would go here\n")
    third, calls = _bootstrap(checkout)
    assert third.returncode == 0 and "python -m pip install -e .[dev]" in calls


def test_a_failed_pip_install_fails_with_the_log_path(checkout: Path) -> None:
    recorder = checkout / ".venv" / "bin" / "python"
    recorder.write_text('#!/bin/sh\necho "ERROR: No matching distribution found for nosuchpkg"\nexit 1\n')
    result, _ = _bootstrap(checkout)
    assert result.returncode != 0
    assert "pip install failed" in result.stderr and "lakecdc-bootstrap-pip.log" in result.stderr
    assert "No matching distribution" in result.stderr
    assert not (checkout / ".venv" / ".lakecdc-bootstrap-stamp").exists()


def test_run_sh_knows_exactly_two_commands() -> None:
    for args in ([], ["bogus"], ["--help"]):
        result = subprocess.run(["bash", str(ROOT / "run.sh"), *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, (args, result.stderr)
        assert "./run.sh demo" in result.stderr and "./run.sh test" in result.stderr
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[0] == "#!/usr/bin/env bash"
    assert [line for line in ci[1:] if line.strip() and not line.startswith("#")] == [
        'exec "$(dirname "$0")/../run.sh" test']
