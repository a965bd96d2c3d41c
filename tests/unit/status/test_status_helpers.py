"""Pure parts of ``lakecdc status``: LSN text, binlog distance, config detection, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakecdc.capture.mysql.registration import binlog_bytes_behind
from lakecdc.capture.postgres.replication import format_lsn, parse_lsn
from lakecdc.capture.status import is_capture_config
from lakecdc.cli.main import app
from lakecdc.ingest.status import is_ingest_config


@pytest.mark.parametrize("lsn, text", [(0, "0/0"), (24023128, "0/16E9058"), ((5 << 32) | 0xABC, "5/ABC")])
def test_lsn_text_matches_postgres_form_both_ways(lsn: int, text: str) -> None:
    assert format_lsn(lsn) == text
    assert parse_lsn(text) == lsn


def test_binlog_bytes_behind_spans_later_files_and_knows_purged_ones() -> None:
    files = [("b.000001", 1000), ("b.000002", 300), ("b.000003", 50)]
    assert binlog_bytes_behind(files, "b.000001", 400) == 600 + 300 + 50
    assert binlog_bytes_behind(files, "b.000003", 50) == 0
    assert binlog_bytes_behind(files, "b.000000", 4) is None


def test_config_kinds_are_told_apart() -> None:
    assert is_capture_config({"connector.class": "io.debezium.connector.postgresql.PostgresConnector"})
    assert not is_capture_config({"kafka.bootstrap.servers": "x", "topic.prefix": "p"})
    assert is_ingest_config({"kafka.bootstrap.servers": "x", "topic.prefix": "p", "warehouse": "/w"})
    assert not is_ingest_config({"database.hostname": "h", "topic.prefix": "p"})


def test_cli_names_a_file_that_is_neither_config(tmp_path: Path) -> None:
    odd = tmp_path / "odd.yaml"
    odd.write_text("hello: world\n")
    result = CliRunner().invoke(app, ["status", "--config", str(odd)])
    assert result.exit_code == 2
    output = "".join(result.output.split())  # wrapped where the (temporary) path's length puts it, mid-word too
    assert "odd.yaml" in output and "neitheracaptureconfiguration" in output


def test_unreachable_source_is_reported_without_the_password(tmp_path: Path) -> None:
    import socket

    from lakecdc.capture.status import capture_status

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "capture.properties"
    config.write_text("connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
                      f"topic.prefix=shop\ndatabase.hostname=127.0.0.1\ndatabase.port={port}\n"
                      "database.user=cdc\ndatabase.password=s3cret-Pw\ndatabase.dbname=shop\n"
                      f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n")
    status = capture_status(config)
    assert status.offset is None and status.position is None
    assert status.error is not None and f"127.0.0.1:{port}" in status.error
    assert "s3cret-Pw" not in str(status.as_dict())
    result = CliRunner().invoke(app, ["status", "--config", str(config), "--json"])
    assert result.exit_code == 0 and "s3cret-Pw" not in result.output
    assert '"error"' in result.output
