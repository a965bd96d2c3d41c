"""The source database's own row-count estimate of a table, for snapshot progress (rows read / estimate).

The same figures the snapshot progress bars show: PostgreSQL's ``pg_class.reltuples`` (what
ANALYZE / autovacuum last counted) and MySQL/MariaDB's ``information_schema.tables.table_rows``
(InnoDB's sampled estimate). Both can be off, and are 0 or -1 for a table never analysed; the
metric then shows no estimate rather than a wrong one. Oracle and SQL Server have none here yet.

The estimates of every table are read in one query when the first snapshot row is sent, and read
again only for a table not seen then (one created since); a failing lookup is logged and never
stops capture.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: (source block) -> estimated rows, or None
Estimator = Callable[[dict[str, Any]], int | None]
#: (schema or database, table) -> estimated rows
Estimates = dict[tuple[str, str], int]


def estimator_for(connector: Any) -> Estimator | None:
    """The estimator for this connector's database, or None (no estimate for Oracle, SQL Server)."""
    config = getattr(connector, "config", None)
    module = type(connector).__module__
    if config is None:
        return None
    if module.startswith("lakecdc.capture.postgres"):
        return CachedEstimates(lambda: _postgres_estimates(config), lambda s: (s.get("schema"), s.get("table")))
    if module.startswith("lakecdc.capture.mysql"):
        return CachedEstimates(lambda: _mysql_estimates(config), lambda s: (s.get("db"), s.get("table")))
    return None


class CachedEstimates:
    """Every table's estimate from one query, refreshed when a table is missing."""

    def __init__(self, fetch: Callable[[], Estimates], key_of: Callable[[dict[str, Any]], Any]) -> None:
        self._fetch, self._key_of = fetch, key_of
        self._rows: Estimates | None = None

    def __call__(self, source: dict[str, Any]) -> int | None:
        key = self._key_of(source)
        if self._rows is None or key not in self._rows:
            try:
                self._rows = self._fetch()
            except Exception as exc:  # noqa: BLE001 - progress is optional; capture goes on
                log.debug("no row estimates for snapshot progress: %s", exc)
                return None
        rows = self._rows.get(key)
        return rows if rows is not None and rows > 0 else None  # never analysed: 0 or -1


def _postgres_estimates(config: Any) -> Estimates:
    from lakecdc.capture.postgres import connection as pgconn

    conn = pgconn.connect(config)
    try:
        rows = conn.execute("SELECT n.nspname, c.relname, c.reltuples::bigint FROM pg_class c "
                            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p')").fetchall()
    finally:
        conn.close()
    return {(schema, table): int(n) for schema, table, n in rows}


def _mysql_estimates(config: Any) -> Estimates:
    from lakecdc.capture.mysql import connection as myconn

    conn = myconn.connect(config)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_schema, table_name, table_rows FROM information_schema.tables "
                        "WHERE table_type = 'BASE TABLE'")
            rows = cur.fetchall()
    finally:
        conn.close()
    return {(str(db), str(table)): int(n) for db, table, n in rows if n is not None}
