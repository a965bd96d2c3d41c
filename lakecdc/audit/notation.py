"""Source positions in the source's own notation, to and from the ``_seq`` space.

Auditors think in PostgreSQL LSNs (``0/1F43A98``), MySQL binlog coordinates (``mysql-bin.000003:154``),
SQL Server LSNs (``00000027:00000758:0005``) and Oracle SCNs (``289620``); lakecdc compares
positions as the four numbers of ``_seq`` (``lakecdc.events.positions``), where a transaction ranks
at its own commit (``lakecdc.ingest.ordering.rank_by_commit``). ``parse_position`` maps what an
auditor types to the highest ``_seq`` a change committed at or before it can have, so
"as of P" is "every ``_seq`` <= parse(P)"; ``format_position`` prints a recorded ``_seq`` as the
commit position it stands for, and parsing that text again gives a bound at or above it::

    parse_position("postgres", "0/5E7F3B8")  -> (99087288, MAX, MAX, MAX)
    format_position("postgres", (99092032, 99091912, 1, 0)) -> "0/5E80B40"

MySQL GTIDs name a transaction rather than a place; they are resolved to a place through the
tables' bronze change log (``lakecdc.audit.as_of``), not here.

PostgreSQL without transaction metadata: ``_seq[0]`` is Debezium's ``source.sequence[0]``, the
commit LSN of the transaction *before* the event's own, so a printed position is that commit: the
state as of it lacks the transaction the ``_seq`` came from, which commits later at an LSN no event
names until the next transaction arrives (``lakecdc.audit.replay.uncommitted_without_metadata``).
"""

from __future__ import annotations

import re
from typing import Any

from lakecdc.errors import LakecdcError
from lakecdc.events.position_text import (
    lsn_from_text,
    lsn_to_text,
    pack_seq,
    sqlserver_lsn_from_text,
    sqlserver_lsn_to_text,
)

Seq = tuple[int, ...]
MAX = (1 << 63) - 1  # the largest component of _seq (array<bigint>, never negative)
_PG_LSN = re.compile(r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")
_BINLOG = re.compile(r"^(?:(?P<file>[^:\s]*?\.)?(?P<index>\d+)):(?P<pos>\d+)$")
_SQLSERVER_LSN = re.compile(r"^[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{4}$")
_TUPLE = re.compile(r"^\d+(,\d+){0,3}$")
#: MySQL GTID (``uuid:23``) or MariaDB GTID (``0-1-100``): a transaction, resolved through bronze
GTID = re.compile(r"^([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}:\d+|\d+-\d+-\d+)$")
_CONNECTORS = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql",
               "sqlserver": "sqlserver", "oracle": "oracle"}
#: bits of the commit part at the top of the packed ``_seq`` (``lakecdc.events.positions``)
_PACKED_COMMIT_BITS = {"sqlserver": 80, "oracle": 64}


class PositionError(LakecdcError):
    """A position that does not read as one of the connector's notations."""


def connector_kind(connector: str | None) -> str | None:
    return _CONNECTORS.get(connector.lower()) if connector else None


def parse_position(connector: str | None, text: Any) -> Seq:
    """What an auditor typed -> the highest ``_seq`` committed at or before it (module docstring).

    Also accepted whatever the connector: a ``Position`` object, a tuple, and ``a,b,c,d`` text (a
    ``_seq`` as recorded; a shorter tuple is padded with MAX: ``(x,)`` covers every ``(x, ...)``).
    """
    if hasattr(text, "seq"):
        return tuple(int(v) for v in text.seq())
    if isinstance(text, (tuple, list)):
        return _padded(tuple(int(v) for v in text))
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise PositionError(f"source position {text!r} is not a position")
    kind = connector_kind(connector)
    value = str(text).strip()
    try:
        if kind == "postgres" or (kind is None and _PG_LSN.match(value)):
            if _PG_LSN.match(value):
                return (lsn_from_text(value), MAX, MAX, MAX)
            if value.isdigit():
                return (int(value), MAX, MAX, MAX)
        elif kind == "mysql":
            match = _BINLOG.match(value)
            if match:
                return (int(match.group("index")), int(match.group("pos")), MAX, MAX)
        elif kind == "sqlserver" and _SQLSERVER_LSN.match(value):
            return _packed_bound("sqlserver", sqlserver_lsn_from_text(value))
        elif kind == "oracle" and value.isdigit():
            return _packed_bound("oracle", int(value))
    except ValueError as exc:
        raise PositionError(f"source position {value!r}: {exc}") from None
    if _TUPLE.match(value):
        return _padded(tuple(int(v) for v in value.split(",")))
    raise PositionError(f"source position {value!r} is not a {kind or 'known'} position; expected "
                        + _EXPECTED.get(kind or "", "an LSN like 0/16B3748, file:pos, an SCN, or a,b,c,d"))


_EXPECTED = {
    "postgres": "an LSN like 0/1F43A98",
    "mysql": "binlog coordinates like mysql-bin.000003:154 or a GTID",
    "sqlserver": "an LSN like 00000027:00000758:0005",
    "oracle": "an SCN like 289620",
}


def format_position(connector: str | None, seq: Seq | list[int] | None) -> str:
    """A recorded ``_seq`` in the source's notation (the commit position it stands for)."""
    if not seq:
        return "-"
    seq = tuple(seq)
    kind = connector_kind(connector)
    if kind == "postgres":
        return lsn_to_text(seq[0])
    if kind == "mysql":
        return f"{seq[0]:06d}:{seq[1]}"
    if kind in _PACKED_COMMIT_BITS:
        commit = _unpack_top(seq, _PACKED_COMMIT_BITS[kind])
        return sqlserver_lsn_to_text(commit) if kind == "sqlserver" else str(commit)
    return ",".join(str(v) for v in seq)


def _padded(seq: Seq) -> Seq:
    return seq + (MAX,) * (4 - len(seq))


def _packed_bound(kind: str, commit: int) -> Seq:
    """The largest packed ``_seq`` with this commit part (every lower part at its maximum)."""
    bits = _PACKED_COMMIT_BITS[kind]
    rest = 4 * 63 - bits
    return pack_seq([(commit, bits), ((1 << rest) - 1, rest)])


def _unpack_top(seq: Seq, bits: int) -> int:
    total = 0
    for part in seq:
        total = (total << 63) | part
    return total >> (4 * 63 - bits)

