"""Pure parts of ``lakecdc status``: LSN text, binlog distance, config detection, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakecdc.cli.main import app
from lakecdc.metrics.capture_status import binlog_bytes_behind, format_lsn, is_capture_config, parse_lsn
from lakecdc.metrics.ingest_status import is_ingest_config


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
    assert "odd.yaml" in result.output and "neither a capture configuration" in result.output
