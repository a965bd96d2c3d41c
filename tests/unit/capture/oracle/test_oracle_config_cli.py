"""Oracle configuration (names, validation, did-you-mean), the shipped conf file, and
``lakecdc capture`` end to end on the replay connection (a subprocess, factory injected through
LAKECDC_ORACLE_CONNECTION_FACTORY)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("oracledb",
                    reason="the replay connection has python-oracledb's shape: pip install 'lakecdc[oracle]'")

from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.config.base import load_properties
from lakecdc.errors import ConfigError

ROOT = Path(__file__).resolve().parents[4]
BASE = {"topic.prefix": "server1", "database.hostname": "db", "database.dbname": "ORCLCDB"}


def test_shipped_conf_file_loads() -> None:
    props = load_properties(ROOT / "conf" / "oracle-connector.properties")
    os.environ.setdefault("ORACLE_PASSWORD", "x")
    cfg = OracleConnectorConfig.from_properties(props)
    assert (cfg.source_db, cfg.log_mining_strategy, cfg.lob_enabled) == ("ORCLPDB1", "online_catalog", False)
    assert cfg.dsn() == "127.0.0.1:1521/ORCLCDB"


@pytest.mark.parametrize(("props", "message"), [
    ({"log.mining.batch.size.defualt": "5"}, "did you mean 'log.mining.batch.size.default'"),
    ({"log.mining.strategy": "redo_log_catalog"}, "not implemented by lakecdc; use online_catalog"),
    ({"snapshot.mode": "never"}, "allowed values are"),
    ({"log.mining.batch.size.default": "10", "log.mining.batch.size.min": "100"}, "must hold"),
    ({"decimal.handling.mode": "exact"}, "decimal.handling.mode"),
    ({"database.dbname": ""}, "database.dbname"),
])
def test_invalid_properties_are_named(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        OracleConnectorConfig.from_properties({**BASE, **props})


def test_cli_capture_on_replay_connection(tmp_path: Path) -> None:
    conf = tmp_path / "oracle.properties"
    conf.write_text("\n".join([
        "connector.class=io.debezium.connector.oracle.OracleConnector", "topic.prefix=server1",
        "database.hostname=db", "database.dbname=ORCLCDB", "database.pdb.name=ORCLPDB1",
        "database.user=c##dbzuser", "database.password=not-logged-pw", "schema.include.list=DEBEZIUM",
        f"offset.storage.file.filename={tmp_path / 'offsets.json'}", "log.mining.sleep.time.default.ms=0",
    ]) + "\n")
    out = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{Path(__file__).parent}",
           "LAKECDC_ORACLE_CONNECTION_FACTORY": "oracle_cli_factory:factory"}
    proc = subprocess.run([sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(conf),
                           "--sink", f"jsonl:{out}", "--stop-when-idle", "0"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not-logged-pw" not in proc.stderr + proc.stdout
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    values = [line["value"]["payload"] if isinstance(line.get("value"), dict) and "payload" in line["value"]
              else line.get("value") for line in lines]
    ops = [v["op"] for v in values if isinstance(v, dict) and "op" in v]
    assert ops == ["r", "r", "c"]
    created = [v for v in values if isinstance(v, dict) and v.get("op") == "c"][0]
    assert created["after"] == {"ID": 2001, "FIRST_NAME": "Anne", "LAST_NAME": "O'Neil", "EMAIL": "anne@x"}
    assert created["source"]["commit_scn"] == "1020"
    stored = json.loads((tmp_path / "offsets.json").read_text())
    assert next(iter(stored.values()))["commit_scn"].startswith("1020:")


def test_status_reports_the_stored_scn_and_the_lag(tmp_path: Path) -> None:
    from oracle_recorded import RecordedOracle, customers

    from lakecdc.capture.oracle import connection as oraconn
    from lakecdc.capture.status import capture_status

    conf = tmp_path / "oracle.properties"
    offsets = tmp_path / "offsets.json"
    conf.write_text("\n".join([
        "connector.class=io.debezium.connector.oracle.OracleConnector", "topic.prefix=server1",
        "database.hostname=db", "database.dbname=ORCLCDB", "database.user=u", "database.password=pw",
        f"offset.storage.file.filename={offsets}"]) + "\n")
    offsets.write_text(json.dumps({'["server1",{"server":"server1"}]': {"scn": "1009", "commit_scn": "1025::0:1"}}))
    oraconn.set_connection_factory(RecordedOracle([customers()], scns=[1500]).connect)
    try:
        status = capture_status(conf)
    finally:
        oraconn.set_connection_factory(None)
    assert status.error is None, status.error
    assert status.connector == "oracle" and status.position == "SCN 1009 (commits 1025::0:1)"
    assert status.redo == {"current_scn": 1500, "scn_lag": 491}
