"""The source database's own row-count estimate of a table, for snapshot progress (rows read / estimate).

The same figures the snapshot progress bars show: PostgreSQL's ``pg_class.reltuples`` (what
ANALYZE / autovacuum last counted) and MySQL/MariaDB's ``information_schema.tables.table_rows``
(InnoDB's sampled estimate). Both can be off, and are 0 or -1 for a table never analysed; the
metric then shows no estimate rather than a wrong one. Oracle and SQL Server have none here yet.

An estimate is looked up once per table, when its first snapshot row is sent; a failing lookup
is logged and never stops capture.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: (source block) -> estimated rows, or None
Estimator = Callable[[dict[str, Any]], int | None]


def estimator_for(connector: Any) -> Estimator | None:
    """The estimator for this connector's database, or None (no estimate for Oracle, SQL Server)."""
    config = getattr(connector, "config", None)
    module = type(connector).__module__
    if config is None:
        return None
    if module.startswith("lakecdc.capture.postgres"):
        return lambda source: _guarded(_postgres_estimate, config, source)
    if module.startswith("lakecdc.capture.mysql"):
        return lambda source: _guarded(_mysql_estimate, config, source)
    return None


def _guarded(estimate: Callable[[Any, dict[str, Any]], int | None], config: Any,
             source: dict[str, Any]) -> int | None:
    try:
        rows = estimate(config, source)
    except Exception as exc:  # noqa: BLE001 - progress is optional; capture goes on
        log.debug("no row estimate for %s.%s: %s", source.get("db"), source.get("table"), exc)
        return None
    return rows if rows is not None and rows > 0 else None


def _postgres_estimate(config: Any, source: dict[str, Any]) -> int | None:
    from lakecdc.capture.postgres import connection as pgconn

    conn = pgconn.connect(config)
    try:
        row = conn.execute(
            "SELECT c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s", (source.get("schema"), source.get("table"))).fetchone()
    finally:
        conn.close()
    return int(row[0]) if row else None


def _mysql_estimate(config: Any, source: dict[str, Any]) -> int | None:
    from lakecdc.capture.mysql import connection as myconn

    conn = myconn.connect(config)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_rows FROM information_schema.tables WHERE table_schema = %s "
                        "AND table_name = %s", (source.get("db"), source.get("table")))
            row = cur.fetchone()
    finally:
        conn.close()
    return int(row[0]) if row and row[0] is not None else None
