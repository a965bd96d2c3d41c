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
    for venv in (".venv", ".venv-spark4"):
        recorder = tmp_path / venv / "bin" / "python"
        recorder.parent.mkdir(parents=True)
        recorder.write_text('#!/bin/sh\necho "python $*" >> "$(dirname "$0")/../calls.log"\ncat >/dev/null\n')
        recorder.chmod(0o755)
    return tmp_path


def _bootstrap(checkout: Path, *envs: str, venv: str = ".venv",
               path: str = "") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls_log = checkout / venv / "calls.log"
    calls_log.unlink(missing_ok=True)
    env = {**os.environ, "LC_ALL": "C", "PATH": f"{path}:{os.environ['PATH']}" if path else os.environ["PATH"]}
    result = subprocess.run(["bash", str(checkout / "scripts" / "bootstrap.sh"), *envs], capture_output=True,
                            text=True, timeout=120, env=env)
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


def test_the_spark4_environment_is_its_own_venv_with_its_own_stamp(checkout: Path) -> None:
    first, calls = _bootstrap(checkout, "spark4", venv=".venv-spark4")
    assert first.returncode == 0, first.stderr
    assert "python -m pip install -e .[all,spark4,test]" in calls
    assert (checkout / ".venv-spark4" / ".lakecdc-bootstrap-stamp").exists()
    assert not (checkout / ".venv" / ".lakecdc-bootstrap-stamp").exists(), "the default env was not asked for"

    both, calls = _bootstrap(checkout, "default", "spark4")
    assert both.returncode == 0 and "python -m pip install -e .[dev]" in calls
    again, calls = _bootstrap(checkout, "default", "spark4", venv=".venv-spark4")
    assert again.returncode == 0 and calls == []

    unknown, _ = _bootstrap(checkout, "spark9")
    assert unknown.returncode != 0 and "unknown environment 'spark9'" in unknown.stderr


def test_pyproject_keeps_the_default_on_spark_35_and_allows_both_lines() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "pyspark>=3.5,<4.1" in extras["spark"]
    assert "pyspark==3.5.*" in extras["spark35"] and "pyspark==4.0.*" in extras["spark4"]
    assert "lakecdc[all,spark35,conformance,test]" in extras["dev"]


def test_a_failed_pip_install_fails_with_the_log_path(checkout: Path) -> None:
    recorder = checkout / ".venv" / "bin" / "python"
    recorder.write_text('#!/bin/sh\necho "ERROR: No matching distribution found for nosuchpkg"\nexit 1\n')
    result, _ = _bootstrap(checkout)
    assert result.returncode != 0
    assert "pip install failed" in result.stderr and "lakecdc-bootstrap-pip.log" in result.stderr
    assert "No matching distribution" in result.stderr
    assert not (checkout / ".venv" / ".lakecdc-bootstrap-stamp").exists()


def _df_reporting(tmp_path: Path, free_mb: int) -> str:
    """A directory whose ``df`` reports ``free_mb`` MB available on every disk."""
    shim = tmp_path / f"df-{free_mb}"
    shim.mkdir()
    (shim / "df").write_text("#!/bin/sh\necho 'Filesystem 1M-blocks Used Available Capacity Mounted on'\n"
                             f"echo '/dev/x 100000 99000 {free_mb} 99% /'\n")
    (shim / "df").chmod(0o755)
    return str(shim)


def test_a_disk_without_room_for_the_environment_fails_before_pip_and_says_how_much(checkout: Path,
                                                                                     tmp_path: Path) -> None:
    result, calls = _bootstrap(checkout, path=_df_reporting(tmp_path, 900))
    assert result.returncode != 0
    assert ".venv needs about 6 GB free" in result.stderr and "(900 MB)" in result.stderr, result.stderr
    assert not any("pip" in call for call in calls)

    result, calls = _bootstrap(checkout, path=_df_reporting(tmp_path, 60000))
    assert result.returncode == 0 and "python -m pip install -e .[dev]" in calls


def test_a_pip_install_that_fills_the_disk_says_so(checkout: Path) -> None:
    recorder = checkout / ".venv" / "bin" / "python"
    recorder.write_text("#!/bin/sh\necho 'ERROR: Could not install packages due to an OSError: [Errno 28] "
                        "No space left on device'\nexit 1\n")
    result, _ = _bootstrap(checkout)
    assert result.returncode != 0
    assert "pip install failed: the disk is full" in result.stderr and "lakecdc-bootstrap-pip.log" in result.stderr


def test_run_sh_knows_exactly_two_commands() -> None:
    for args in ([], ["bogus"], ["--help"]):
        result = subprocess.run(["bash", str(ROOT / "run.sh"), *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, (args, result.stderr)
        assert "./run.sh demo" in result.stderr and "./run.sh test" in result.stderr
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[0] == "#!/usr/bin/env bash"
    assert [line for line in ci[1:] if line.strip() and not line.startswith("#")] == [
        'exec "$(dirname "$0")/../run.sh" test']


def test_each_spark_line_fetches_its_own_scala_builds() -> None:
    from lakecdc.devstack.maven import jar_sets, spark_line
    from lakecdc.errors import SparkSetupError

    old = jar_sets("3.5.9")
    assert old["delta"].coordinates == ("io.delta:delta-spark_2.12:3.3.2",)
    assert old["spark-kafka"].coordinates == ("org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.9",)
    assert "iceberg" not in old and "kafka" in old  # 3.5's Iceberg runtime comes from a PyPI wheel
    new = jar_sets("4.0.5")
    assert new["delta"].coordinates == ("io.delta:delta-spark_2.13:4.0.1",)
    assert new["spark-kafka"].coordinates == ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.5",)
    assert new["iceberg"].coordinates == ("org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.2",)
    # the broker runs in its own JVM: the same set on both lines (Spark 4 runs the Kafka-source tests too)
    assert new["kafka"] == old["kafka"] and not new["kafka"].beside_pyspark
    assert spark_line("4.0.5") == "4.0" and spark_line("3.5.9") == "3.5"
    with pytest.raises(SparkSetupError, match=r"PySpark 4\.1\.0 is not a supported line.*lakecdc\[spark4\]"):
        spark_line("4.1.0")


def _fake_checkout(tmp_path: Path, main_code: int, spark4_code: int, lint_code: int = 0) -> Path:
    """run.sh beside a no-op bootstrap, a lint step and two pythons that log their arguments and exit
    with a code."""
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "run.sh", tmp_path / "run.sh")
    (tmp_path / "scripts" / "bootstrap.sh").write_text(
        '#!/bin/sh\necho "bootstrap $*" >> "$(dirname "$0")/../calls.log"\n')
    (tmp_path / "scripts" / "lint.sh").write_text(
        f'#!/bin/sh\necho "lint" >> "$(dirname "$0")/../calls.log"\nexit {lint_code}\n')
    for script in ("bootstrap.sh", "lint.sh"):
        (tmp_path / "scripts" / script).chmod(0o755)
    for venv, code in ((".venv", main_code), (".venv-spark4", spark4_code)):
        python = tmp_path / venv / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text(f'#!/bin/sh\necho "{venv} connectors=$LAKECDC_SPARK_CONNECTORS $*" '
                          f'>> "$(dirname "$0")/../../calls.log"\nexit {code}\n')
        python.chmod(0o755)
    return tmp_path


def _run_tests(checkout: Path, *args: str, **extra_env: str) -> tuple[int, list[str]]:
    # the caller's own choices of run.sh's options must not leak into the fake run
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAKECDC_SPARK4", "LAKECDC_SPARK_CONNECTORS", "LAKECDC_TEST_WORKERS", "LAKECDC_LINT")}
    env.update(extra_env)
    result = subprocess.run(["bash", str(checkout / "run.sh"), "test", *args], capture_output=True, text=True,
                            timeout=60, env=env)
    calls = (checkout / "calls.log").read_text().splitlines()
    # .venv-spark4 is set up beside the main run, before the Spark 4.0 runs (whose order the rest checks)
    spark4 = [i for i, call in enumerate(calls) if call.startswith(".venv-spark4")]
    if extra_env.get("LAKECDC_SPARK4") != "skip":
        assert calls.count("bootstrap spark4") == 1 and calls.index("bootstrap spark4") < min(spark4, default=1 << 30)
    return result.returncode, [call for call in calls if call != "bootstrap spark4"]


def test_run_sh_test_runs_the_spark4_subset_beside_the_suite_and_fails_when_it_fails(tmp_path: Path) -> None:
    code, calls = _run_tests(_fake_checkout(tmp_path / "green", 0, 0))
    assert code == 0
    # the main run and the Spark 4.0 runs go side by side: their order in the log is not fixed
    # the lint step first; the whole suite in two xdist workers
    assert calls[0] == "bootstrap default" and sorted(calls[1:]) == [
        ".venv connectors= -m pytest --durations=15 -n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart 0",
        ".venv-spark4 connectors= -m pytest --durations=5 -m spark4",
        ".venv-spark4 connectors=auto -m pytest --durations=5 -m spark4_connectors", "lint"]
    # a lint finding fails the command, after the tests ran
    code, calls = _run_tests(_fake_checkout(tmp_path / "lint", 0, 0, lint_code=1))
    assert code == 1 and any(c.startswith(".venv connectors=") for c in calls)
    spark4 = [c for c in calls if c.startswith(".venv-spark4")]
    assert spark4[0].endswith("-m spark4")  # the Delta/Kafka JVM subset after the plain one
    assert _run_tests(_fake_checkout(tmp_path / "red4", 0, 1))[0] == 1
    assert _run_tests(_fake_checkout(tmp_path / "red", 1, 0))[0] == 1
    # The whole subset selecting nothing is a failure; a narrowed selection (ARGS) may select nothing.
    assert _run_tests(_fake_checkout(tmp_path / "empty", 0, 5))[0] == 5
    code, calls = _run_tests(_fake_checkout(tmp_path / "narrow", 0, 5), "tests/unit/config")
    assert code == 0 and ".venv-spark4 connectors= -m pytest --durations=5 tests/unit/config -m spark4" in calls


def test_run_sh_test_starts_the_spark4_runs_when_the_first_module_has_ended(tmp_path: Path) -> None:
    # The main run's first module (the Delta/Spark-Kafka child run) touches LAKECDC_TEST_FIRST_DONE when
    # it ends: the Spark 4.0 runs start then, while the main run goes on.
    checkout = _fake_checkout(tmp_path / "whole", 0, 0)
    (checkout / ".venv" / "bin" / "python").write_text(
        '#!/bin/sh\nlog="$(dirname "$0")/../../calls.log"\necho "main starts" >> "$log"\nsleep 1\n'
        'touch "$LAKECDC_TEST_FIRST_DONE"\nsleep 12\necho "main ends" >> "$log"\n')
    code, calls = _run_tests(checkout)
    assert code == 0
    main = calls.index("main starts"), calls.index("main ends")
    spark4 = [i for i, call in enumerate(calls) if call.startswith(".venv-spark4")]
    assert len(spark4) == 2 and all(main[0] < i < main[1] for i in spark4)
    # the main run ending starts them too (it may never have run the first module)
    checkout = _fake_checkout(tmp_path / "never", 0, 0)
    code, calls = _run_tests(checkout)
    runs = [call for call in calls if call != "lint"]  # the lint step goes beside the runs
    assert code == 0 and runs[1].startswith(".venv connectors=") and runs[2].startswith(".venv-spark4")
    # a narrowed run (ARGS) does not wait for a module it may not hold
    checkout = _fake_checkout(tmp_path / "narrow", 0, 0)
    (checkout / ".venv" / "bin" / "python").write_text(
        '#!/bin/sh\nlog="$(dirname "$0")/../../calls.log"\n'
        'echo "main starts ${LAKECDC_TEST_FIRST_DONE:-unset}" >> "$log"\nsleep 12\necho "main ends" >> "$log"\n')
    # nor sees the signal file of a run.sh it runs under (this suite's own, in a whole-suite run)
    outer = tmp_path / "outer-first-done"
    code, calls = _run_tests(checkout, "tests/unit", LAKECDC_TEST_FIRST_DONE=str(outer))
    assert code == 0 and "main starts unset" in calls and not outer.exists()
    assert calls.index("main ends") > max(i for i, call in enumerate(calls) if call.startswith(".venv-spark4"))


def test_run_sh_test_fails_when_the_spark4_environment_cannot_be_set_up(tmp_path: Path) -> None:
    checkout = _fake_checkout(tmp_path, 0, 0)
    (checkout / "scripts" / "bootstrap.sh").write_text(
        '#!/bin/sh\necho "bootstrap $*" >> "$(dirname "$0")/../calls.log"\n[ "$1" != spark4 ]\n')
    result = subprocess.run(["bash", str(checkout / "run.sh"), "test"], capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if not k.startswith("LAKECDC_")})
    calls = (checkout / "calls.log").read_text().splitlines()
    # the main run still runs and reports; the command fails, saying which set-up failed
    assert result.returncode == 1 and any(call.startswith(".venv connectors=") for call in calls)
    assert not any(call.startswith(".venv-spark4") for call in calls)
    assert "setting up .venv-spark4 failed" in result.stderr
