"""Our number text against real OpenJDK 17 ``Double.toString`` / ``Float.toString`` output."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakecdc.events import javanum
from lakecdc.events.javanum import float32_round, java_double_str, java_float_str, set_java_number_format

VECTORS = Path(__file__).resolve().parents[2] / "data" / "events" / "java17-number-text.txt"


def _vectors() -> Iterator[tuple[str, float, str]]:
    for line in VECTORS.read_text().splitlines():
        if line.startswith("#"):
            continue
        kind, bits, text = line.split()
        if kind == "D":
            yield kind, struct.unpack("<d", struct.pack("<q", int(bits)))[0], text
        else:
            yield kind, struct.unpack("<f", struct.pack("<i", int(bits)))[0], text


@pytest.fixture
def number_format() -> Iterator[None]:
    before = javanum.java_number_format()
    yield
    set_java_number_format(before)


def test_jdk17_format_matches_every_openjdk17_output(number_format: None) -> None:
    set_java_number_format("jdk17")
    checked = 0
    for kind, value, java_text in _vectors():
        ours = java_double_str(value) if kind == "D" else java_float_str(value)
        assert ours == java_text, (kind, value)
        checked += 1
    assert checked > 10_000


def test_java17_quirks(number_format: None) -> None:
    set_java_number_format("jdk17")
    assert java_double_str(1e23) == "9.999999999999999E22"
    assert java_double_str(2e23) == "1.9999999999999998E23"
    assert java_float_str(1.1754943508222875e-38) == "1.17549435E-38"  # Float.MIN_NORMAL
    assert java_float_str(123456789.0) == "1.23456792E8"
    assert java_double_str(5e-324) == "4.9E-324"


def test_jdk19_format_is_shortest_and_differs_only_where_java17_is_not(number_format: None) -> None:
    differing = 0
    for kind, value, java17_text in _vectors():
        set_java_number_format("jdk19")
        shortest = java_double_str(value) if kind == "D" else java_float_str(value)
        back = float(shortest) if kind == "D" else float32_round(float(shortest))
        assert back == value
        differing += shortest != java17_text
    assert 0 < differing < 2_000
    set_java_number_format("jdk19")
    assert java_float_str(123456789.0) == "1.2345679E8"
    assert java_double_str(1e23) == "1.0E23" and java_double_str(5e-324) == "4.9E-324"
    assert java_double_str(1e-323) == "9.9E-324"  # 1- or 2-digit rule: closer than "1.0E-323"
    with pytest.raises(ValueError, match="jdk21"):
        set_java_number_format("jdk21")
