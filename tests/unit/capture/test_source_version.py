"""``source.version``: every connector names the Debezium release lakecdc follows (3.7.0.Final), and
``lakecdc.debezium.version=3.6.3.Final`` keeps the output of deployments pinned to 3.6.3."""

from __future__ import annotations

from typing import Any

import pytest

from lakecdc.capture.mysql.config import MARIADB_CLASSES, MySqlConnectorConfig
from lakecdc.capture.mysql.source_info import source_builder as mysql_source
from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.capture.oracle.source_info import source_builder as oracle_source
from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.source_info import source_builder as postgres_source
from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.capture.sqlserver.source_info import source_builder as sqlserver_source
from lakecdc.errors import ConfigError
from lakecdc.events.source import DEBEZIUM_VERSION, DEBEZIUM_VERSIONS

BASE = {"topic.prefix": "dbz", "database.hostname": "h", "database.user": "u", "database.dbname": "db"}
CONNECTORS: list[tuple[Any, Any, dict[str, str]]] = [
    (PostgresConnectorConfig, postgres_source, {}),
    (MySqlConnectorConfig, mysql_source, {"database.server.id": "5"}),
    (MySqlConnectorConfig, mysql_source, {"database.server.id": "5", "connector.class": MARIADB_CLASSES[0]}),
    (SqlServerConnectorConfig, sqlserver_source, {"database.names": "db"}),
    (OracleConnectorConfig, oracle_source, {}),
]


@pytest.mark.parametrize(("model", "builder", "extra"), CONNECTORS)
def test_default_names_the_current_release_and_the_property_selects_another(model: Any, builder: Any,
                                                                            extra: dict[str, str]) -> None:
    assert DEBEZIUM_VERSION == "3.7.0.Final"
    assert builder(model.from_properties({**BASE, **extra})).version == DEBEZIUM_VERSION
    for version in DEBEZIUM_VERSIONS:
        config = model.from_properties({**BASE, **extra, "lakecdc.debezium.version": version})
        assert builder(config).version == version


@pytest.mark.parametrize(("model", "builder", "extra"), CONNECTORS[:1])
def test_a_release_whose_events_are_not_reproduced_is_refused_by_name(model: Any, builder: Any,
                                                                      extra: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="lakecdc.debezium.version"):
        model.from_properties({**BASE, **extra, "lakecdc.debezium.version": "2.7.0.Final"})


def test_the_model_accepts_exactly_the_releases_reproduced() -> None:
    from typing import get_args

    annotation = PostgresConnectorConfig.model_fields["debezium_version"].annotation
    assert get_args(annotation) == DEBEZIUM_VERSIONS
