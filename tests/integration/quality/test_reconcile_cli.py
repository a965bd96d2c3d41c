"""``lakecdc quality check --source`` against SQL Server (pymssql, pyodbc) and Oracle, end to end through
the CLI: URL parsing, the password from an ``env:``/``file:`` reference or the URL, the dialect the
URL names, ``--source-position``, the report and the exit code. Only the driver's connect call is
replaced (``LAKECDC_QUALITY_SOURCE_FACTORY``): it returns the recorded-result-set connections of
``recorded_sources`` in each driver's DB-API shape; the lake is a real Delta table read by DataFusion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import recorded_sources
from recorded_sources import Evaluator
from test_reconcile_recorded import COLUMNS, SCHEMAS, lake_table, rows
from typer.testing import CliRunner

from lakecdc.cli.main import app

pytestmark = pytest.mark.integration

PASSWORD = "Pa55-w0rd-of-the-source"
#: URL -> (SourceUrl.kind, evaluator dialect, source table)
SOURCES = {"mssql://recon@sql.example:1433/shop": ("pymssql", "sqlserver", "dbo.items"),
           "mssql+pyodbc://recon@sql.example/shop?TrustServerCertificate=yes": ("pyodbc", "sqlserver", "dbo.items"),
           "oracle://recon@ora.example:1521/ORCLPDB1": ("oracledb", "oracle", "SHOP.ITEMS")}


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECDC_QUALITY_SOURCE_FACTORY", "recorded_sources:cli_factory")
    monkeypatch.setenv("RECON_PASSWORD", PASSWORD)
    recorded_sources.CLI_SOURCES.clear()
    recorded_sources.CLI_CALLS.clear()


def check(warehouse: Path, url: str, table: str, *extra: str) -> tuple[int, str]:
    out = CliRunner().invoke(app, ["quality", "check", "silver.items", "-w", str(warehouse), "-f", "delta",
                                   "--key-column", "id", "--rule", "source_reconciliation", "--source", url,
                                   "--source-table", table, "--json", *extra])
    return out.exit_code, out.output


@pytest.mark.parametrize("url", list(SOURCES))
def test_cli_reconciles_sql_server_and_oracle(url: str, recorded: None, tmp_path: Path) -> None:
    kind, dialect, table = SOURCES[url]
    data = rows("id", 30)
    lake_table(tmp_path, "id", data)
    source = [dict(r) for r in data]
    source[4]["note"] = "changed at the source"
    del source[9]
    recorded_sources.CLI_SOURCES[kind] = Evaluator(dialect, table, SCHEMAS["id"], SCHEMAS["id"] + COLUMNS, source)

    code, output = check(tmp_path, url, table, "--source-password", "env:RECON_PASSWORD",
                         "--source-position", "00000027:00000758:000a")
    assert code == 1, output
    report = json.loads(output)
    (result,) = [r for r in report["results"] if r["rule"] == "source_reconciliation"]
    assert "30 silver rows, 29 source rows" in result["reason"], result
    assert sorted((r["id"], r["_problem"]) for r in result["failing"]) == \
        sorted([(data[4]["id"], "differs"), (data[9]["id"], "missing at the source")])
    (called, password), = recorded_sources.CLI_CALLS
    assert (called.kind, called.dialect, called.user) == (kind, dialect, "recon") and password == PASSWORD
    assert PASSWORD not in output

    recorded_sources.CLI_SOURCES[kind] = Evaluator(dialect, table, SCHEMAS["id"], SCHEMAS["id"] + COLUMNS, data)
    secret_file = tmp_path / "pw"
    secret_file.write_text(PASSWORD + "\n")
    code, output = check(tmp_path, url, table, "--source-password", f"file:{secret_file}")
    assert code == 0 and "every key range's checksum matches" in output, output
    assert recorded_sources.CLI_CALLS[-1][1] == PASSWORD


def test_cli_connect_failures_are_clear_and_masked(recorded: None, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lake_table(tmp_path, "id", rows("id", 3))
    code, output = check(tmp_path, "oracle://recon@ora.example/ORCLPDB1", "SHOP.ITEMS",
                         "--source-password", "env:NOT_SET_FOR_RECON")
    assert code == 2 and "env:NOT_SET_FOR_RECON" in output and "not set" in output, output

    # the real driver (pymssql) refused at a closed port, the password in the URL
    monkeypatch.delenv("LAKECDC_QUALITY_SOURCE_FACTORY")
    code, output = check(tmp_path, f"mssql://recon:{PASSWORD}@127.0.0.1:1/shop", "dbo.items")
    said = " ".join(output.split())  # as one line: the console wraps it
    assert code == 2 and "cannot connect to the source database mssql://recon:******@127.0.0.1:1/shop" in said, said
    assert PASSWORD not in said


def test_cli_reconciles_postgres_with_the_password_apart(pg, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A real PostgreSQL 18 (SCRAM: the password is checked): the URL without it, ``--source-password
    file:``; a wrong one is refused, masked."""
    import psycopg

    data = rows("id", 30)
    lake_table(tmp_path, "id", data)
    with psycopg.connect(pg.create_database("quality_reconcile_cli")) as conn:
        conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, amount numeric(10,2), note text, at timestamptz, "
                     "flag boolean, blob bytea, ratio float8)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s)",
                            [(r["id"], r["amount"], "changed" if i == 5 else r["note"], r["at"], r["flag"], r["blob"],
                              r["ratio"]) for i, r in enumerate(data)])
    secret_file = tmp_path / "pw"
    secret_file.write_text(pg.password + "\n")
    url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/quality_reconcile_cli"
    code, output = check(tmp_path, url, "public.items", "--source-password", f"file:{secret_file}")
    assert code == 1, output
    (result,) = json.loads(output)["results"]
    assert result["failing"] == [{"id": data[5]["id"], "_problem": "differs"}], result

    secret_file.write_text("not-the-password\n")
    code, output = check(tmp_path, url, "public.items", "--source-password", f"file:{secret_file}")
    said = " ".join(output.split())
    assert code == 2 and "cannot connect to the source database" in said and "password authentication failed" in said
    assert "not-the-password" not in said and pg.password not in said
