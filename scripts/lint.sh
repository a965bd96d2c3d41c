#!/usr/bin/env bash
# The rules that hold the code's layers, with the settings of pyproject.toml ([tool.ruff], [tool.mypy],
# [tool.importlinter]): ruff (pycodestyle, pyflakes, import order), mypy on lakecdc/, and the import
# contracts. Every tool runs, then the step fails if any failed. ./run.sh test runs this before pytest
# (LAKECDC_LINT=0 skips it).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${VENV:-.venv}"
failed=()
"$venv/bin/ruff" check lakecdc tests bench jobs || failed+=(ruff)
"$venv/bin/mypy" || failed+=(mypy)
# lint-imports reads the installed package: this checkout first (as the editable install is).
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/lint-imports" || failed+=(import-linter)
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: ${failed[*]} failed (see above)" >&2
  exit 1
fi
