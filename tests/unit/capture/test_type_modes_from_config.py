"""Every connector builds its ``TypeModes`` from the validated configuration (``from_config``): for
PostgreSQL and MySQL that must give exactly what the Debezium properties gave (``from_properties``,
which the connectors used before), for every combination of the type-mode properties. An empty value
is the one exception: the configuration reads it as unset (its rule for every property, which SQL
Server and Oracle already followed), so it now means the default."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.capture.mysql.types import TypeModes as MySqlTypeModes
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.types import TypeModes as PgTypeModes


def _choice(*values: str) -> st.SearchStrategy[str]:
    """A valid value, in the case a user may write it (properties are case-insensitive)."""
    return st.sampled_from(values).flatmap(lambda v: st.sampled_from([v, v.upper()]))


PG_PROPERTIES = {
    "decimal.handling.mode": _choice("precise", "double", "string"),
    "time.precision.mode": _choice("adaptive", "adaptive_time_microseconds", "connect", "isostring",
                                   "microseconds", "nanoseconds"),
    "binary.handling.mode": _choice("bytes", "base64", "base64-url-safe", "hex"),
    "interval.handling.mode": _choice("numeric", "string"),
    "hstore.handling.mode": _choice("json", "map"),
    "include.unknown.datatypes": st.sampled_from(["true", "false"]),
    "money.fraction.digits": st.integers(0, 6).map(str),
    "unavailable.value.placeholder": st.sampled_from(["__debezium_unavailable_value", "gone", "hex:0a0b"]),
}
MYSQL_PROPERTIES = {
    "decimal.handling.mode": _choice("precise", "double", "string"),
    "time.precision.mode": _choice("adaptive_time_microseconds", "adaptive", "connect"),
    "binary.handling.mode": _choice("bytes", "base64", "base64-url-safe", "hex"),
    "bigint.unsigned.handling.mode": _choice("long", "precise"),
}


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({}, optional=PG_PROPERTIES))
def test_postgres_modes_from_config_equal_those_from_properties(props: dict[str, str]) -> None:
    config = PostgresConnectorConfig.from_properties({"topic.prefix": "p", **props})
    assert PgTypeModes.from_config(config) == PgTypeModes.from_properties(config.given_properties())


@settings(max_examples=100, deadline=None)
@given(st.fixed_dictionaries({}, optional=MYSQL_PROPERTIES))
def test_mysql_modes_from_config_equal_those_from_properties(props: dict[str, str]) -> None:
    config = MySqlConnectorConfig.from_properties({"topic.prefix": "p", "database.server.id": "1", **props})
    given_props = config.given_properties()
    given_props.setdefault("time.precision.mode", config.time_precision_mode)
    assert MySqlTypeModes.from_config(config) == MySqlTypeModes.from_properties(given_props)


def test_an_empty_type_mode_property_means_its_default() -> None:
    empty = {"topic.prefix": "p", "decimal.handling.mode": "", "unavailable.value.placeholder": "",
             "money.fraction.digits": ""}
    assert PgTypeModes.from_config(PostgresConnectorConfig.from_properties(empty)) == PgTypeModes()
    mysql = MySqlConnectorConfig.from_properties({"topic.prefix": "p", "decimal.handling.mode": "",
                                                  "time.precision.mode": ""})
    assert MySqlTypeModes.from_config(mysql) == MySqlTypeModes()
