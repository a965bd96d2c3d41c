"""``lakecdc maintain --config FILE [--table NAME ...] [--expire-older-than 7d] [--ledger-retention 30d]
[--dry-run]``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import typer
from rich.console import Console

from lakecdc.errors import LakecdcError

console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.command(
        "maintain",
        epilog=(
            "[bold]Examples[/bold]\n\n"
            "  lakecdc maintain --config conf/ingest.yaml --dry-run            # what would be done\n\n"
            "  lakecdc maintain --config conf/ingest.yaml                      # every lakecdc table\n\n"
            "  lakecdc maintain -c conf/ingest.yaml --table silver.inventory_public_customers --expire-older-than 2d"
        ),
    )(maintain)


def maintain(
    config: Path = typer.Option(..., "--config", "-c", exists=True, dir_okay=False,
                                help="The ingest YAML or .properties whose tables to maintain."),
    table: list[str] = typer.Option([], "--table", "-t",
                                    help="Only this table (schema.table; repeat for more). Default: every "
                                         "bronze, silver, delete-ledger and dead-letter table."),
    expire_older_than: str = typer.Option(
        "7d", "--expire-older-than",
        help="Keep history this long (s, m, h, d, w): older snapshots and unreferenced files are removed, "
             "and time travel reaches back this far."),
    retain_last: int = typer.Option(5, "--retain-last", min=1,
                                    help="Iceberg: snapshots kept whatever their age."),
    remove_orphans: bool = typer.Option(False, "--remove-orphans",
                                        help="Also delete files no commit references (left by killed writes) once "
                                             "older than --expire-older-than, which must then be at least 1d: a "
                                             "younger file may belong to a commit in progress."),
    ledger_retention: str | None = typer.Option(
        None, "--ledger-retention", show_default=False,
        help="Also drop delete-ledger rows older than this (source time). A deleted row can then come back "
             "if an event older than its delete is delivered again later (a capture restarted from an old "
             "position). Default: keep them (rows older than a truncate always go)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be done; change nothing."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout."),
    log_level: str = typer.Option("WARNING", "--log-level"),
) -> None:
    """Compact the tables ingest writes and clean up their history.

    Iceberg: rewrites data files that have position deletes (every silver MERGE adds some) and small files, then \
expires old snapshots. Delta: compacts small files (silver Z-ordered by key), vacuums unreferenced files and \
cleans up the log. Delete ledgers lose the removals at or before silver's newest truncate (and, with \
--ledger-retention, older ones). Restarts resume as before: maintenance commits carry no lakecdc progress and \
the newest lakecdc commit is always kept. It may run while an ingest job writes: a commit that conflicts with \
the job's is redone (by whichever side lost), and a table that keeps conflicting is named (exit code 2).
    """
    from lakecdc.maintenance.options import MaintenanceOptions, parse_duration
    from lakecdc.maintenance.run import MaintenanceConflictError, run_maintenance

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    failed: LakecdcError | None = None
    try:
        options = MaintenanceOptions(expire_older_than=parse_duration(expire_older_than), retain_last=retain_last,
                                     remove_orphans=remove_orphans, dry_run=dry_run,
                                     ledger_retention=parse_duration(ledger_retention, "ledger-retention")
                                     if ledger_retention else None)
        results = run_maintenance(config, options, table)
    except MaintenanceConflictError as error:  # the other tables were maintained: show them too
        results, failed = error.results, error
    except LakecdcError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2 if error.is_transient else 1) from None
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        out = Console()
        if not results and failed is None:
            out.print("no lakecdc tables found")
        for result in results:
            out.print(result.describe(), highlight=False)
    if failed is not None:
        console.print(f"[red]error:[/red] {failed}")
        raise typer.Exit(2)
