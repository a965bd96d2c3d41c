"""`lakecdc capture` runs a MySQL/MariaDB connector file: the CLI dispatches on connector.class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mysql_capture_support import (
    REPO,
    data_events,
    fresh_database,
    records,
    sql,
    write_properties,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("connector_class", [
    "io.debezium.connector.mysql.MySqlConnector", "io.debezium.connector.mariadb.MariaDbConnector",
])
def test_lakecdc_capture_command_runs_a_mysql_connector_file(mariadb: Any, tmp_path: Path,
                                                             connector_class: str) -> None:
    database = "clidb_" + connector_class.rsplit(".", 1)[-1].lower()
    fresh_database(mariadb, database)
    sql(mariadb, database, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    properties = write_properties(tmp_path / "mysql.properties", mariadb, database,
                                  connector__class=connector_class)
    out = tmp_path / "events.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(properties),
         "--sink", f"jsonl:{out}", "--stop-when-idle", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = data_events(records(out), "t")
    assert sorted(r["after"]["id"] for r in rows) == [1, 2]
    assert {r["op"] for r in rows} == {"r"}
    assert {r["source"]["connector"] for r in rows} == {"mysql" if "mysql" in connector_class else "mariadb"}
    assert mariadb.password not in result.stdout + result.stderr
