"""Text forms of source positions and the packing of wide positions into ``seq()`` numbers.

==================  =========================  ==========================================
position            text                       int
==================  =========================  ==========================================
PostgreSQL LSN      ``16/B374D848``            ``(0x16 << 32) | 0xB374D848``
SQL Server LSN      ``00000027:00000758:0003``  ``VLF << 48 | block << 16 | slot`` (80 bits)
Oracle rs_id        `` 0x0000a5.00012345.0124 `` ``seq << 48 | block << 16 | offset``
MySQL binlog file   ``mysql-bin.000042``       ``42``
==================  =========================  ==========================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_INT63 = (1 << 63) - 1


def lsn_from_text(text: str) -> int:
    """PostgreSQL LSN text ``16/B374D848`` -> int.

    >>> lsn_from_text("16/B374D848")
    97500059720
    """
    hi, sep, lo = text.strip().partition("/")
    if not sep:
        raise ValueError(f"not a PostgreSQL LSN (expected XXX/XXX): {text!r}")
    try:
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        raise ValueError(f"not a PostgreSQL LSN (expected hex XXX/XXX): {text!r}") from None


def lsn_to_text(lsn: int) -> str:
    """int -> PostgreSQL LSN text, upper-case hex as ``pg_lsn`` prints it."""
    if not 0 <= lsn < 1 << 64:
        raise ValueError(f"LSN out of range: {lsn}")
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def sqlserver_lsn_from_text(text: str) -> int:
    """SQL Server LSN ``00000027:00000758:0003`` (VLF:block:slot) -> 80-bit int."""
    parts = text.strip().split(":")
    if len(parts) != 3 or [len(p) for p in parts] != [8, 8, 4]:
        raise ValueError(f"not a SQL Server LSN (expected 8:8:4 hex digits): {text!r}")
    try:
        vlf, block, slot = (int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"not a SQL Server LSN (hex digits): {text!r}") from None
    return (vlf << 48) | (block << 16) | slot


def sqlserver_lsn_to_text(lsn: int) -> str:
    if not 0 <= lsn < 1 << 80:
        raise ValueError(f"SQL Server LSN out of range: {lsn}")
    return f"{lsn >> 48:08x}:{(lsn >> 16) & 0xFFFFFFFF:08x}:{lsn & 0xFFFF:04x}"


def oracle_rs_id_to_int(rs_id: str | None) -> int:
    """Oracle redo record id ``" 0x0000a5.00012345.0124 "`` (log seq . block . offset) -> int."""
    if rs_id is None or not rs_id.strip():
        return 0
    text = rs_id.strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    parts = text.split(".")
    if len(parts) != 3:
        raise ValueError(f"not an Oracle rs_id (seq.block.offset): {rs_id!r}")
    seq, block, offset = (int(p, 16) for p in parts)
    return (seq << 48) | (block << 16) | offset


def binlog_file_index(filename: str) -> int:
    """``mysql-bin.000042`` -> 42 (the numeric suffix orders binlog files)."""
    _, _, suffix = filename.rpartition(".")
    if not suffix.isdigit():
        raise ValueError(f"binlog file name has no numeric suffix: {filename!r}")
    return int(suffix)


def pack_seq(parts: list[tuple[int, int]]) -> tuple[int, int, int, int]:
    """Pack ``(value, bit_width)`` parts, most significant first, into four 63-bit numbers.

    Lexicographic order of the result equals the order of the parts, which is how positions wider
    than one bigint (SQL Server's 80-bit LSNs) still sort correctly as ``array<bigint>``.
    """
    total = 0
    width = 0
    for value, bits in parts:
        if not 0 <= value < 1 << bits:
            raise ValueError(f"position component {value} does not fit in {bits} bits")
        total = (total << bits) | value
        width += bits
    if width > 4 * 63:
        raise ValueError(f"position needs {width} bits, more than four bigints hold")
    total <<= 4 * 63 - width
    return (
        (total >> 189) & _INT63,
        (total >> 126) & _INT63,
        (total >> 63) & _INT63,
        total & _INT63,
    )


def unpack_leading(seq: Sequence[int], bits: int) -> int:
    """The first ``bits`` bits ``pack_seq`` packed into ``seq``: its most significant part.

    >>> unpack_leading(pack_seq([(5, 80), (7, 80), (9, 63), (1, 1)]), 80)
    5
    """
    total = 0
    for part in seq:
        total = (total << 63) | part
    return total >> (len(seq) * 63 - bits)


#: per connector, the source position a ``seq()`` leads with, named as capture's
#: ``lakecdc_capture_source_position`` gauge names the same connector's offsets, and how to read it back
_SEQ_POSITIONS: dict[str, tuple[str, Callable[[Sequence[int]], int]]] = {
    "postgres": ("lsn", lambda seq: seq[0]),  # commit LSN (snapshot rows: the event LSN)
    "mysql": ("pos", lambda seq: seq[1]),  # binlog position within its file (seq[0] is the file)
    "sqlserver": ("commit_lsn", lambda seq: unpack_leading(seq, 80)),
    "oracle": ("scn", lambda seq: unpack_leading(seq, 64)),  # commit SCN, else the event's SCN
}


def seq_position(connector: str, seq: Sequence[int]) -> tuple[str, int]:
    """``(field, value)`` of the source position a ``_seq`` holds, named as in the connector's offsets.

    >>> seq_position("postgres", (24023128, 24023000, 1, 0))
    ('lsn', 24023128)
    >>> seq_position("mysql", (42, 1930, 0, 1))
    ('pos', 1930)
    """
    if connector not in _SEQ_POSITIONS:
        raise ValueError(f"no source position for connector {connector!r} (one of {sorted(_SEQ_POSITIONS)})")
    field, read = _SEQ_POSITIONS[connector]
    return field, int(read(seq))
