"""``lakecdc capture --config <sqlserver>.properties --sink jsonl:PATH`` end to end, on the replay
connection named through the documented hook (LAKECDC_SQLSERVER_CONNECTION_FACTORY)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sqlserver_recordings import base_properties
from sqlserver_replay import REPLAY_ENV
from test_sqlserver_seed_golden import seed_server

from lakecdc.capture.sqlserver.connection import FACTORY_ENV

REPO = Path(__file__).resolve().parents[4]
HERE = Path(__file__).resolve().parent  # sqlserver_replay.py, the connection factory


def test_capture_command_runs_a_sqlserver_connector_file(tmp_path: Path) -> None:
    recording = tmp_path / "recording.json"
    seed_server().rec.save(recording)
    props = base_properties(offset__storage__file__filename=str(tmp_path / "offsets.json"))
    config = tmp_path / "sqlserver.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    out = tmp_path / "events.jsonl"
    env = {**os.environ, FACTORY_ENV: "sqlserver_replay:from_env", REPLAY_ENV: str(recording),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "lakecdc.cli.main", "capture", "--config", str(config), "--sink", f"jsonl:{out}",
         "--stop-when-idle", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["topic"] == "server1" and lines[0]["value"]["payload"]["tableChanges"][0]["type"] == "CREATE"
    lines = lines[1:]
    payloads = [r["value"]["payload"] for r in lines if r["value"] is not None]
    assert [p["op"] for p in payloads] == ["r", "r", "c", "u", "d"]
    assert {r["topic"] for r in lines} == {"server1.testDB.dbo.customers"}
    create = payloads[2]
    assert create["source"]["commit_lsn"] == "00000027:00000758:0005" and create["source"]["event_serial_no"] == 1
    assert lines[2]["key"] == {"schema": {"type": "struct",
                                          "fields": [{"type": "int32", "optional": False, "field": "id"}],
                                          "optional": False, "name": "server1.testDB.dbo.customers.Key"},
                               "payload": {"id": 1005}}
    assert "Password!" not in result.stdout + result.stderr
    offsets = json.loads((tmp_path / "offsets.json").read_text())
    assert list(offsets.values()) == [{"commit_lsn": "00000027:00000db0:0007", "event_serial_no": 0}]


def test_status_command_reports_the_stored_lsn_against_cdcs_max_lsn(tmp_path: Path) -> None:
    recording = tmp_path / "recording.json"
    seed_server().rec.save(recording)
    offsets = tmp_path / "offsets.json"
    props = base_properties(offset__storage__file__filename=str(offsets))
    config = tmp_path / "sqlserver.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    offsets.write_text(json.dumps({'["server1",{"server":"server1","database":"testDB"}]':
                                   {"commit_lsn": "00000024:00000010:0001", "snapshot": True}}))
    env = {**os.environ, FACTORY_ENV: "sqlserver_replay:from_env", REPLAY_ENV: str(recording),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "lakecdc.cli.main", "status", "--config", str(config), "--json"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    status = report[0] if isinstance(report, list) else report
    assert status["connector"] == "sqlserver" and status["error"] is None, status
    assert status["position"] == "commit LSN 00000024:00000010:0001 (snapshot)"
    # the recording's sys.fn_cdc_get_max_lsn() answer, newer than the stored position
    assert status["change_tables"] == {"max_lsn": "00000025:00000d98:00a2", "caught_up": False}
    assert "Password!" not in result.stdout + result.stderr
