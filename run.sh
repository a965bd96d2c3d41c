#!/usr/bin/env bash
# The two lakecdc commands. Both first run scripts/bootstrap.sh, which installs whatever is
# missing (Debian packages, .venv, Spark jars) and returns at once when nothing is.
#   ./run.sh demo [ARGS]   the demo pipeline on the local stack (`lakecdc demo`)
#   ./run.sh test [ARGS]   the whole test suite (extra ARGS go to pytest)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

usage() {
  echo "usage: ./run.sh demo [ARGS...]   run the demo pipeline (lakecdc demo)" >&2
  echo "       ./run.sh test [ARGS...]   run the whole test suite (pytest)" >&2
  exit 2
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
    scripts/bootstrap.sh
    set +e
    # The slowest tests are listed so the suite stays within its 25-minute budget on 2 cores.
    .venv/bin/python -m pytest --durations=15 "$@"
    status=$?
    set -e
    if [ "$status" -eq 5 ]; then
      echo "run.sh: pytest collected no tests; that is a failure here" >&2
    fi
    exit "$status"
    ;;
  -h|--help|help) usage ;;
  *) echo "run.sh: unknown command '$command'" >&2; usage ;;
esac
