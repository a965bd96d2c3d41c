"""``lakecdc quality check TABLE``: run the data-quality rules on a silver table (and its bronze)."""

from __future__ import annotations

import json
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
        "  lakecdc quality check silver.customers -w ./lake --bronze bronze.customers --quarantine --json"
    ),
)


def register(app: typer.Typer) -> None:
    app.add_typer(quality_app, name="quality")


def connect_source(spec: str) -> Any:
    """``mysql://user:pw@host:port/db`` (pymysql) or a libpq DSN / ``postgresql://`` URL (psycopg).
    Errors never repeat the spec: it may hold a password."""
    try:
        if spec.startswith(("mysql://", "mariadb://")):
            from urllib.parse import unquote, urlparse

            import pymysql

            url = urlparse(spec)
            return pymysql.connect(host=url.hostname or "127.0.0.1", port=url.port or 3306,
                                   user=unquote(url.username or ""), password=unquote(url.password or ""),
                                   database=url.path.lstrip("/") or None)
        import psycopg

        return psycopg.connect(spec)
    except Exception as error:  # noqa: BLE001 - driver errors differ; report the kind only
        raise typer.BadParameter(f"cannot connect to the source database ({type(error).__name__})") from None


@quality_app.command("check", epilog="[bold]Examples[/bold]\n\n  lakecdc quality check silver.customers --bronze bronze.customers -w ./lake\n\n  lakecdc quality check silver.customers -w ./lake --rule unique_keys --rule not_null_keys")
def check(
    table: str = typer.Argument(..., help="the SILVER table, e.g. silver.customers"),
    bronze: str | None = typer.Option(None, "--bronze", "-b", help="its bronze table (needed by the replay, "
                                                                   "delete and position rules)."),
    fmt: str = typer.Option("delta", "--format", "-f", help="iceberg or delta."),
    warehouse: Path = typer.Option(..., "--warehouse", "-w", help="Warehouse directory."),
    catalog: str = typer.Option("hadoop", "--catalog", help="Iceberg catalog kind: hadoop or jdbc."),
    rules: list[str] = typer.Option([], "--rule", "-r", help="Rule to run (repeat); default: all that apply."),
    key: list[str] = typer.Option([], "--key-column", help="Key column(s); default: the delete ledger's."),
    source: str | None = typer.Option(None, "--source", help="Source database for reconciliation: libpq DSN, "
                                                             "postgresql:// or mysql:// URL."),
    source_table: str | None = typer.Option(None, "--source-table", help="schema.table at the source."),
    max_lag: float = typer.Option(900.0, "--max-lag", help="Freshness limit in seconds."),
    quarantine_rows: bool = typer.Option(False, "--quarantine", help="Write failing rows to TABLE_quarantine."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Run the rules; exit 1 when any fails (the reasons are printed)."""
    from lakecdc.audit.tables import key_columns
    from lakecdc.cli.audit import open_table
    from lakecdc.quality import check_table, quarantine

    options: dict[str, Any] = {"max_lag_seconds": max_lag}
    if source:
        options.update(source_connection=connect_source(source), source_table=source_table or table.split(".")[-1])
    try:
        silver = open_table(table, fmt, warehouse, catalog)
        bronze_table = silver.sibling(bronze) if bronze else None
        report = check_table(silver, bronze_table, rules=rules or None, keys=tuple(key) or None, **options)
        written = quarantine(silver, report, key_columns(silver, tuple(key) or None)) if quarantine_rows else 0
    except LakecdcError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    finally:
        if options.get("source_connection") is not None:
            options["source_connection"].close()
    if as_json:
        console.print_json(json.dumps(report.as_dict()))
    else:
        out = Table(title=f"quality of {silver}")
        for column in ("rule", "result", "failing rows", "reason"):
            out.add_column(column, overflow="fold")
        for r in report.results:
            out.add_row(r.rule, "[green]pass[/green]" if r.passed else "[red]FAIL[/red]", str(r.failed_rows), r.reason)
        console.print(out)
    if written:
        console.print(f"{written} failing rows written to {table}_quarantine")
    if not report.passed:
        raise typer.Exit(1)
