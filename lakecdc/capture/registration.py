"""The record every connector registers: its ``connector.class`` values and how it is run and probed.

Each connector package has a ``registration.py`` holding one ``ConnectorRegistration`` (MySQL's holds
two: Debezium 3 ships MySQL and MariaDB as two connectors, ``MySqlConnector`` and
``MariaDbConnector``); ``capture/registry.py`` lists them, and the runner (``capture/runner.py``),
``lakecdc status`` (``capture/status.py``) and ``lakecdc capture --help`` read that list.
A registration imports its connector only inside its functions, so one connector's driver is not
needed to run (or to list) another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakecdc.config.base import load_properties
from lakecdc.config.redact import register_secret
from lakecdc.errors import ConfigError

if TYPE_CHECKING:
    from lakecdc.capture.coordinator import CoordinatorSettings
    from lakecdc.capture.spi import CaptureConnector


@dataclass(frozen=True)
class ConnectorParts:
    """What ``run_capture`` needs from one connector: its validated configuration, the connector
    the coordinator drives, and the coordinator's settings taken from that configuration."""

    config: Any
    connector: CaptureConnector
    settings: CoordinatorSettings


@dataclass
class CaptureStatus:
    """One capture's position, as ``lakecdc status`` reports it (``capture/status.py``).

    ``slot`` (PostgreSQL), ``binlog`` (MySQL, MariaDB), ``redo`` (Oracle) and ``change_tables``
    (SQL Server) hold what the connector's status probe found in the source log."""

    kind: str
    connector: str
    name: str
    offset_storage: str
    offset: dict[str, Any] | None = None
    position: str | None = None
    source_ts: str | None = None
    stored_at: str | None = None
    slot: dict[str, Any] | None = None
    binlog: dict[str, Any] | None = None
    redo: dict[str, Any] | None = None
    change_tables: dict[str, Any] | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: ``load_config(config_path, overrides)``: the validated connector configuration
LoadConfig = Callable[[str | Path, dict[str, str] | None], Any]
#: ``parts(config, stop_when_idle, show_progress)``
BuildParts = Callable[[Any, float | None, bool | None], ConnectorParts]
#: ``probe(config, status)``: fills the status's position and the source log's state; may raise
Probe = Callable[[Any, CaptureStatus], None]


def server_partition(config: Any) -> dict[str, Any]:
    """Kafka Connect's source partition of a one-database connector: ``{"server": topic.prefix}``."""
    return {"server": config.topic_prefix}


@dataclass(frozen=True)
class ConnectorRegistration:
    """One connector as the rest of lakecdc knows it."""

    name: str  #: the connector's name in ``lakecdc status`` (``postgres``, ``mysql``, ...)
    title: str  #: for messages (``PostgreSQL``)
    classes: tuple[str, ...]  #: its ``connector.class`` values, Debezium's class name first
    load_config: LoadConfig
    parts: BuildParts
    probe: Probe
    #: the offset key's source partition (SQL Server: one per captured database)
    partition: Callable[[Any], dict[str, Any]] = server_partition


def load_connector_config(config_path: str | Path, overrides: dict[str, str] | None,
                          classes: tuple[str, ...], model: Any, kind: str) -> Any:
    """Read a connector file (``connector.class`` defaults to ``classes[0]``), validate it with
    ``model`` and register its password with the log redaction before anything can log it."""
    properties = load_properties(config_path)
    properties.update(overrides or {})
    connector_class = properties.get("connector.class", classes[0])
    if connector_class not in classes:
        raise ConfigError(
            f"connector.class '{connector_class}' is not a {kind} connector; expected one of "
            + ", ".join(classes),
            "connector.class",
        )
    config = model.from_properties(properties)
    if config.database_password is not None:
        register_secret(config.database_password.get_secret_value())
    return config


def commit_interval_s(config: Any) -> float:
    """How often the coordinator commits: ``offset.flush.interval.ms``, at most one second."""
    return min(config.offset_flush_interval_ms, 1000) / 1000.0 or 1.0


#: how often capture reconnects after consecutive lost connections when errors.max.retries is not set
RECONNECT_RETRIES = 10


def reconnect_retries(config: Any, default: int = RECONNECT_RETRIES) -> int:
    """``errors.max.retries`` when the file sets it: how many times in a row a retriable failure (a lost
    connection) is retried before capture stops, -1 without a limit, 0 never (Debezium's
    ``ErrorHandler.hasMoreRetries``). Unset, lakecdc keeps a limit (``default``) where Debezium's
    default -1 retries forever: a source that stays unreachable is reported instead of waited for."""
    return int(config.errors_max_retries) if "errors_max_retries" in config.model_fields_set else default
