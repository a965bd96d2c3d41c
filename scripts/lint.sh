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
# a cached module whose path or time differ once its content hash matches.
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lakecdc/mypy}"
"$venv/bin/ruff" check lakecdc tests bench jobs || failed+=(ruff)
"$venv/bin/mypy" || failed+=(mypy)
# lint-imports reads the installed package: this checkout first (as the editable install is).
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/lint-imports" || failed+=(import-linter)
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: ${failed[*]} failed (see above)" >&2
  exit 1
fi
