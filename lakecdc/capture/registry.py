"""Every connector lakecdc captures from, one ``ConnectorRegistration`` each (``registration.py``).

The runner, ``lakecdc status`` and ``lakecdc capture --help`` choose by ``connector.class``, as a
Kafka Connect worker does; a configuration without one is PostgreSQL's.
"""

from __future__ import annotations

from lakecdc.capture.mysql.registration import MARIADB, MYSQL
from lakecdc.capture.oracle.registration import ORACLE
from lakecdc.capture.postgres.registration import POSTGRES
from lakecdc.capture.registration import ConnectorRegistration
from lakecdc.capture.sqlserver.registration import SQLSERVER
from lakecdc.errors import ConfigError

REGISTRATIONS: tuple[ConnectorRegistration, ...] = (POSTGRES, MYSQL, MARIADB, ORACLE, SQLSERVER)
DEFAULT = POSTGRES


def debezium_classes() -> list[str]:
    """The Debezium connector classes lakecdc captures from, sorted."""
    return sorted(c for r in REGISTRATIONS for c in r.classes if "." in c)


def registration_for(properties: dict[str, str]) -> ConnectorRegistration:
    """The registration of the properties' ``connector.class`` (PostgreSQL's when absent)."""
    connector_class = properties.get("connector.class", DEFAULT.classes[0])
    for registration in REGISTRATIONS:
        if connector_class in registration.classes:
            return registration
    raise ConfigError(
        f"connector.class '{connector_class}' has no lakecdc capture; supported: " + ", ".join(debezium_classes()),
        "connector.class",
    )
