"""``lakecdc quality check TABLE``: run the data-quality rules on a silver table (and its bronze)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from lakecdc.errors import LakecdcError

console = Console()
errors = Console(stderr=True)
quality_app = typer.Typer(
    name="quality", help="Data-quality rules, source reconciliation and quarantine for silver tables.",
    rich_markup_mode="rich", no_args_is_help=True,
    epilog=(
        "[bold]Examples[/bold]\n\n"
        "  lakecdc quality check silver.customers --bronze bronze.customers -w ./lake\n\n"
        "  lakecdc quality check silver.customers -w ./lake --rule unique_keys --rule not_null_keys\n\n"
        "  lakecdc quality check silver.customers -w ./lake --source 'host=localhost dbname=shop user=me' "
        "--source-table public.customers\n\n"
        "  lakecdc quality check silver.items -w ./lake --key-column id --source mssql://recon@db:1433/shop "
        "--source-password env:MSSQL_PASSWORD --source-table dbo.items --source-position 00000027:00000758:000a\n\n"
        "  lakecdc quality check silver.customers -w ./lake --bronze bronze.customers --quarantine --json"
    ),
)


def register(app: typer.Typer) -> None:
    app.add_typer(quality_app, name="quality")


@quality_app.command("check", epilog="[bold]Examples[/bold]\n\n  lakecdc quality check --config conf/ingest.yaml\n\n"
                     "  lakecdc quality check silver.customers --bronze bronze.customers -w ./lake\n\n"
                     "  lakecdc quality check silver.customers -w ./lake --rule unique_keys --rule not_null_keys")
def check(
    table: str | None = typer.Argument(None, help="the SILVER table, e.g. silver.customers; default with "
                                                   "--config: every silver table the configuration knows"),
    bronze: str | None = typer.Option(None, "--bronze", "-b", help="its bronze table (default with --config: "
                                                                   "the one the ingest job writes)."),
    fmt: str | None = typer.Option(None, "--format", "-f", help="iceberg or delta (default: --config's, else delta)."),
    warehouse: Path | None = typer.Option(None, "--warehouse", "-w", help="Warehouse directory (default: --config's)."),
    catalog: str | None = typer.Option(None, "--catalog", help="Iceberg catalog kind: hadoop or jdbc."),
    config: Path | None = typer.Option(None, "--config", "-c", exists=True, dir_okay=False,
                                       help="The ingest configuration: tables, formats, warehouse, catalog."),
    rules: list[str] = typer.Option([], "--rule", "-r", help="Rule to run (repeat); default: all that apply."),
    key: list[str] = typer.Option([], "--key-column", help="Key column(s); default: the delete ledger's."),
    source: str | None = typer.Option(None, "--source", help="Source database for reconciliation: libpq DSN, "
                                                             "postgresql://, mysql://, mssql:// (pymssql), "
                                                             "mssql+pyodbc://, or oracle://host:port/SERVICE URL."),
    source_password: str | None = typer.Option(None, "--source-password",
                                               help="The source's password: env:NAME, file:PATH or the text "
                                                    "(default: the URL's; never printed)."),
    source_table: str | None = typer.Option(None, "--source-table", help="schema.table at the source."),
    source_position: str | None = typer.Option(None, "--source-position",
                                               help="The source position the source read reflects (SQL Server "
                                                    "LSN, Oracle SCN; PostgreSQL and MySQL read their own): "
                                                    "silver is compared as of it."),
    max_lag: float = typer.Option(900.0, "--max-lag", help="Freshness limit in seconds."),
    quarantine_rows: bool = typer.Option(False, "--quarantine", help="Write failing rows to TABLE_quarantine."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Run the rules in the tables' own engine; exit 1 when any fails (the reasons are printed)."""
    from lakecdc.audit.tables import key_columns
    from lakecdc.cli.audit import AuditLake
    from lakecdc.quality import check_table, quarantine

    options: dict[str, Any] = {"max_lag_seconds": max_lag}
    reports = []
    try:
        if source:
            from lakecdc.config.redact import install_log_redaction
            from lakecdc.quality.source_connect import connect_source

            install_log_redaction()  # a driver logging its connection string shows it masked
            connection, url = connect_source(source, source_password)
            options.update(source_connection=connection, source_dialect=url.dialect)
            if source_position:
                options.update(source_position=source_position)
        lake = AuditLake.of(config, fmt, warehouse, catalog)
        names = [table] if table else sorted(lake.bronze_names)
        if not names:
            raise typer.BadParameter("name a TABLE, or give --config whose job has tables")
        written = 0
        for name in names:
            silver = lake.table(name)
            if table is None and not silver.exists():
                continue  # a keyless source table has a bronze change log only
            bronze_name = bronze or lake.bronze_names.get(name)
            bronze_table = lake.table(bronze_name) if bronze_name else None
            if source:
                options["source_table"] = source_table or name.split(".")[-1]
            report = check_table(silver, bronze_table, rules=rules or None, keys=tuple(key) or None, **options)
            reports.append(report)
            if quarantine_rows:
                written += quarantine(silver, report, key_columns(silver, tuple(key) or None))
    except LakecdcError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    finally:
        if options.get("source_connection") is not None:
            options["source_connection"].close()
    if as_json:
        console.print_json(json.dumps([r.as_dict() for r in reports] if len(reports) > 1 else reports[0].as_dict()))
    else:
        for report in reports:
            out = Table(title=f"quality of {report.table}")
            for column in ("rule", "result", "failing rows", "reason"):
                out.add_column(column, overflow="fold")
            for r in report.results:
                out.add_row(r.rule, "[green]pass[/green]" if r.passed else "[red]FAIL[/red]", str(r.failed_rows),
                            r.reason)
            console.print(out)
            for r in report.failures:
                if r.failing is not None and not r.failing.empty:  # the keys: what to look at first
                    console.print(f"{r.rule}: first failing rows of {report.table}\n"
                                  f"{r.failing.head(20).to_string(index=False)}", markup=False)
    if written:
        console.print(f"{written} failing rows written to the tables' _quarantine")
    if not all(r.passed for r in reports):
        raise typer.Exit(1)


@quality_app.command("suites", epilog="[bold]Examples[/bold]\n\n"
                                       "  lakecdc quality suites --config conf/ingest.yaml --suites gx/ --record\n\n"
                                       "  lakecdc quality suites --config conf/ingest.yaml --suites gx/ "
                                       "--docs ./quality-docs")
def suites(
    config: Path = typer.Option(..., "--config", "-c", exists=True, dir_okay=False,
                                help="The ingest configuration: tables, formats, warehouse; table.mapping.<topic>."
                                     "expectations names a table's suite."),
    suite_dir: Path | None = typer.Option(None, "--suites", help="A GX project directory or suite JSON files; a "
                                                                 "suite runs on the table its name names."),
    record: bool = typer.Option(False, "--record", help="Append the results to <namespace>.quality_results."),
    docs: Path | None = typer.Option(None, "--docs", file_okay=False,
                                     help="Render the results as a GX Data Docs site in this directory."),
) -> None:
    """Run the team's great-expectations suites on their silver tables through Spark; exit 1 when any fails."""
    from lakecdc.cli.audit import AuditLake
    from lakecdc.config.ingest import load_ingest_config
    from lakecdc.lake.naming import TableNamer
    from lakecdc.quality.team_suites import load_suites, record_results, run_team_suite

    try:
        lake = AuditLake.of(config, None, None, None)
        cfg = load_ingest_config(config)
        namer = TableNamer(cfg)
        wanted: list[tuple[str, Any]] = []
        for topic, override in cfg.table_overrides().items():
            if override.expectations:
                silver = namer.target(topic).silver_table
                wanted += [(silver, s) for s in load_suites(override.expectations)]
        if suite_dir is not None:
            wanted += [(s.name, s) for s in load_suites(suite_dir)]
        runs = [run_team_suite(lake.table(name), suite) for name, suite in wanted]
        run_id = uuid.uuid4().hex  # one id in the results table and on the Data Docs pages
        if record:
            record_results(runs, run_id=run_id)
        if docs is not None:
            from lakecdc.quality.data_docs import build_data_docs

            index = build_data_docs(runs, docs, run_id=run_id)
    except LakecdcError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    out = Table(title="team suites")
    for column in ("table", "version", "suite", "expectation", "result", "unexpected"):
        out.add_column(column, overflow="fold")
    for run in runs:
        for row in run.rows("", datetime.now(timezone.utc)):
            out.add_row(row["table_name"], str(row["table_version"]), row["suite"], row["expectation"],
                        "[green]pass[/green]" if row["success"] else "[red]FAIL[/red]", str(row["unexpected_count"]))
    console.print(out)
    if docs is not None:
        console.print(f"GX Data Docs (run {run_id}): {index}")
    if not all(run.success for run in runs):
        raise typer.Exit(1)
