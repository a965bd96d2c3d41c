"""``lakecdc ingest --config FILE [--trigger available-now | continuous | every:30s]``."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.console import Console

from lakecdc.errors import LakecdcError

console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.command(
        "ingest",
        epilog=(
            "[bold]Examples[/bold]\n\n"
            "  lakecdc ingest --config conf/ingest.yaml                      # everything present, then exit\n\n"
            "  lakecdc ingest --config conf/ingest.yaml --trigger continuous  # until Ctrl-C / SIGTERM\n\n"
            "  lakecdc ingest --config conf/ingest.yaml --trigger every:30s"
        ),
    )(ingest)


def ingest(
    config: Path = typer.Option(..., "--config", "-c", exists=True, dir_okay=False,
                                help="Ingest YAML or .properties (see conf/ingest.yaml)."),
    trigger: str | None = typer.Option(
        None, "--trigger", "-t",
        help="available-now (read what is there, then exit), continuous, or every:<n>s. "
             "Default: the file's 'trigger', else available-now."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG shows each commit step."),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", min=0, max=65535,
        help="Serve Prometheus metrics on this port (/metrics); overrides the file's metrics.port."),
) -> None:
    """Read Debezium topics and apply them to bronze change logs and silver tables, exactly once.

    Resumes from the Kafka offsets committed in the tables. SIGTERM or Ctrl-C finishes and commits the current \
batch, then exits 0.
    """
    from lakecdc.ingest.exporter import serve_ingest_metrics
    from lakecdc.ingest.job import run_ingest

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        with serve_ingest_metrics(config, metrics_port):
            summary = run_ingest(config, trigger)
    except LakecdcError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2 if error.is_transient else 1) from None
    tables = ", ".join(f"{name}: {n:,}" for name, n in sorted(summary.tables.items())) or "none"
    console.print(f"[green]ingest stopped[/green]{' (signal)' if summary.stopped_by_signal else ''}: "
                  f"{summary.events:,} changes in {summary.batches} batches ({tables}); "
                  f"{summary.dead_letters} dead letters")
    if summary.failed_tables:
        for name, reason in summary.failed_tables.items():
            console.print(f"[red]table {name} stopped:[/red] {reason}")
        raise typer.Exit(1)
