"""The ``lakecdc`` command: one typer app; each area registers its commands from its own module
(``register(app)``), so the CLI stays a thin layer over the library."""

from __future__ import annotations

import importlib

import typer

from lakecdc import __version__

COMMAND_MODULES = ("lakecdc.cli.dev", "lakecdc.cli.capture", "lakecdc.cli.ingest", "lakecdc.cli.demo",
                   "lakecdc.cli.status", "lakecdc.cli.audit", "lakecdc.cli.quality", "lakecdc.cli.maintain")

app = typer.Typer(
    name="lakecdc",
    help=(
        "Debezium-compatible change data capture into Delta Lake and Apache Iceberg.\n\n"
        "Capture publishes Debezium change events to Kafka; ingest MERGEs them into bronze and "
        "silver tables."
    ),
    epilog=(
        "[bold]Examples[/bold]\n\n"
        "  lakecdc demo                 # the whole pipeline on the local stack\n\n"
        "  lakecdc dev up               # start broker, PostgreSQL and MariaDB locally\n\n"
        "  lakecdc COMMAND --help       # help and examples for one command"
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"lakecdc {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Print the lakecdc version and exit."),
) -> None:
    """Debezium-compatible change data capture into Delta Lake and Apache Iceberg."""


def register_commands(target: typer.Typer, modules: tuple[str, ...] = COMMAND_MODULES) -> list[str]:
    """Call ``register(target)`` of every command module; returns their names."""
    for module_name in modules:
        importlib.import_module(module_name).register(target)
    return list(modules)


REGISTERED_MODULES = register_commands(app)

if __name__ == "__main__":
    app()
