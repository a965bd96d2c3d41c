"""LOB changes LogMiner writes apart from the DML (``lob.enabled=true``).

A CLOB/BLOB value that does not fit in the row is written after the INSERT or UPDATE (which then
carries ``EMPTY_CLOB()`` or nothing for that column) as a SELECT_LOB_LOCATOR row naming the column
and the row, then one LOB_WRITE row per chunk::

    op 9   DECLARE loc_c CLOB; buf_c VARCHAR2(6156); ... BEGIN
             select "NOTE" into loc_c from "APP"."T" where "ID" = '1' and "NAME" = 'a' for update;
    op 10  buf_c := 'first chunk ...';  dbms_lob.write(loc_c, 4000, 1, buf_c);
    op 10  buf_c := '... rest';  dbms_lob.write(loc_c, 1200, 4001, buf_c);
    op 10  buf_b := HEXTORAW('0a0b');  dbms_lob.write(loc_b, 2, 1, buf_b);      (BLOB)

The chunks are assembled at their offsets (1-based, in characters or bytes) and the value is put
into the transaction's latest change of the same row (same ROW_ID), as Debezium merges them; a LOB
written with no change of its row in the transaction becomes an update of that row. LOB_ERASE and
LOB_TRIM are not read: the column then carries the unavailable-value placeholder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lakecdc.capture.oracle.errors import DmlParseError
from lakecdc.capture.oracle.logminer.dml_parser import RedoCall, RedoValue, _conditions, _Scanner, _table

_SELECT = re.compile(r"\bselect\s", re.IGNORECASE)
_WRITE = re.compile(r"buf_(c|b|nc)\s*:=\s*(?P<value>.*);\s*dbms_lob\.write\(\s*loc_\w+\s*,\s*(?P<length>\d+)\s*,"
                    r"\s*(?P<offset>\d+)\s*,\s*buf_\w+\s*\)", re.IGNORECASE | re.DOTALL)


@dataclass
class LobLocator:
    """The target of the LOB writes that follow (a SELECT_LOB_LOCATOR row)."""

    schema: str
    table: str
    column: str
    binary: bool
    where: dict[str, RedoValue]
    row_id: str | None = None
    chunks: list[tuple[int, str | bytes]] = field(default_factory=list)

    def value(self) -> str | bytes:
        """The chunks laid out at their offsets (later writes win where they overlap)."""
        out: bytearray | list[str] = bytearray() if self.binary else []
        for offset, data in self.chunks:
            start = offset - 1
            if self.binary:
                assert isinstance(out, bytearray) and isinstance(data, bytes)
                if len(out) < start:
                    out.extend(b"\x00" * (start - len(out)))
                out[start:start + len(data)] = data
            else:
                assert isinstance(out, list) and isinstance(data, str)
                if len(out) < start:
                    out.extend(" " * (start - len(out)))
                out[start:start + len(data)] = list(data)
        return bytes(out) if self.binary else "".join(out)  # type: ignore[arg-type]


def parse_select_lob_locator(sql: str, row_id: str | None = None) -> LobLocator:
    found = _SELECT.search(sql)
    if found is None:
        raise DmlParseError(f"SELECT_LOB_LOCATOR without a select: {sql[:300]}")
    s = _Scanner(sql)
    s.pos = found.start()
    s.word("select")
    column = s.identifier()
    s.word("into")
    locator = s.identifier().lower()
    s.word("from")
    schema, table = _table(s)
    where: dict[str, RedoValue] = {}
    s.word("where")
    _conditions(s, where)
    s.word("for")
    s.word("update")
    return LobLocator(schema, table, column, locator == "loc_b", where, row_id)


def parse_lob_write(sql: str) -> tuple[int, str | bytes]:
    """``(offset, data)`` of one LOB_WRITE row."""
    m = _WRITE.search(sql)
    if m is None:
        raise DmlParseError(f"cannot parse LOB_WRITE: {sql[:300]}")
    s = _Scanner(m.group("value").strip())
    value = s.value()
    offset = int(m.group("offset"))
    if isinstance(value, RedoCall) and value.name == "HEXTORAW":
        data: str | bytes = bytes.fromhex(str(value.args[0]))
    elif isinstance(value, str):
        data = value
    else:
        raise DmlParseError(f"unexpected LOB_WRITE buffer {m.group('value')!r}")
    # the stated length counts Oracle characters (UTF-16 units for a CLOB); the literal is what counts
    return offset, data
