"""The lakecdc CLI: every command lists in --help and has examples; module registration rules."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from lakecdc.cli.main import COMMAND_MODULES, REGISTERED_MODULES, app, register_commands

runner = CliRunner()


def _commands(group: typer.Typer) -> dict[str, object]:
    import typer.main

    click_group = typer.main.get_command(group)
    return dict(click_group.commands)  # type: ignore[attr-defined]


def test_help_lists_every_registered_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    assert "lakecdc.cli.dev" in REGISTERED_MODULES
    for name in _commands(app):
        assert name in result.output


def _all_command_paths(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        return [prefix]
    paths = [prefix] if prefix else []
    for name, sub in subcommands.items():
        paths += _all_command_paths(sub, prefix + (name,))
    return paths


def test_every_command_help_has_examples() -> None:
    import typer.main

    paths = _all_command_paths(typer.main.get_command(app))
    assert ("dev", "up") in paths and ("dev", "down") in paths and ("dev", "status") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Examples" in result.output, f"`lakecdc {' '.join(path)} --help` shows no examples"


def test_version_option() -> None:
    from lakecdc import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"lakecdc {__version__}"


def test_every_command_module_is_registered() -> None:
    assert REGISTERED_MODULES == list(COMMAND_MODULES)
    target = typer.Typer()
    modules = ("lakecdc.cli.status", "lakecdc.cli.capture")
    assert register_commands(target, modules) == list(modules)
    assert {"status", "capture"} <= set(_commands(target))


def test_the_contracted_command_modules_are_registered_first() -> None:
    contracted = ("lakecdc.cli.dev", "lakecdc.cli.capture", "lakecdc.cli.ingest", "lakecdc.cli.demo")
    assert COMMAND_MODULES[:4] == contracted
    assert len(set(COMMAND_MODULES)) == len(COMMAND_MODULES)
