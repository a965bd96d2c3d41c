"""``lakecdc demo [--dir DIR] [--seconds N]``: the whole pipeline on the local stack."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table


def _console() -> Console:
    """Text wraps at the width of a terminal; in a pipe, a file or a CI log each sentence stays one line."""
    console = Console()
    return console if console.is_terminal else Console(soft_wrap=True)


console = _console()


def register(app: typer.Typer) -> None:
    app.command(
        "demo",
        epilog=("[bold]Examples[/bold]\n\n"
                "  lakecdc demo                       # ~1 minute; tables stay under ./lakecdc-demo/warehouse\n\n"
                "  lakecdc demo --seconds 60 --dir /tmp/demo"),
    )(demo)


def demo(
    directory: Path = typer.Option(Path("lakecdc-demo"), "--dir", help="Where the stack, state and tables go."),
    seconds: float = typer.Option(20.0, "--seconds", help="How long the workload runs."),
    log_level: str = typer.Option("WARNING", "--log-level", help="INFO shows every batch and commit."),
) -> None:
    """Start a broker and PostgreSQL, capture an inventory workload and ingest it into Iceberg and Delta.

    Prints, per table, source rows against silver rows, the change rate, source-to-silver latency and a \
time-travel query; then stops everything and leaves the tables in the warehouse.
    """
    from lakecdc.demo.runner import run_demo

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    directory.mkdir(parents=True, exist_ok=True)
    result = run_demo(directory, seconds=seconds, say=lambda text: console.print(text, markup=False))
    table = Table(title="7. source vs silver")
    for column in ("table", "source rows", "silver rows", "equal"):
        table.add_column(column)
    for c in result.comparisons:
        table.add_row(c.table, str(c.source_rows), str(c.silver_rows),
                      "[green]yes[/green]" if c.equal else f"[red]no[/red] ({c.missing} missing, {c.unexpected} extra)")
    console.print(table)
    rate = result.changes / result.seconds if result.seconds else 0.0
    console.print(f"{result.changes:,} changes applied in {result.seconds:.1f} s ({rate:,.0f} changes/s)")
    if result.latency_p50_ms is not None and result.latency_p99_ms is not None:
        console.print(f"source commit -> silver commit latency: p50 {result.latency_p50_ms / 1000:.1f} s, "
                      f"p99 {result.latency_p99_ms / 1000:.1f} s")
    travel = result.time_travel
    if travel:
        console.print(f"time travel: {travel['query']}\n  first version ({travel['first_committed_at']}): "
                      f"{travel['rows_then']} rows, balance {travel['balance_then']}; now: {travel['rows_now']} rows, "
                      f"balance {travel['balance_now']} ({travel['snapshots']} snapshots)")
    console.print(f"tables: {result.warehouse}")
    console.print(f"Spark's and Java's log: {result.spark_log}")
    if not result.all_equal:
        raise typer.Exit(1)
