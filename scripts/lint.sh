#!/usr/bin/env bash
# The rules that hold the code's layers, with the settings of pyproject.toml ([tool.ruff], [tool.mypy],
# [tool.importlinter]): ruff (pycodestyle, pyflakes, import order), mypy on lakecdc/, and the import
# contracts. Every tool runs, then the step fails if any failed. ./run.sh test runs this beside pytest
# (LAKECDC_LINT=0 skips it).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${VENV:-.venv}"
failed=()
# mypy's cache outlives the checkout, so a fresh clone checks in seconds what took minutes: mypy takes
# a cached module whose path or time differ once its content hash matches. Where that directory
# cannot be written (mypy stops with an internal error), the checkout's own .mypy_cache serves.
mypy_cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lakecdc/mypy"
if [ -z "${MYPY_CACHE_DIR:-}" ] && mkdir -p "$mypy_cache" 2>/dev/null && [ -w "$mypy_cache" ]; then
  export MYPY_CACHE_DIR="$mypy_cache"
fi
"$venv/bin/ruff" check lakecdc tests bench jobs || failed+=(ruff)
"$venv/bin/mypy" || failed+=(mypy)
# lint-imports reads the installed package: this checkout first (as the editable install is).
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/lint-imports" || failed+=(import-linter)
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: ${failed[*]} failed (see above)" >&2
  exit 1
fi
