"""The public API of lakecdc.capture.postgres.types on a hand-built catalog (no server needed):
property parsing, domain/array resolution, dropped types, defaults, TOAST placeholders, errors."""

from __future__ import annotations

import pytest

from lakecdc.capture.postgres.decoder import UNCHANGED
from lakecdc.capture.postgres.types import (
    UNCHANGED_TOAST,
    PgColumn,
    PgType,
    TypeCatalog,
    TypeModes,
    column_schema,
    value_converter,
)
from lakecdc.errors import ConfigError
from lakecdc.events.schema import ConnectSchema

CATALOG = TypeCatalog({
    23: PgType(23, "int4", "pg_catalog", "b"),
    25: PgType(25, "text", "pg_catalog", "b"),
    1700: PgType(1700, "numeric", "pg_catalog", "b"),
    1007: PgType(1007, "_int4", "pg_catalog", "b", element_oid=23, category="A"),
    17: PgType(17, "bytea", "pg_catalog", "b"),
    600: PgType(600, "box", "pg_catalog", "b"),
    1114: PgType(1114, "timestamp", "pg_catalog", "b"),
    19: PgType(19, "name", "pg_catalog", "b"),
    90001: PgType(90001, "mood", "public", "e", enum_labels=("sad", "happy")),
    90002: PgType(90002, "_mood", "public", "b", element_oid=90001, category="A"),
    90003: PgType(90003, "amount", "public", "d", base_oid=1700, base_typmod=(10 << 16 | 2) + 4),
    90004: PgType(90004, "positive_amount", "public", "d", base_oid=90003),
    90005: PgType(90005, "hstore", "public", "b"),
})


def col(type_oid: int, typmod: int = -1, **kwargs: object) -> PgColumn:
    return PgColumn.from_relation(CATALOG, "c", type_oid, typmod, **kwargs)  # type: ignore[arg-type]


def schema_of(column: PgColumn, modes: TypeModes | None = None) -> ConnectSchema:
    schema = column_schema(column, modes or TypeModes())
    assert schema is not None, f"{column} was dropped"
    return schema


def test_modes_from_debezium_properties() -> None:
    assert TypeModes.from_properties({}) == TypeModes()
    modes = TypeModes.from_properties({
        "decimal.handling.mode": "STRING", "time.precision.mode": "connect",
        "binary.handling.mode": "base64-url-safe", "interval.handling.mode": "string",
        "hstore.handling.mode": "map", "include.unknown.datatypes": "true",
        "money.fraction.digits": "3", "unavailable.value.placeholder": "hex:0a0b",
        "topic.prefix": "ignored",
    })
    assert modes == TypeModes("string", "connect", "base64-url-safe", "string", "map", True, 3, b"\n\x0b")


@pytest.mark.parametrize(("prop", "value"), [
    ("decimal.handling.mode", "exact"), ("time.precision.mode", "picoseconds"),
    ("binary.handling.mode", "base32"), ("include.unknown.datatypes", "yes"), ("money.fraction.digits", "-1"),
])
def test_invalid_mode_names_the_property(prop: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        TypeModes.from_properties({prop: value})
    assert err.value.property_name == prop
    assert value in str(err.value)


def test_domains_resolve_to_their_base_type_and_typmod() -> None:
    assert schema_of(col(90004)).to_json() == {
        "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    assert value_converter(col(90004), TypeModes())("-1.50") == b"\xff\x6a"


def test_enum_and_enum_array() -> None:
    assert schema_of(col(90001)).to_json()["parameters"] == {"allowed": "sad,happy"}
    array = column_schema(col(90002), TypeModes())
    assert array is not None and array.items is not None
    assert array.items.optional is False  # Debezium declares enum array items required
    convert = value_converter(col(90002), TypeModes())
    assert convert("{sad,happy}") == ["sad", "happy"]
    assert convert("{sad,NULL}") is None  # a null element fails the whole array, as in Debezium


def test_unknown_types_are_dropped_or_sent_as_text_bytes() -> None:
    assert column_schema(col(600), TypeModes()) is None
    with pytest.raises(LookupError, match="column 'c' of type box"):
        value_converter(col(600), TypeModes())
    unknown = TypeModes(include_unknown_datatypes=True)
    assert schema_of(col(600), unknown).to_json() == {"type": "bytes", "optional": True}
    assert value_converter(col(600), unknown)("(1,1),(0,0)") == b"(1.0,1.0),(0.0,0.0)"
    assert column_schema(col(424242), TypeModes()) is None  # oid not in the catalog


def test_not_null_and_defaults() -> None:
    serial = col(23, not_null=True, default_expr="nextval('t_id_seq'::regclass)")
    assert schema_of(serial).to_json() == {"type": "int32", "optional": False, "default": 0}
    quoted = col(25, default_expr="'v''q'::text")
    assert schema_of(quoted).default == "v'q"
    assert schema_of(col(25, default_expr="NULL::text")).default is None
    assert schema_of(col(23, default_expr="(1 + 2)")).default is None
    assert schema_of(col(90001, default_expr="'happy'::mood")).default == "happy"
    assert schema_of(col(90001, default_expr="'happy'::other")).default is None
    # a variable-scale numeric default would be a struct: Debezium leaves it out (KAFKA-12694)
    assert schema_of(col(1700, default_expr="3.14")).default is None
    assert schema_of(col(1700, default_expr="3.14"), TypeModes(decimal_handling="double")).default == 3.14
    # domains never get a default
    assert schema_of(col(90003, default_expr="1.5")).default is None
    ts = col(1114, 3 << 0, default_expr="LOCALTIMESTAMP")
    assert schema_of(ts).to_json()["default"] == 0


def test_unchanged_toast_placeholder_per_type() -> None:
    assert UNCHANGED_TOAST is UNCHANGED  # the decoder's marker is ours
    modes = TypeModes(unavailable_value_placeholder=b"__x")
    assert value_converter(col(25), modes)(UNCHANGED_TOAST) == "__x"
    assert value_converter(col(17), modes)(UNCHANGED_TOAST) == b"__x"
    assert value_converter(col(1007), modes)(UNCHANGED_TOAST) == [95, 95, 120]
    assert value_converter(col(1700), modes)(UNCHANGED_TOAST) is None
    assert value_converter(col(90005), modes)(UNCHANGED_TOAST) == '{"__x":"__x"}'
    assert value_converter(col(90005), TypeModes(hstore_handling="map"))('"a"=>"1"') == {"a": "1"}


def test_name_columns_differ_between_snapshot_and_streaming() -> None:
    assert value_converter(col(19), TypeModes())("n1") is None
    assert value_converter(col(19), TypeModes(), snapshot=True)("n1") == "n1"
    assert value_converter(col(19), TypeModes(include_unknown_datatypes=True))("n1") == "n1"


def test_null_is_null_for_every_type() -> None:
    for oid in (23, 25, 1700, 1007, 17, 1114, 90001, 90002, 90004, 90005):
        assert value_converter(col(oid), TypeModes())(None) is None
