"""Readers of one binlog column's value, compiled from mysql-replication's column metadata.

Each reader follows mysql-replication's ``RowsEvent.__read_values_name`` branch for its column type,
quirks included (a 5-byte big-endian read is unsigned, the others signed; an empty ``binary``
value is ``''``; TIME2's sign handling), so the values are the library's own; the one difference is
text bytes a character set does not define (:func:`_text`). ``lakecdc.capture.mysql.row_decoder``
runs them over a rows event's bytes.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

# (buffer, position) -> (value, position after it)
Reader = Callable[[bytes, int], tuple[Any, int]]
_INT = {  # (type, unsigned) -> little-endian struct
    (FIELD_TYPE.TINY, False): struct.Struct("<b"), (FIELD_TYPE.TINY, True): struct.Struct("<B"),
    (FIELD_TYPE.SHORT, False): struct.Struct("<h"), (FIELD_TYPE.SHORT, True): struct.Struct("<H"),
    (FIELD_TYPE.LONG, False): struct.Struct("<i"), (FIELD_TYPE.LONG, True): struct.Struct("<I"),
    (FIELD_TYPE.LONGLONG, False): struct.Struct("<q"), (FIELD_TYPE.LONGLONG, True): struct.Struct("<Q"),
}
_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")
_BE_I32 = struct.Struct(">i")
_COMPRESSED_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes of a decimal's 0-8 leftover digits
_FSP_BYTES = (0, 1, 1, 2, 2, 3, 3)
_EPOCH = datetime.datetime.utcfromtimestamp


def _uint(size: int) -> Callable[[bytes, int], int]:
    def read(buf: bytes, pos: int) -> int:
        return int.from_bytes(buf[pos:pos + size], "little")
    return read


def _int_be(data: bytes | bytearray) -> int:
    """``BinLogPacketWrapper.read_int_be_by_size``: a signed big-endian number of 1-5 bytes, except
    that 5 bytes read unsigned."""
    return int.from_bytes(data, "big", signed=len(data) != 5)


def _fsp(buf: bytes, pos: int, fsp: int) -> tuple[int, int]:
    """``RowsEvent.__read_fsp``: the microseconds of a fractional-second part."""
    size = _FSP_BYTES[fsp] if fsp <= 6 else 0
    if not size:
        return 0, pos
    value = _int_be(buf[pos:pos + size])
    if fsp % 2:
        value = int(value / 10)
    return value * (10 ** (6 - fsp)), pos + size


def _integer(column: Any) -> Reader:
    if column.type == FIELD_TYPE.INT24:
        unsigned = column.unsigned

        def int24(buf: bytes, pos: int) -> tuple[Any, int]:
            value = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
            if not unsigned and value >= 0x800000:
                value -= 0x1000000
            return value, pos + 3
        return int24
    fixed = _INT[(column.type, bool(column.unsigned))]
    unpack, size = fixed.unpack_from, fixed.size

    def integer(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size
    return integer


def _text(column: Any, length_size: int, ignore_errors: bool) -> Reader:
    """``RowsEvent.__read_string``: decoded with the column's character set; bytes when Python has
    no codec of that name (``binary``, ``swe7``). A byte the character set does not define (latin1,
    which is cp1252, leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D undefined, and MariaDB stores them) is
    read as U+FFFD, as Debezium's binlog connectors decode text (Java's ``new String(bytes,
    charset)``); mysql-replication raises, which stopped the capture."""
    length = _uint(length_size)
    errors = "ignore" if ignore_errors else "replace"
    encoding: str | None = "utf-8"
    if column.character_set_name is not None:
        encoding = RowsEvent.charset_to_encoding(column.character_set_name)
        try:
            "".encode(encoding)
        except LookupError:
            encoding = None

    def text(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos + length_size
        end = start + length(buf, pos)
        raw = buf[start:end]
        if encoding is None:  # CPython decodes b"" to "" before it looks the codec up
            return (raw if raw else ""), end
        return raw.decode(encoding, errors), end
    return text


def _raw(length_size: int) -> Reader:
    length = _uint(length_size)

    def raw(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos + length_size
        end = start + length(buf, pos)
        return buf[start:end], end
    return raw


def _new_decimal(column: Any) -> Reader:
    """``RowsEvent.__read_new_decimal``: groups of nine digits in four big-endian bytes, leftover
    digits in fewer; the sign in the first byte's high bit, negative numbers with every bit flipped."""
    integral = column.precision - column.decimals
    whole_int, whole_frac = integral // 9, column.decimals // 9
    left_int, left_frac = integral - whole_int * 9, column.decimals - whole_frac * 9
    head, tail = _COMPRESSED_BYTES[left_int], _COMPRESSED_BYTES[left_frac]
    size = head + 4 * (whole_int + whole_frac) + tail

    def new_decimal(buf: bytes, pos: int) -> tuple[Any, int]:
        data = bytearray(buf[pos:pos + size])
        positive = data[0] & 0x80
        mask, text = (0, "") if positive else (-1, "-")
        data[0] ^= 0x80
        at = 0
        if head:
            text += str(_int_be(data[:head]) ^ mask)
            at = head
        for _ in range(whole_int):
            text += f"{_BE_I32.unpack_from(data, at)[0] ^ mask:09d}"
            at += 4
        text += "."
        for _ in range(whole_frac):
            text += f"{_BE_I32.unpack_from(data, at)[0] ^ mask:09d}"
            at += 4
        if tail:
            text += f"{_int_be(data[at:at + tail]) ^ mask:0{left_frac}d}"
        return decimal.Decimal(text), pos + size
    return new_decimal


def _datetime2(column: Any) -> Reader:
    fsp = column.fsp

    def datetime2(buf: bytes, pos: int) -> tuple[Any, int]:
        data = int.from_bytes(buf[pos:pos + 5], "big")
        year_month = (data >> 22) & 0x1FFFF
        try:
            value = datetime.datetime(year=int(year_month / 13), month=year_month % 13, day=(data >> 17) & 0x1F,
                                      hour=(data >> 12) & 0x1F, minute=(data >> 6) & 0x3F, second=data & 0x3F)
        except ValueError:  # out of datetime2 range: None, as mysql-replication
            return None, _fsp(buf, pos + 5, fsp)[1]
        micros, end = _fsp(buf, pos + 5, fsp)
        return (value.replace(microsecond=micros) if micros > 0 else value), end
    return datetime2


def _timestamp2(column: Any) -> Reader:
    fsp = column.fsp

    def timestamp2(buf: bytes, pos: int) -> tuple[Any, int]:
        value = _EPOCH(_int_be(buf[pos:pos + 4]))
        micros, end = _fsp(buf, pos + 4, fsp)
        return (value.replace(microsecond=micros) if micros > 0 else value), end
    return timestamp2


def _time2(column: Any) -> Reader:
    fsp = column.fsp

    def time2(buf: bytes, pos: int) -> tuple[Any, int]:
        data = _int_be(buf[pos:pos + 3])
        sign = 1 if (data >> 23) & 1 else -1
        if sign == -1:
            data = ~data + 1  # the library negates the stored two's complement (row_decoder.negative_time)
        micros, end = _fsp(buf, pos + 3, fsp)
        value = datetime.timedelta(hours=(data >> 12) & 0x3FF, minutes=(data >> 6) & 0x3F, seconds=data & 0x3F,
                                   microseconds=micros) * sign
        return value, end
    return time2


def _time(buf: bytes, pos: int) -> tuple[Any, int]:
    value = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
    return datetime.timedelta(hours=int(value / 10000), minutes=int((value % 10000) / 100),
                              seconds=int(value % 100)), pos + 3


def _date(buf: bytes, pos: int) -> tuple[Any, int]:
    value = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
    year, month, day = value >> 9 & 0x7FFF, value >> 5 & 0xF, value & 0x1F
    if value == 0 or year == 0 or month == 0 or day == 0:
        return None, pos + 3  # 0000-00-00 and partial zero dates
    return datetime.date(year=year, month=month, day=day), pos + 3


def _datetime(buf: bytes, pos: int) -> tuple[Any, int]:
    value = int.from_bytes(buf[pos:pos + 8], "little")
    if value == 0:
        return None, pos + 8
    date, time = value / 1000000, int(value % 1000000)
    year, month, day = int(date / 10000), int((date % 10000) / 100), int(date % 100)
    if year == 0 or month == 0 or day == 0:
        return None, pos + 8
    return datetime.datetime(year=year, month=month, day=day, hour=int(time / 10000),
                             minute=int((time % 10000) / 100), second=int(time % 100)), pos + 8


def _timestamp(buf: bytes, pos: int) -> tuple[Any, int]:
    return _EPOCH(int.from_bytes(buf[pos:pos + 4], "little")), pos + 4


def _enum(column: Any) -> Reader:
    size, names = column.size, column.enum_values
    index = _uint(size)

    def enum(buf: bytes, pos: int) -> tuple[Any, int]:
        return (names[index(buf, pos)] if names else None), pos + size
    return enum


def _set(column: Any, empty: Any) -> Reader:
    """A Python set of the member names; an empty set (or one without names) is ``empty``."""
    size, names = column.size, column.set_values
    index = _uint(size)

    def set_value(buf: bytes, pos: int) -> tuple[Any, int]:
        mask = index(buf, pos)
        members = {name for i, name in enumerate(names) if mask & (1 << i)} if names else None
        return (members or empty), pos + size
    return set_value


def _bit(column: Any) -> Reader:
    """``RowsEvent.__read_bit``: a string of '0'/'1', the first byte holding the leftover bits."""
    size = column.bytes
    widths = [column.bits if size == 1 else (column.bits % 8 or 8)] + [8] * (size - 1)
    formats = [(f"0{w}b", (1 << w) - 1) for w in widths]

    def bit(buf: bytes, pos: int) -> tuple[Any, int]:
        return "".join(format(buf[pos + i] & m, f) for i, (f, m) in enumerate(formats)), pos + size
    return bit


def _fixed(size: int, unpack: Callable[[bytes, int], tuple[Any, ...]]) -> Reader:
    def fixed(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size
    return fixed


def _year(buf: bytes, pos: int) -> tuple[Any, int]:
    return buf[pos] + 1900, pos + 1


def column_reader(column: Any, empty_set: Any, ignore_errors: bool) -> Reader | None:
    """The reader of one binlog column (None: no reader for its type, the library decodes it)."""
    t = column.type
    if t in (FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.LONG, FIELD_TYPE.INT24, FIELD_TYPE.LONGLONG):
        return _integer(column)
    if t == FIELD_TYPE.FLOAT:
        return _fixed(4, _FLOAT.unpack_from)
    if t == FIELD_TYPE.DOUBLE:
        return _fixed(8, _DOUBLE.unpack_from)
    if t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        return _text(column, 2 if column.max_length > 255 else 1, ignore_errors)
    if t == FIELD_TYPE.BLOB:
        return _text(column, column.length_size, ignore_errors)
    if t == FIELD_TYPE.GEOMETRY:
        return _raw(column.length_size)
    simple = {FIELD_TYPE.NEWDECIMAL: _new_decimal, FIELD_TYPE.DATETIME2: _datetime2, FIELD_TYPE.TIME2: _time2,
              FIELD_TYPE.TIMESTAMP2: _timestamp2, FIELD_TYPE.ENUM: _enum, FIELD_TYPE.BIT: _bit}
    if t in simple:
        return simple[t](column)
    if t == FIELD_TYPE.SET:
        return _set(column, empty_set)
    return {FIELD_TYPE.DATETIME: _datetime, FIELD_TYPE.TIME: _time, FIELD_TYPE.DATE: _date,
            FIELD_TYPE.TIMESTAMP: _timestamp, FIELD_TYPE.YEAR: _year}.get(t)
