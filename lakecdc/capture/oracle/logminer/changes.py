"""A committed transaction's buffered rows -> the changes to emit, in redo order.

DML rows are parsed (``dml_parser``); a row that cannot be parsed follows
``event.processing.failure.handling.mode`` (fail: stop naming table, SCN and transaction; warn: log
and skip; skip/ignore: skip). LOB locator and LOB write rows (``lob``) are assembled and merged into
the latest change of the same row. Changes are produced lazily, as the rows are read.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Union

from lakecdc.capture.oracle.errors import DmlParseError
from lakecdc.capture.oracle.logminer import query as q
from lakecdc.capture.oracle.logminer.dml_parser import RedoValue, parse_dml
from lakecdc.capture.oracle.logminer.lob import LobLocator, parse_lob_write, parse_select_lob_locator
from lakecdc.capture.oracle.logminer.query import OP_LOB_WRITE, OP_SELECT_LOB_LOCATOR

log = logging.getLogger(__name__)

OPS = {q.OP_INSERT: "c", q.OP_UPDATE: "u", q.OP_DELETE: "d", q.OP_DDL: "t"}
#: parsed changes held back for a LOB merge (bounds the memory of emitting a large transaction)
LOB_MERGE_WINDOW = 1000
#: a column's value in a change: as SQL_REDO spells it, or a CLOB/BLOB assembled from LOB_WRITE chunks
ColumnValue = Union[RedoValue, bytes]


@dataclass
class Change:
    row: dict[str, Any]  # the V$LOGMNR_CONTENTS row (SCN, owner, table, user, ...)
    op: str  # c, u, d or t
    old: dict[str, ColumnValue]
    new: dict[str, ColumnValue]


def transaction_changes(xid: str, events: Iterable[dict[str, Any]], failure_mode: str,
                        lob_window: int = LOB_MERGE_WINDOW) -> Iterator[Change]:
    """The changes of a committed transaction's rows, produced as the rows are read (a spilled
    transaction is never held whole). A change is held back while ``lob_window`` newer changes have
    not followed it, so that LOB writes after its DML can still be merged into it; a LOB write for
    an older change becomes an update of that row (LogMiner writes a row's LOB chunks right after
    its DML, so this is the rare case)."""
    pending: deque[Change] = deque()
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
            pending.append(Change(locator_row, "u", dict(locator.where),
                                  {**locator.where, locator.column: locator.value()}))

    def release(keep: int) -> Iterator[Change]:
        while len(pending) > keep:
            change = pending.popleft()
            key = (change.row["SEG_OWNER"], change.row["TABLE_NAME"], change.row.get("ROW_ID"))
            if by_row.get(key) is change:
                del by_row[key]
            yield change

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
        yield from release(lob_window)
        op = OPS[code]
        if op == "t":
            pending.append(Change(ev, op, {}, {}))
            continue
        parsed = _guard(lambda: parse_dml(ev["SQL_REDO"]), ev, xid, failure_mode)
        if parsed is None:
            continue
        change = Change(ev, op, parsed.old, parsed.new)
        pending.append(change)
        by_row[(ev["SEG_OWNER"], ev["TABLE_NAME"], ev.get("ROW_ID"))] = change
    finish_lob()
    yield from release(0)


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
