"""``run_maintenance(config, ...)``: maintain the tables of an ingest configuration's warehouse.

The same configuration as ``lakecdc ingest``: Iceberg tables are those of its Spark catalog
(``catalog``, ``catalog.type`` over ``warehouse``), Delta tables those under ``warehouse``.
The formats looked at are the ones the configuration writes (``table.format`` and the
``table.mapping`` overrides). Tables are maintained one after another: each format's operations
already use the cores, and a small machine has two.

It may run while an ingest job commits to the same tables: a compaction and a MERGE committing
at the same moment conflict, the loser fails without changing the table and is redone from the
new state (``lakecdc.writers.conflicts``: the job's apply, or this table's maintenance). A table
whose maintenance keeps losing is reported by name after the others are done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lakecdc.config.ingest import IngestConfig, load_ingest_config
from lakecdc.errors import ConfigError, TransientError
from lakecdc.maintenance.options import MaintenanceOptions
from lakecdc.maintenance.result import MaintenanceResult
from lakecdc.writers.conflicts import CommitConflictError, retry_on_conflict

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class Maintainer(Protocol):
    format: str

    def tables(self) -> list[str]: ...

    def exists(self, name: str) -> bool: ...

    def maintain(self, name: str, options: MaintenanceOptions) -> MaintenanceResult: ...


def config_formats(cfg: IngestConfig) -> list[str]:
    """The table formats the configuration writes, ``iceberg`` first."""
    formats = {cfg.table_format} | {o.format for o in cfg.table_overrides().values() if o.format}
    return sorted(formats, key=lambda f: f != "iceberg")


def maintainer_for(cfg: IngestConfig, spark: Callable[[], SparkSession]) -> Callable[[str], Maintainer]:
    """Table format -> its maintainer, made on first use (Spark is started only for Iceberg)."""
    made: dict[str, Maintainer] = {}

    def get(table_format: str) -> Maintainer:
        if table_format not in made:
            if table_format == "iceberg":
                from lakecdc.maintenance.iceberg import IcebergMaintainer
                made[table_format] = IcebergMaintainer(spark(), cfg.catalog)
            else:
                from lakecdc.maintenance.delta import DeltaMaintainer
                made[table_format] = DeltaMaintainer(cfg.warehouse)
        return made[table_format]
    return get


def maintainers(cfg: IngestConfig, spark: Callable[[], SparkSession]) -> list[Maintainer]:
    """One maintainer per format the configuration writes."""
    get = maintainer_for(cfg, spark)
    return [get(table_format) for table_format in config_formats(cfg)]


class MaintenanceConflictError(TransientError):
    """Some tables' maintenance kept conflicting with concurrent commits (an ingest job writing
    them); ``results`` holds what was done to the others."""

    def __init__(self, failures: list[CommitConflictError], results: list[MaintenanceResult]) -> None:
        super().__init__("maintenance of " + "; ".join(str(f) for f in failures)
                         + " -- run it again (the tables are unchanged by the failed attempts)")
        self.tables = [f.table for f in failures]
        self.results = results


def maintain_one(maintainer: Maintainer, name: str, options: MaintenanceOptions) -> MaintenanceResult:
    """One table's maintenance, redone while it conflicts with a concurrent commit (``CommitConflictError``)."""
    return retry_on_conflict(name, lambda: maintainer.maintain(name, options), "maintenance")


def maintain_tables(chosen: list[Maintainer], options: MaintenanceOptions,
                    tables: Iterable[str] = ()) -> list[MaintenanceResult]:
    """Maintain ``tables`` (every lakecdc table when empty) with whichever maintainer holds each.

    A table that keeps conflicting does not stop the others: ``MaintenanceConflictError`` names it
    at the end."""
    wanted = list(dict.fromkeys(tables))
    results: list[MaintenanceResult] = []
    failures: list[CommitConflictError] = []
    for maintainer in chosen:
        names = [n for n in wanted if maintainer.exists(n)] if wanted else maintainer.tables()
        for name in names:
            try:
                result = maintain_one(maintainer, name, options)
            except CommitConflictError as error:
                log.error("%s", error)
                failures.append(error)
                continue
            log.info("%s", result.describe())
            results.append(result)
    missing = [n for n in wanted if n not in {r.table for r in results} | {f.table for f in failures}]
    if missing:
        raise ConfigError(f"no such {' or '.join(m.format for m in chosen)} table: {', '.join(missing)}", "table")
    if failures:
        raise MaintenanceConflictError(failures, results)
    return results


def run_maintenance(config: str | Path | IngestConfig, options: MaintenanceOptions | None = None,
                    tables: Iterable[str] = (), *, spark: SparkSession | None = None) -> list[MaintenanceResult]:
    """Compact and clean up the configuration's tables (module docstring); one result per table."""
    cfg = load_ingest_config(config)

    def session() -> SparkSession:
        if spark is not None:
            return spark
        from lakecdc.spark.session import ingest_session
        return ingest_session(cfg)

    return maintain_tables(maintainers(cfg, session), options or MaintenanceOptions(), tables)
