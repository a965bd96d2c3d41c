"""``lakecdc audit versions | as-of | history | scd2 | diff``: time-travel audits of bronze and silver tables."""

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
        "  lakecdc audit versions silver.customers --config conf/ingest.yaml\n\n"
        "  lakecdc audit as-of silver.accounts silver.ledger -c conf/ingest.yaml --position 0/16B3748\n\n"
        "  lakecdc audit consistent -c conf/ingest.yaml --sql\n\n"
        "  lakecdc audit history bronze.customers -w ./lake --key id=1001\n\n"
        "  lakecdc audit scd2 silver.customers -w ./lake --key id=1001\n\n"
        "  lakecdc audit diff silver.customers -w ./lake 3 7"
    ),
)

FORMAT = typer.Option(None, "--format", "-f", help="iceberg (read through Spark) or delta (delta-rs); default: "
                                                   "what --config says for the table, else delta.")
WAREHOUSE = typer.Option(None, "--warehouse", "-w", help="Warehouse directory (Delta tables, or the Iceberg "
                                                          "hadoop/jdbc catalog's warehouse); default: --config's.")
CATALOG = typer.Option(None, "--catalog",
                       help="Iceberg catalog kind: hadoop or jdbc (default: --config's, else hadoop).")
CONFIG = typer.Option(None, "--config", "-c", exists=True, dir_okay=False,
                      help="The ingest configuration: tables' formats, warehouse, catalog and source notation.")
LIMIT = typer.Option(50, "--limit", "-n", help="Rows to print at most.")


def register(app: typer.Typer) -> None:
    app.add_typer(audit_app, name="audit")


def open_table(name: str, fmt: str | None, warehouse: Path | None, catalog: str | None = None,
               config: Path | None = None) -> LakeTable:
    """The table handle; Iceberg starts a local Spark session on the warehouse."""
    return AuditLake.of(config, fmt, warehouse, catalog).table(name)


class AuditLake:
    """Where the tables are and how to read them: from the ingest configuration (``--config``)
    and/or the explicit options, which win."""

    def __init__(self, warehouse: Path, formats: dict[str, str], default_format: str, catalog_kind: str,
                 catalog_name: str, connector: str | None, log_table: str,
                 bronze_names: dict[str, str] | None = None) -> None:
        self.bronze_names = bronze_names or {}  # silver table -> its bronze change log
        self.warehouse = warehouse
        self.formats = formats
        self.default_format = default_format
        self.catalog_kind = catalog_kind
        self.catalog_name = catalog_name
        self.connector = connector
        self.log_table = log_table

    @classmethod
    def of(cls, config: Path | None, fmt: str | None, warehouse: Path | None, catalog: str | None) -> AuditLake:
        from lakecdc.audit.tables import AuditError
        from lakecdc.ingest.consistency import consistency_table_name

        log_table = consistency_table_name("lakecdc.dead_letters")
        if config is None:
            if warehouse is None:
                raise AuditError("give --config (the ingest configuration) or --warehouse")
            return cls(warehouse, {}, fmt or "delta", catalog or "hadoop", "lake", None, log_table)
        from lakecdc.config.ingest import load_ingest_config
        from lakecdc.ingest.job_state import load_state
        from lakecdc.lake.naming import TableNamer

        cfg = load_ingest_config(config)
        state = load_state(cfg.progress_dir)
        namer = TableNamer(cfg)
        formats: dict[str, str] = {}
        bronze_names: dict[str, str] = {}
        # Topics the job has seen (state.json), and those the configuration maps (also without a state).
        topics = {**{t: () for t in cfg.table_overrides()}, **{t: tuple(k) for t, k in state.table_keys.items()}}
        for topic, keys in topics.items():
            target = namer.target(topic, key_columns=keys)
            formats[target.bronze_table] = formats[target.silver_table] = target.format
            formats[target.ledger_table] = target.format
            bronze_names[target.silver_table] = target.bronze_table
        formats[log_table] = cfg.table_format
        return cls(warehouse or Path(cfg.warehouse), formats, fmt or cfg.table_format, catalog or cfg.catalog_type,
                   cfg.catalog, state.connector, log_table, bronze_names)

    def bronze_of(self, tables: list[LakeTable]) -> dict[str, LakeTable]:
        """The bronze change log of each silver table the configuration names (replays read it)."""
        return {t.name: self.table(self.bronze_names[t.name]) for t in tables if t.name in self.bronze_names}

    def table(self, name: str) -> LakeTable:
        from lakecdc.audit.tables import LakeTable

        fmt = self.formats.get(name, self.default_format)
        if fmt == "iceberg":
            from lakecdc.spark.session import spark_session

            session = spark_session(self.warehouse, catalog=self.catalog_kind,  # type: ignore[arg-type]
                                    app_name="lakecdc-audit", catalog_name=self.catalog_name)
            return LakeTable.iceberg(session, name, self.catalog_name)
        return LakeTable.open(name, fmt, warehouse=self.warehouse)


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


@audit_app.command("versions", epilog="[bold]Examples[/bold]\n\n"
                   "  lakecdc audit versions silver.customers --format delta --warehouse ./lake\n\n"
                   "  lakecdc audit versions silver.customers -f iceberg -w ./lake --plot versions.png")
def versions(table: str = typer.Argument(..., help="schema.table, e.g. silver.customers"),
             fmt: str | None = FORMAT, warehouse: Path | None = WAREHOUSE, catalog: str | None = CATALOG,
             config: Path | None = CONFIG,
             wide: bool = typer.Option(False, "--wide", help="Also show source time and Kafka progress."),
             plot: Path | None = typer.Option(
                 None, "--plot",
                 help="Also save a PNG of rows and changes per version (and PLOT-lag.png: source-to-table lag).")
             ) -> None:
    """Every commit with the source position it is complete through, its source time, batch id and Kafka progress."""
    from lakecdc.audit.notation import format_position
    from lakecdc.audit.versions import table_versions

    try:
        lake_info = AuditLake.of(config, fmt, warehouse, catalog)
        lake = lake_info.table(table)
        found = table_versions(lake)
    except LakecdcError as error:
        fail(error)
        return
    out = Table(title=f"{lake}: {len(found)} versions", title_justify="left")
    columns = ["version", "committed (UTC)", "op", "complete through", "batch", "+rows", "-rows"]
    if wide:
        columns += ["source time", "Kafka progress"]
    for column in columns:
        # ids and positions are copied into other commands: never wrap them
        out.add_column(column, overflow="fold", no_wrap=column in ("version", "complete through"),
                       justify="right" if column in ("batch", "+rows", "-rows") else "left")
    for v in found:
        connector = v.connector or lake_info.connector
        row = [str(v.version), v.committed_at.strftime("%m-%d %H:%M:%S"), v.operation[:8],
               format_position(connector, v.complete_through or v.source_position),
               "-" if v.batch_id is None else str(v.batch_id), str(v.rows_written or 0), str(v.rows_removed or 0)]
        if wide:
            row += [v.source_time.strftime("%H:%M:%S.%f")[:-3] if v.source_time else "-",
                    ", ".join(f"{t}[{p}]@{o}" for (t, p), o in sorted(v.kafka_progress.items())) or "-"]
        out.add_row(*row)
    console.print(out)
    if plot is not None:
        from lakecdc.audit.plots import plot_lag, plot_versions

        first = plot_versions(found, plot, title=str(lake))
        second = plot_lag(found, plot.with_name(plot.stem + "-lag.png"), title=f"{lake}: source-to-table lag")
        console.print(f"plots saved: {first}, {second}")


@audit_app.command("as-of", epilog="[bold]Examples[/bold]\n\n"
                   "  lakecdc audit as-of silver.customers -c conf/ingest.yaml --position 0/16B3748\n\n"
                   "  lakecdc audit as-of silver.accounts silver.ledger -c conf/ingest.yaml"
                   "   (newest consistent point)\n\n"
                   "  lakecdc audit as-of silver.orders -w ./lake --position mysql-bin.000003:154")
def as_of(tables: list[str] = typer.Argument(..., help="one or more schema.table: several are read together"),
          fmt: str | None = FORMAT, warehouse: Path | None = WAREHOUSE, catalog: str | None = CATALOG,
          config: Path | None = CONFIG,
          version: int | None = typer.Option(None, "--version",
                                             help="Iceberg snapshot id or Delta version (one table)."),
          timestamp: str | None = typer.Option(None, "--timestamp", help="ISO time, e.g. 2026-11-22T10:00:00+00:00"),
          position: str | None = typer.Option(None, "--position", help="Source position in its notation: PostgreSQL "
                                              "LSN 0/16B3748, MySQL file:pos, SQL Server LSN, Oracle SCN."),
          limit: int = LIMIT) -> None:
    """The tables as they were at a source position (every transaction committed at or before it, in
    every table), a version or a time. Several tables without a position: the newest consistency point."""
    from lakecdc.audit.as_of import read_as_of_with_version
    from lakecdc.audit.consistency import describe_point, latest_point, read_consistent
    from lakecdc.audit.notation import format_position

    try:
        lake = AuditLake.of(config, fmt, warehouse, catalog)
        handles = [lake.table(t) for t in tables]
        if len(tables) > 1 or (position is not None and version is None and timestamp is None):
            if version is not None or timestamp is not None:
                raise typer.BadParameter("several tables are read together at a --position (or the newest "
                                         "consistency point), not at one --version or --timestamp")
            log = lake.table(lake.log_table)
            reads = read_consistent(handles, position, log, lake.bronze_of(handles))
            point = latest_point(log, [h.name for h in handles]) if position is None else None
            heading = describe_point(point) if point else f"as of {position}"
        else:
            reads = {tables[0]: read_as_of_with_version(handles[0], version=version, timestamp=timestamp)}
            heading = ""
    except LakecdcError as error:
        fail(error)
        return
    if heading:
        console.print(f"[bold]{heading}[/bold]", soft_wrap=True)
    for name, read in reads.items():
        v = read.version
        connector = (v.connector if v else None) or lake.connector
        where = (f"version {v.version} (complete through "
                 f"{format_position(connector, v.complete_through or v.source_position)})"
                 if v else "before its first version")
        if read.replayed:
            where += f" + {read.replayed} bronze events up to {format_position(connector, read.position)}"
        console.print(f"[bold]{name}[/bold]: {where}", soft_wrap=True)  # ids stay on one line
        print_frame(read.rows, "rows", limit)


@audit_app.command("consistent", epilog="[bold]Examples[/bold]\n\n  lakecdc audit consistent -c conf/ingest.yaml\n\n"
                                        "  lakecdc audit consistent -c conf/ingest.yaml --sql > consistent.sql")
def consistent(config: Path | None = CONFIG, warehouse: Path | None = WAREHOUSE, fmt: str | None = FORMAT,
               catalog: str | None = CATALOG,
               sql: bool = typer.Option(False, "--sql",
                                        help="Print Spark/Databricks SQL reading the tables at the point."),
               views: bool = typer.Option(False, "--views",
                                          help="With --sql: CREATE TEMP VIEW <table>_consistent.")) -> None:
    """The newest consistency point the ingest job published: the source position every table is
    complete through, and the version of each table that holds exactly it (PostgreSQL without
    transaction metadata: flagged "Not exact", and no --sql)."""
    from lakecdc.audit.consistency import beyond_point, consistent_sql, describe_point, latest_point, not_exact_reason
    from lakecdc.audit.tables import AuditError

    try:
        lake = AuditLake.of(config, fmt, warehouse, catalog)
        point = latest_point(lake.table(lake.log_table))
        if point is None:
            raise LakecdcError(f"no consistency point in {lake.log_table} yet (the ingest job publishes one per batch)")
        handles = [lake.table(name) for name in sorted(point.versions)]
        inexact = bool(beyond_point(point, handles, dict(lake.bronze_of(handles))))
        if sql and inexact:
            raise AuditError(f"no SQL for this point: {not_exact_reason(point)}")
        if sql:
            def qualify(name: str) -> str:
                if lake.formats.get(name, lake.default_format) == "iceberg":
                    return f"{lake.catalog_name}.{name}"
                return f"delta.`{lake.table(name).uri}`"
            qualified = {name: qualify(name) for name in sorted(point.versions)}
            typer.echo("\n".join(consistent_sql(point, qualified, views)))
            return
    except LakecdcError as error:
        fail(error)
        return
    out = Table(title=describe_point(point), title_justify="left")
    out.add_column("table", no_wrap=True)
    out.add_column("version", justify="right", no_wrap=True)
    for name, version in sorted(point.versions.items()):
        out.add_row(name, str(version))
    for name in point.stopped:
        out.add_row(f"{name} (stopped)", "-")
    console.print(out)
    if inexact:
        console.print(f"[yellow]Not exact:[/yellow] {not_exact_reason(point)}", soft_wrap=True)


@audit_app.command("history", epilog="[bold]Examples[/bold]\n\n"
                                      "  lakecdc audit history bronze.customers -w ./lake --key id=1001")
def history(table: str = typer.Argument(..., help="the BRONZE table, e.g. bronze.customers"),
            key: list[str] = typer.Option(..., "--key", "-k", help="column=value; repeat for compound keys."),
            fmt: str | None = FORMAT, warehouse: Path | None = WAREHOUSE, catalog: str | None = CATALOG,
            config: Path | None = CONFIG, limit: int = LIMIT) -> None:
    """Every change of one key (and the truncates after it appeared), in source order, from bronze."""
    from lakecdc.audit.history import row_history

    try:
        lake = open_table(table, fmt, warehouse, catalog, config)
        df = row_history(lake, parse_key(key))
    except LakecdcError as error:
        fail(error)
        return
    print_frame(df, f"history of {parse_key(key)} in {lake}", limit)


@audit_app.command("scd2", epilog="[bold]Examples[/bold]\n\n"
                                   "  lakecdc audit scd2 silver.customers -w ./lake --key id=1001\n\n"
                                   "  lakecdc audit scd2 silver.customers -c conf/ingest.yaml --position 0/16B3748")
def scd2(table: str = typer.Argument(..., help="the SILVER table whose history (history: scd2) to read"),
         key: list[str] = typer.Option([], "--key", "-k", help="column=value (repeat for compound keys): that "
                                                                "key's versions"),
         position: str | None = typer.Option(None, "--position", "-p", help="the table as of this source position "
                                                                             "(the source's notation)"),
         at: str | None = typer.Option(None, "--time", "-t", help="the table as of this source commit time (ISO 8601)"),
         fmt: str | None = FORMAT, warehouse: Path | None = WAREHOUSE, catalog: str | None = CATALOG,
         config: Path | None = CONFIG, limit: int = LIMIT) -> None:
    """From the SCD2 history table: one key's versions (--key), or the table as of a source position
    (--position) or source commit time (--time)."""
    from lakecdc.audit.scd2 import history_as_of, history_of, key_versions
    from lakecdc.audit.versions import table_versions

    if sum(bool(x) for x in (key, position, at)) != 1:
        fail(LakecdcError("give exactly one of --key, --position, --time"))
        return
    try:
        lake = AuditLake.of(config, fmt, warehouse, catalog)
        history = history_of(lake.table(table))
        if key:
            df, title = key_versions(history, parse_key(key)), f"versions of {parse_key(key)} in {history}"
        else:
            commits = table_versions(history)
            connector = lake.connector or next((v.connector for v in reversed(commits) if v.connector), None)
            df = history_as_of(history, source_position=position, timestamp=at, connector=connector)
            title = f"{table} as of {'position ' + position if position else at}, from {history}"
    except LakecdcError as error:
        fail(error)
        return
    print_frame(df, title, limit)


@audit_app.command("diff", epilog="[bold]Examples[/bold]\n\n  lakecdc audit diff silver.customers -w ./lake 3 7")
def diff(table: str = typer.Argument(..., help="the SILVER table"),
         v1: int = typer.Argument(..., help="older version"), v2: int = typer.Argument(..., help="newer version"),
         fmt: str | None = FORMAT, warehouse: Path | None = WAREHOUSE, catalog: str | None = CATALOG,
         config: Path | None = CONFIG,
         key: list[str] = typer.Option([], "--key-column", help="key column(s); default: the delete ledger's"),
         limit: int = LIMIT) -> None:
    """Rows added, removed and changed (cell by cell) between two versions, by key."""
    from lakecdc.audit.diff import diff_versions

    try:
        lake = open_table(table, fmt, warehouse, catalog, config)
        result = diff_versions(lake, v1, v2, keys=tuple(key) or None)
    except LakecdcError as error:
        fail(error)
        return
    console.print(f"[bold]{lake}[/bold]: {result.summary()}")
    for title, frame in (("added", result.added), ("removed", result.removed), ("changed", result.changed)):
        if not frame.empty:
            print_frame(frame, title, limit)
