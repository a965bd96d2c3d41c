"""Additional conditions of blocking snapshots (``execute-snapshot`` with ``"type": "blocking"``),
shared by the connectors. As in Debezium (``RelationalSnapshotChangeEventSource.getBlockingSnapshottingTask``):

- a condition's ``filter`` is a full ``SELECT`` statement that replaces the table's snapshot query,
  like ``snapshot.select.statement.overrides`` (an incremental snapshot's filter is a WHERE fragment
  instead); it takes precedence over a configured override of the same table (lakecdc applies
  configured overrides to the other tables of a blocking snapshot; Debezium's blocking snapshot
  uses only the signal's statements);
- its ``data-collection`` names one table, not a regex: ``schema.table`` (MySQL ``db.table``), or
  with the database first for SQL Server and Oracle (``db.schema.table``); compared exactly, as
  Debezium compares table ids;
- the older ``additional-condition`` string (a WHERE fragment for every table) is not applied: its
  text is not a SELECT statement, and Debezium no longer reads it.

A statement the database refuses (bad syntax, unknown column) fails the whole snapshot with
:class:`BlockingSnapshotError`, which names the table and the statement: none of its rows is
emitted and streaming resumes after the signal. Debezium resumes streaming too, but it has already
sent the rows of the tables read before the failing one; lakecdc emits a blocking snapshot only
whole, so its ``first``/``last`` markers stay true.
"""

from __future__ import annotations

import logging

from lakecdc.capture.incremental import additional_conditions
from lakecdc.capture.signals import Signal, parse_table_id
from lakecdc.errors import ConfigError

log = logging.getLogger(__name__)

HINT = "a blocking snapshot's filter is a full SELECT statement, as in snapshot.select.statement.overrides"


class BlockingSnapshotError(Exception):
    """The database refused a blocking snapshot's SELECT from the signal's additional conditions.
    Connection losses are not wrapped: the connector reconnects on them as before."""

    def __init__(self, table: str, statement: str, reason: str) -> None:
        super().__init__(f"blocking snapshot of table '{table}' failed: the database refused the additional "
                         f"condition's filter {statement!r}: {_first_line(reason)} ({HINT})")
        self.table = table
        self.statement = statement


def _first_line(reason: str) -> str:
    """The database's message without PostgreSQL's LINE/caret detail (it shows lakecdc's wrapping)."""
    lines = reason.strip().splitlines()
    return lines[0] if lines else reason


def select_key(table: str) -> str:
    """``schema.table`` of a captured table id: the key of the connectors' select overrides."""
    parsed = parse_table_id(table)
    return f"{parsed.schema}.{parsed.table}"


def blocking_selects(signal: Signal, tables: list[str]) -> dict[str, str]:
    """The SELECT statements of ``tables`` (the captured ids the snapshot reads) that the signal's
    additional conditions give, keyed by :func:`select_key`."""
    selects: dict[str, str] = {}
    for condition in additional_conditions(signal.data):
        if condition.collection is None:
            log.warning("signal '%s': additional-condition (a WHERE fragment for incremental snapshots) is not "
                        "applied to a blocking snapshot; use additional-conditions: %s", signal.id, HINT)
            continue
        name = _unquoted(condition.collection)
        # Debezium looks the table up with and without its catalog (SQL Server's and Oracle's database)
        matched = [t for t in tables if name in (t, select_key(t))]
        if not matched:
            log.warning("signal '%s': additional condition for '%s' names no table of this blocking snapshot %s; "
                        "ignored (data-collection is a table name here, not a regex)", signal.id,
                        condition.collection, tables)
        for table in matched:
            selects[select_key(table)] = condition.filter
    return selects


def _unquoted(name: str) -> str:
    """``"public"."My.Table"`` -> ``public.My.Table`` as the captured ids are written."""
    if '"' not in name:
        return name
    try:
        table = parse_table_id(name)
    except ConfigError:
        return name
    return f"{table.schema}.{table.table}"
