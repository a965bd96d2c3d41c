"""``lakecdc capture --config FILE [--sink kafka|jsonl:PATH] [--stop-when-idle SECONDS]``."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.console import Console

from lakecdc.errors import LakecdcError

console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    from lakecdc.capture.registry import debezium_classes

    app.command(
        "capture",
        epilog=(
            "[bold]Examples[/bold]\n\n"
            "  lakecdc capture --config conf/postgres-connector.properties\n\n"
            "  lakecdc capture --config conf/postgres.yaml --sink jsonl:/tmp/events.jsonl --stop-when-idle 5\n\n"
            "  lakecdc capture --config conf/mysql-connector.properties"
            "   (also sqlserver-, oracle-connector.properties)\n\n"
            "[bold]connector.class[/bold] (PostgreSQL when absent): " + ", ".join(debezium_classes())
        ),
    )(capture)


def capture(
    config: Path = typer.Option(..., "--config", "-c", exists=True, dir_okay=False,
                                help="Debezium connector .properties file (used unchanged) or YAML."),
    sink: str = typer.Option("kafka", "--sink", help="kafka, kafka:HOST:PORT or jsonl:PATH."),
    stop_when_idle: float | None = typer.Option(
        None, "--stop-when-idle", help="Stop after streaming has seen no change for this many seconds."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG shows each commit step."),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", min=0, max=65535,
        help="Serve Prometheus metrics on this port (/metrics); overrides the file's metrics.port."),
) -> None:
    """Snapshot (per snapshot.mode), then stream changes as Debezium change events.

    Offsets are stored where offset.storage says; the source is acknowledged only after the sink
    has made the events durable. Stop with Ctrl-C: the current batch is committed first.
    """
    from lakecdc.capture.runner import run_capture

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        overrides = {"metrics.port": str(metrics_port)} if metrics_port is not None else None
        stats = run_capture(config, sink, stop_when_idle=stop_when_idle, overrides=overrides, install_signals=True)
    except LakecdcError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2 if error.is_transient else 1) from None
    console.print(
        f"[green]capture stopped[/green]: {stats.snapshot_rows} snapshot rows, "
        f"{stats.streamed_records} streamed records, {stats.commits} commits"
    )
