"""``lakecdc audit versions | as-of | history | diff``: time-travel audits of bronze and silver tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from lakecdc.errors import LakecdcError

if TYPE_CHECKING:
    import pandas as pd

    from lakecdc.audit.tables import LakeTable

console = Console()
errors = Console(stderr=True)
audit_app = typer.Typer(
    name="audit", help="Time-travel audits: versions and the source position each reflects, as-of reads, "
                       "one row's history, diffs between versions.",
    rich_markup_mode="rich", no_args_is_help=True,
    epilog=(
        "[bold]Examples[/bold]\n\n"
        "  lakecdc audit versions silver.customers --format delta --warehouse ./lake\n\n"
        "  lakecdc audit as-of silver.customers -w ./lake --position 0/16B3748\n\n"
        "  lakecdc audit history bronze.customers -w ./lake --key id=1001\n\n"
        "  lakecdc audit diff silver.customers -w ./lake 3 7"
    ),
)

FORMAT = typer.Option("delta", "--format", "-f", help="iceberg (read through Spark) or delta (delta-rs).")
WAREHOUSE = typer.Option(..., "--warehouse", "-w", help="Warehouse directory (Delta tables, or the Iceberg "
                                                         "hadoop/jdbc catalog's warehouse).")
CATALOG = typer.Option("hadoop", "--catalog", help="Iceberg catalog kind: hadoop or jdbc.")
LIMIT = typer.Option(50, "--limit", "-n", help="Rows to print at most.")


def register(app: typer.Typer) -> None:
    app.add_typer(audit_app, name="audit")


def open_table(name: str, fmt: str, warehouse: Path, catalog: str = "hadoop") -> LakeTable:
    """The table handle; Iceberg starts a local Spark session on the warehouse."""
    from lakecdc.audit.tables import LakeTable

    if fmt == "iceberg":
        from lakecdc.devstack.spark import spark_session

        return LakeTable.iceberg(spark_session(warehouse, catalog=catalog, app_name="lakecdc-audit"), name)  # type: ignore[arg-type]
    return LakeTable.open(name, fmt, warehouse=warehouse)


def print_frame(df: pd.DataFrame, title: str, limit: int) -> None:
    from lakecdc.audit.tables import describe_value

    table = Table(title=f"{title} ({len(df)} rows{', first ' + str(limit) if len(df) > limit else ''})")
    for column in df.columns:
        table.add_column(str(column), overflow="fold")
    for record in df.head(limit).to_dict("records"):
        table.add_row(*["" if (v := describe_value(record[c])) is None else str(v) for c in df.columns])
    console.print(table)


def fail(error: LakecdcError) -> None:
    errors.print(f"[red]error:[/red] {error}")
    raise typer.Exit(1)


def parse_key(pairs: list[str]) -> dict[str, Any]:
    """``id=1001`` -> {"id": 1001}; numbers become ints, the rest stays text."""
    key: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"key {pair!r}: write it as column=value (id=1001)")
        key[name] = int(value) if value.lstrip("-").isdigit() else value
    return key


@audit_app.command("versions", epilog="[bold]Examples[/bold]\n\n  lakecdc audit versions silver.customers --format delta --warehouse ./lake\n\n  lakecdc audit versions silver.customers -f iceberg -w ./lake --plot versions.png")
def versions(table: str = typer.Argument(..., help="schema.table, e.g. silver.customers"),
             fmt: str = FORMAT, warehouse: Path = WAREHOUSE, catalog: str = CATALOG,
             plot: Path | None = typer.Option(None, "--plot", help="Also save a PNG of rows and changes per "
                                                                   "version (and PLOT-lag.png: source-to-table lag).")) -> None:
    """Every commit with the source position it is complete through, its source time, batch id and Kafka progress."""
    from lakecdc.audit.versions import table_versions

    try:
        lake = open_table(table, fmt, warehouse, catalog)
        found = table_versions(lake)
    except LakecdcError as error:
        fail(error)
        return
    out = Table(title=f"{lake}: {len(found)} versions")
    for column in ("version", "committed at (UTC)", "operation", "complete through", "source time", "batch",
                   "written", "removed", "Kafka progress"):
        # ids and positions are copied into other commands: never wrap them
        out.add_column(column, overflow="fold", no_wrap=column in ("version", "complete through"))
    for v in found:
        progress = ", ".join(f"{t}[{p}]@{o}" for (t, p), o in sorted(v.kafka_progress.items()))
        out.add_row(str(v.version), v.committed_at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], v.operation,
                    ",".join(map(str, v.source_position)) if v.source_position else "-",
                    v.source_time.strftime("%H:%M:%S.%f")[:-3] if v.source_time else "-",
                    "-" if v.batch_id is None else str(v.batch_id), str(v.rows_written or 0),
                    str(v.rows_removed or 0), progress or "-")
    console.print(out)
    if plot is not None:
        from lakecdc.audit.plots import plot_lag, plot_versions

        first = plot_versions(found, plot, title=str(lake))
        second = plot_lag(found, plot.with_name(plot.stem + "-lag.png"), title=f"{lake}: source-to-table lag")
        console.print(f"plots saved: {first}, {second}")


@audit_app.command("as-of", epilog="[bold]Examples[/bold]\n\n  lakecdc audit as-of silver.customers -w ./lake --position 0/16B3748")
def as_of(table: str = typer.Argument(..., help="schema.table"), fmt: str = FORMAT, warehouse: Path = WAREHOUSE,
          catalog: str = CATALOG,
          version: int | None = typer.Option(None, "--version", help="Iceberg snapshot id or Delta version."),
          timestamp: str | None = typer.Option(None, "--timestamp", help="ISO time, e.g. 2026-11-22T10:00:00+00:00"),
          position: str | None = typer.Option(None, "--position", help="Source position: PostgreSQL LSN "
                                                                       "(0/16B3748), an int, or a,b,c,d."),
          limit: int = LIMIT) -> None:
    """The table as it was at a version, a time, or a source position."""
    from lakecdc.audit.as_of import read_as_of_with_version

    try:
        lake = open_table(table, fmt, warehouse, catalog)
        read = read_as_of_with_version(lake, version=version, timestamp=timestamp, source_position=position)
    except LakecdcError as error:
        fail(error)
        return
    v = read.version
    where = (f"version {v.version} (committed {v.committed_at.isoformat()}, complete through "
             f"{','.join(map(str, v.source_position)) if v.source_position else 'no recorded position'})") if v else ""
    console.print(f"[bold]{lake}[/bold] as of {where}", soft_wrap=True)  # ids stay on one line
    print_frame(read.rows, "rows", limit)


@audit_app.command("history", epilog="[bold]Examples[/bold]\n\n  lakecdc audit history bronze.customers -w ./lake --key id=1001")
def history(table: str = typer.Argument(..., help="the BRONZE table, e.g. bronze.customers"),
            key: list[str] = typer.Option(..., "--key", "-k", help="column=value; repeat for compound keys."),
            fmt: str = FORMAT, warehouse: Path = WAREHOUSE, catalog: str = CATALOG, limit: int = LIMIT) -> None:
    """Every change of one key (and the truncates after it appeared), in source order, from bronze."""
    from lakecdc.audit.history import row_history

    try:
        lake = open_table(table, fmt, warehouse, catalog)
        df = row_history(lake, parse_key(key))
    except LakecdcError as error:
        fail(error)
        return
    print_frame(df, f"history of {parse_key(key)} in {lake}", limit)


@audit_app.command("diff", epilog="[bold]Examples[/bold]\n\n  lakecdc audit diff silver.customers -w ./lake 3 7")
def diff(table: str = typer.Argument(..., help="the SILVER table"),
         v1: int = typer.Argument(..., help="older version"), v2: int = typer.Argument(..., help="newer version"),
         fmt: str = FORMAT, warehouse: Path = WAREHOUSE, catalog: str = CATALOG,
         key: list[str] = typer.Option([], "--key-column", help="key column(s); default: the delete ledger's"),
         limit: int = LIMIT) -> None:
    """Rows added, removed and changed (cell by cell) between two versions, by key."""
    from lakecdc.audit.diff import diff_versions

    try:
        lake = open_table(table, fmt, warehouse, catalog)
        result = diff_versions(lake, v1, v2, keys=tuple(key) or None)
    except LakecdcError as error:
        fail(error)
        return
    console.print(f"[bold]{lake}[/bold]: {result.summary()}")
    for title, frame in (("added", result.added), ("removed", result.removed), ("changed", result.changed)):
        if not frame.empty:
            print_frame(frame, title, limit)
