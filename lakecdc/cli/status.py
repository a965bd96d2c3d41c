"""``lakecdc status --config FILE [--config FILE ...] [--json]``: where capture and ingest stand.

A capture configuration (it has ``connector.class`` or ``database.hostname``) shows the stored
offset and the source log not yet acknowledged (PostgreSQL slot lag, MySQL binlog bytes, Oracle SCNs, SQL Server
CDC max LSN); an ingest configuration (``kafka.bootstrap.servers`` + ``topic.prefix``) shows per table the last
committed batch, Kafka offsets, source position and time, lag and row counts. Credentials are never shown.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from lakecdc.config.base import load_properties
from lakecdc.errors import LakecdcError

err_console = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.command(
        "status",
        epilog=(
            "[bold]Examples[/bold]\n\n"
            "  lakecdc status --config conf/postgres-connector.properties\n\n"
            "  lakecdc status --config capture.properties --config conf/ingest.yaml --json"
        ),
    )(status)


def status(
    config: list[Path] = typer.Option(..., "--config", "-c", exists=True, dir_okay=False,
                                      help="A capture or an ingest configuration (repeat for both)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout, for machines."),
) -> None:
    """Show the stored capture offset and how far the source log is ahead of it (PostgreSQL slot, MySQL
    binlog, Oracle SCNs, SQL Server CDC max LSN), and per table the ingest progress and lag."""
    from lakecdc.config.redact import install_log_redaction

    logging.basicConfig(level=logging.WARNING)
    install_log_redaction()
    reports: list[dict[str, Any]] = []
    try:
        for path in config:
            reports.append(_status_of(path))
    except (LakecdcError, NotImplementedError, OSError) as error:
        err_console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(reports, indent=2, default=str))
        return
    console = Console()
    for report in reports:
        (_print_capture if report["kind"] == "capture" else _print_ingest)(console, report)


def _status_of(path: Path) -> dict[str, Any]:
    from lakecdc.capture.status import capture_status, is_capture_config
    from lakecdc.ingest.status import ingest_status, is_ingest_config

    properties = load_properties(path)
    if is_capture_config(properties):
        return capture_status(path).as_dict()
    if is_ingest_config(properties):
        return ingest_status(path).as_dict()
    raise LakecdcError(f"{path}: neither a capture configuration (connector.class, database.hostname) nor an "
                       "ingest configuration (kafka.bootstrap.servers, topic.prefix)")


def _print_capture(console: Console, report: dict[str, Any]) -> None:
    table = Table(title=f"capture {report['name']} ({report['connector']})", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("offset storage", report["offset_storage"])
    table.add_row("stored position", report["position"] or "(no offset stored yet)")
    table.add_row("source time of that position", report["source_ts"] or "-")
    table.add_row("offset stored at", report["stored_at"] or "-")
    slot = report.get("slot")
    if slot:
        if not slot.get("exists"):
            table.add_row("replication slot", f"{slot['name']} does not exist")
        else:
            table.add_row("replication slot", f"{slot['name']} ({'active' if slot['active'] else 'inactive'}, "
                          f"wal {slot.get('wal_status') or '-'})")
            table.add_row("slot confirmed flush / current WAL",
                          f"{slot.get('confirmed_flush_lsn')} / {slot['current_wal_lsn']}")
            table.add_row("slot lag", _bytes(slot.get("lag_bytes")))
    binlog = report.get("binlog")
    if binlog:
        table.add_row("server binlog position", f"{binlog.get('current_file')}:{binlog.get('current_pos')}")
        table.add_row("binlog behind", _bytes(binlog.get("lag_bytes")))
    change_tables = report.get("change_tables")
    if change_tables:
        table.add_row("CDC max LSN", str(change_tables.get("max_lsn")))
        table.add_row("caught up", {True: "yes", False: "no"}.get(change_tables.get("caught_up"), "-"))
    redo = report.get("redo")
    if redo:
        table.add_row("database current SCN", str(redo.get("current_scn")))
        table.add_row("SCNs behind", str(redo.get("scn_lag", "-")))
    if report.get("error"):
        table.add_row("[red]source[/red]", report["error"])
    console.print(table)


def _print_ingest(console: Console, report: dict[str, Any]) -> None:
    title = (f"ingest {report['name']}: batch {report['batch_id']}, consistent through "
             f"{report.get('consistent_through') or '-'} (source time {report['applied_through_source_ts'] or '-'})"
             + (f", {report['held_events']} events held for open transactions" if report["held_events"] else ""))
    table = Table(title=title)
    for column in ("table", "format", "batch", "kafka offsets", "complete through", "source time", "lag",
                   "silver rows", "bronze rows"):
        table.add_column(column, justify="right" if column in ("batch", "lag", "silver rows", "bronze rows")
                         else "left", no_wrap=column == "table")
    for row in report["tables"]:
        offsets = ", ".join(f"{topic.rsplit('.', 1)[-1]}[{p}]={o}" for topic, parts in row["kafka_offsets"].items()
                            for p, o in parts.items())
        table.add_row(row["silver"] or row["bronze"], row["format"], _text(row["batch_id"]),
                      offsets or (row["error"] or "-"), row.get("complete_through") or "-",
                      _iso(row["source_ts_ms"]), _seconds(row["lag_ms"]), _text(row["silver_rows"]),
                      _text(row["bronze_rows"]))
    console.print(table)


def _bytes(value: int | None) -> str:
    return "-" if value is None else f"{value:,} bytes"


def _text(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _seconds(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:,.1f} s"


def _iso(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
