#!/usr/bin/env bash
# The two lakecdc commands. Both first run scripts/bootstrap.sh, which installs whatever is
# missing (Debian packages, .venv, Spark jars) and returns at once when nothing is.
#   ./run.sh demo [ARGS]   the demo pipeline on the local stack (`lakecdc demo`)
#   ./run.sh test [ARGS]   the whole test suite on Spark 3.5 (.venv), then the tests marked spark4 on
#                          Spark 4.0 (.venv-spark4); extra ARGS go to both pytest runs (the second
#                          keeps `-m spark4`); LAKECDC_SPARK4=skip leaves the Spark 4.0 run out;
#                          scripts/lint.sh (ruff, mypy, import contracts) runs beside them; LAKECDC_LINT=0 skips it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

usage() {
  echo "usage: ./run.sh demo [ARGS...]   run the demo pipeline (lakecdc demo)" >&2
  echo "       ./run.sh test [ARGS...]   run the whole test suite (pytest)" >&2
  exit 2
}

# One pytest run on Spark 4.0 (`-m MARKER` last: it replaces a marker expression among the ARGS).
# A narrowed selection (ARGS) may hold no test of the marker; the whole suite must.
spark4_run() {
  local narrowed=$(( $# > 2 )) code=0
  .venv-spark4/bin/python -m pytest --durations=5 "$@" || code=$?
  if [ "$code" -eq 5 ] && [ "$narrowed" -eq 1 ]; then code=0; fi
  if [ "$code" -ne 0 ]; then echo "run.sh: the Spark 4.0 run ($*) failed (pytest exit code $code)" >&2; fi
  return "$code"
}

[ $# -ge 1 ] || usage
command="$1"
shift

case "$command" in
  demo)
    scripts/bootstrap.sh
    exec .venv/bin/lakecdc demo "$@"
    ;;
  test)
    spark4=yes
    [ "${LAKECDC_SPARK4:-}" != skip ] || spark4=no
    # .venv-spark4 is set up beside the main run (below): its tests wait for the first module anyway.
    scripts/bootstrap.sh default
    set +e
    # The Spark 4.0 runs go beside the main run (their own JVMs, servers and temporary directories):
    # much of the main run waits on servers and JVMs, so the two cores take both; their output is
    # printed after the main run's.
    spark4_log="$(mktemp -d)"
    # The rules that hold the layers (ruff, mypy, import contracts), beside the tests too (mypy from
    # a fresh clone takes minutes); LAKECDC_LINT=0 leaves them out. A finding fails the command
    # after the tests have run, so both are reported.
    lint_pid=""
    if [ "${LAKECDC_LINT:-1}" = 1 ]; then
      scripts/lint.sh > "$spark4_log/lint" 2>&1 &
      lint_pid=$!
    fi
    # In a whole-suite run the Spark 4.0 runs start once the Delta/Spark-Kafka child run (the first
    # module) has ended, or the main run has: the three at once loaded 2 cores to 15-18 and the child
    # run overran its limit. The child's test touches this file when it ends (tests/integration/
    # test_spark_connectors.py); 40 minutes at most, in case it never ran.
    first_done=""
    unset LAKECDC_TEST_FIRST_DONE  # (a run.sh started by a test must not signal the outer one)
    if [ $# -eq 0 ]; then
      first_done="$spark4_log/first-done"
      export LAKECDC_TEST_FIRST_DONE="$first_done"
    fi
    if [ "$spark4" = yes ]; then
      exec 3>&2
      (
        if ! scripts/bootstrap.sh spark4; then
          echo "run.sh: setting up .venv-spark4 failed (output below the main run's); the Spark 4.0 runs are left out" >&3
          exit 1
        fi
        code=0
        waited=0
        while [ -n "$first_done" ] && [ ! -e "$first_done" ] && [ "$waited" -lt 2400 ]; do
          sleep 2
          waited=$((waited + 2))
        done
        PYTEST_ADDOPTS="--basetemp=$spark4_log/spark4" spark4_run "$@" -m spark4 || code=$?
        # Delta through Spark needs Delta's jars in the JVM, which changes what the job picks on its own:
        # those tests run in a JVM of their own (the connector_spark fixture of tests/conftest.py).
        PYTEST_ADDOPTS="--basetemp=$spark4_log/connectors" LAKECDC_SPARK_CONNECTORS=auto \
          LAKECDC_TEST_CONNECTORS_CHILD=1 spark4_run "$@" -m spark4_connectors || code=$?
        exit "$code"
      ) > "$spark4_log/output" 2>&1 &
      spark4_pid=$!
    fi
    # The whole suite runs in two pytest-xdist workers, each taking whole modules (their fixtures
    # stay together): much of a run waits on servers, JVMs and subprocesses, so two use the cores
    # better than one. A narrowed run (ARGS) stays in one process. The slowest tests are listed:
    # the suite must stay far within CI's 90 minutes on 2 cores (aim: 20). Modules go out in
    # collection order (chaos, conformance, e2e, integration, then the many small unit modules),
    # not xdist's default of most tests first, which left the one-test chaos modules for the end.
    # A worker that dies (a native crash) is not replaced: pytest-xdist 3.8's loadfile scheduler can
    # hang after replacing one (pytest-xdist issues 784 and 1378), and a crash fails the run anyway.
    workers=()
    if [ $# -eq 0 ]; then
      workers=(-n "${LAKECDC_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --max-worker-restart 0)
    fi
    .venv/bin/python -m pytest --durations=15 "${workers[@]}" "$@"
    status=$?
    [ -z "$first_done" ] || touch "$first_done"
    if [ "$status" -eq 5 ]; then
      echo "run.sh: pytest collected no tests; that is a failure here" >&2
    fi
    status4=0
    if [ "$spark4" = yes ]; then
      wait "$spark4_pid" || status4=$?
      echo "run.sh: the tests marked spark4 and spark4_connectors, on Spark 4.0 (.venv-spark4), run beside the above:" >&2
      cat "$spark4_log/output"
    fi
    lint_status=0
    if [ -n "$lint_pid" ]; then
      wait "$lint_pid" || lint_status=$?
      echo "run.sh: the lint step (scripts/lint.sh), run beside the above:" >&2
      cat "$spark4_log/lint"
    fi
    rm -rf "$spark4_log"
    set -e
    [ "$status" -ne 0 ] || status=$status4
    if [ "$lint_status" -ne 0 ]; then
      echo "run.sh: the lint step failed (scripts/lint.sh, its output above)" >&2
      [ "$status" -ne 0 ] || status=$lint_status
    fi
    exit "$status"
    ;;
  -h|--help|help) usage ;;
  *) echo "run.sh: unknown command '$command'" >&2; usage ;;
esac
