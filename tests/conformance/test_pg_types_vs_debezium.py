"""Re-record the PostgreSQL type goldens from real Debezium 3.6.3 and check they are still current.

``tests/unit/capture/postgres/test_types_golden.py`` proves our mapping equals the committed golden
files (no JVM). This test closes the loop: it runs Debezium again on the same tables, rows and mode
sets (snapshot + streaming, PostgreSQL 15) and requires the fresh output to equal the committed
files, except values that are the time a row was written. A failure here means the goldens are
stale (regenerate: ``.venv/bin/python tests/conformance/pg_types_golden.py``) or Debezium changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pg_types_golden import DATA_DIR, MODE_SETS, VOLATILE_COLUMNS, generate, missing_server_features

pytestmark = [pytest.mark.conformance, pytest.mark.slow]


def _records(path: Path) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for table, column in VOLATILE_COLUMNS:
            if record["table"] == table and column in record["after"]:
                record["after"][column] = "<volatile>"
        out[(record["table"], record["phase"], record["op"], record["id"])] = record
    return out


@pytest.mark.parametrize("modes", list(MODE_SETS))
def test_debezium_output_equals_committed_golden(modes: str, pg15: Any, tmp_path: Path) -> None:
    missing = missing_server_features(pg15)
    if missing:
        pytest.skip(f"the type fixture needs {', '.join(missing)}")
    fresh = _records(generate(modes, pg15, tmp_path))
    committed = _records(DATA_DIR / f"golden_{modes}.jsonl")
    assert fresh.keys() == committed.keys(), "Debezium emitted a different set of records"
    problems = []
    for key, record in committed.items():
        if fresh[key]["fields"] != record["fields"]:
            problems.append(f"{key} schema differs")
        for column, value in record["after"].items():
            if fresh[key]["after"].get(column) != value:
                problems.append(f"{key} {column}: committed {str(value)[:80]} != fresh "
                                f"{str(fresh[key]['after'].get(column))[:80]}")
    assert not problems, "\n".join(problems[:50])
