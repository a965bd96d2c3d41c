"""Decimals wider than Python's default 28-digit context keep every digit in every connector
(MySQL DECIMAL(65,30), SQL Server decimal(38,x), Oracle NUMBER(38,x) and NUMBER without scale)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from lakecdc.events.logical import unscaled_from_bytes

WIDE = Decimal("12345678901234567890123456789012345.123456789012345678901234567890")  # 65 digits
WIDE_38 = Decimal("1234567890123456789012345678.9012345678")  # 38 digits, scale 10


@pytest.mark.parametrize("value", [WIDE, -WIDE, Decimal("1.5")])
def test_mysql_decimal_65_30(value: Decimal) -> None:
    from lakecdc.capture.mysql.types import _decimal_converter

    assert unscaled_from_bytes(_decimal_converter(30, "precise")(value)) == int(value.scaleb(30, _exact()))
    assert Decimal(_decimal_converter(30, "string")(value)) == value


def test_sqlserver_decimal_38_10() -> None:
    from lakecdc.capture.sqlserver.types import _decimal

    assert unscaled_from_bytes(_decimal(10, "precise")(WIDE_38)) == 12345678901234567890123456789012345678
    assert (_decimal(10, "string")(Decimal("1234567890123456789012345678.9"))
            == "1234567890123456789012345678.9000000000")


def test_oracle_number_38_10_and_unscaled_number() -> None:
    from lakecdc.capture.oracle.connection import ColumnInfo
    from lakecdc.capture.oracle.types import TypeModes, _decimal_converter

    fixed = ColumnInfo("AMOUNT", "NUMBER", 22, 38, 10, True, None, 1)
    assert unscaled_from_bytes(_decimal_converter(fixed, TypeModes(), False)(WIDE_38)) == \
        12345678901234567890123456789012345678
    assert _decimal_converter(fixed, TypeModes(decimal_handling="string"), False)(WIDE_38) == str(WIDE_38)
    free = ColumnInfo("N", "NUMBER", 22, None, None, True, None, 2)
    digits = Decimal("12345678901234567890123456789012345678")
    assert _decimal_converter(free, TypeModes(decimal_handling="string"), True)(digits) == str(digits)


def _exact():  # type: ignore[no-untyped-def]
    from lakecdc.events.logical import EXACT

    return EXACT
