"""A committed transaction's buffered rows -> the changes to emit, in redo order.

DML rows are parsed (``dml_parser``); a row that cannot be parsed follows
``event.processing.failure.handling.mode`` (fail: stop naming table, SCN and transaction; warn: log
and skip; skip/ignore: skip). LOB locator and LOB write rows (``lob``) are assembled and merged into
the latest change of the same row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lakecdc.capture.oracle.errors import DmlParseError
from lakecdc.capture.oracle.logminer import query as q
from lakecdc.capture.oracle.logminer.dml_parser import RedoValue, parse_dml
from lakecdc.capture.oracle.logminer.lob import LobLocator, parse_lob_write, parse_select_lob_locator
from lakecdc.capture.oracle.logminer.query import OP_LOB_WRITE, OP_SELECT_LOB_LOCATOR

log = logging.getLogger(__name__)

OPS = {q.OP_INSERT: "c", q.OP_UPDATE: "u", q.OP_DELETE: "d", q.OP_DDL: "t"}


@dataclass
class Change:
    row: dict[str, Any]  # the V$LOGMNR_CONTENTS row (SCN, owner, table, user, ...)
    op: str  # c, u, d or t
    old: dict[str, RedoValue]
    new: dict[str, RedoValue]


def transaction_changes(xid: str, events: list[dict[str, Any]], failure_mode: str) -> list[Change]:
    changes: list[Change] = []
    by_row: dict[tuple[str, str, Any], Change] = {}
    locator: LobLocator | None = None
    locator_row: dict[str, Any] | None = None

    def finish_lob() -> None:
        if locator is None or locator_row is None:
            return
        key = (locator.schema, locator.table, locator.row_id)
        target = by_row.get(key) if locator.row_id else None
        if target is not None and target.op in ("c", "u"):
            target.new[locator.column] = locator.value()
        else:  # a LOB written alone: an update of that row
            changes.append(Change(locator_row, "u", dict(locator.where),
                                  {**locator.where, locator.column: locator.value()}))

    for ev in events:
        code = int(ev["OPERATION_CODE"])
        if code == OP_SELECT_LOB_LOCATOR:
            finish_lob()
            locator, locator_row = _guard(lambda: parse_select_lob_locator(ev["SQL_REDO"], ev.get("ROW_ID")),
                                          ev, xid, failure_mode), ev
            continue
        if code == OP_LOB_WRITE:
            written = _guard(lambda: parse_lob_write(ev["SQL_REDO"]), ev, xid, failure_mode)
            if locator is not None and written is not None:
                locator.chunks.append(written)
            continue
        finish_lob()
        locator = locator_row = None
        op = OPS[code]
        if op == "t":
            changes.append(Change(ev, op, {}, {}))
            continue
        parsed = _guard(lambda: parse_dml(ev["SQL_REDO"]), ev, xid, failure_mode)
        if parsed is None:
            continue
        change = Change(ev, op, parsed.old, parsed.new)
        changes.append(change)
        by_row[(ev["SEG_OWNER"], ev["TABLE_NAME"], ev.get("ROW_ID"))] = change
    finish_lob()
    return changes


def _guard(parse: Any, ev: dict[str, Any], xid: str, mode: str) -> Any:
    try:
        return parse()
    except DmlParseError as exc:
        where = f"table {ev['SEG_OWNER']}.{ev['TABLE_NAME']}, SCN {ev['SCN']}, transaction {xid}"
        if mode == "fail":
            raise DmlParseError(f"{exc} ({where}; event.processing.failure.handling.mode=fail)") from exc
        if mode == "warn":
            log.warning("skipping a change that cannot be parsed (%s): %s", where, exc)
        return None
