"""tests/data/debezium/connector_fields.json is what Debezium 3.6.3's classes and the MariaDB connector's
define (two JVM starts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lakecdc.spark.jar_cache import cached_jars

pytestmark = pytest.mark.conformance

HERE = Path(__file__).resolve().parent
FIELDS_FILE = HERE.parent / "data" / "debezium" / "connector_fields.json"


def test_committed_field_dump_matches_the_installed_debezium(tmp_path: Path) -> None:
    if cached_jars("debezium-mariadb") is None:
        pytest.skip("Debezium's MariaDB connector jars are not fetched (scripts/bootstrap.sh fetches them from "
                    "Maven Central)")
    result = subprocess.run([sys.executable, str(HERE / "debezium_fields.py")], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == json.loads(FIELDS_FILE.read_text())
