"""SQL Server connector properties (Debezium 3.x names and defaults).

A Debezium SQL Server connector ``.properties`` file is accepted unchanged::

    connector.class=io.debezium.connector.sqlserver.SqlServerConnector
    database.hostname=sqlserver.example.com
    database.port=1433
    database.user=cdc
    database.password=env:MSSQL_PASSWORD
    database.names=testDB
    topic.prefix=server1
    table.include.list=dbo.customers
    offset.storage.file.filename=/var/lib/lakecdc/offsets.json

lakecdc reads each capture instance's structure from the database at every start (the change
tables do not change shape), so the ``schema.history.internal.*`` properties are accepted and not
needed. One connector captures one database: ``database.names`` (or the 1.x ``database.dbname``)
names exactly one. ``database.applicationIntent=ReadOnly`` (an Always On readable secondary)
selects ``snapshot`` isolation and a commit per poll as Debezium does; pymssql has no
application-intent option, so reaching the secondary is up to ``database.hostname``.
"""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar, Literal

from pydantic import Field

from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import split_list
from lakecdc.config.signaling import SignalingConnectorConfig
from lakecdc.errors import ConfigError

SQLSERVER_CLASSES = ("io.debezium.connector.sqlserver.SqlServerConnector", "sqlserver")

IsolationMode = Literal["read_uncommitted", "read_committed", "repeatable_read", "snapshot", "exclusive"]


class SqlServerConnectorConfig(SignalingConnectorConfig):
    # Debezium 3's SQL Server modes that need no schema history or custom class; schema_only is
    # the older name of no_data (Debezium SQL Server documentation, ``snapshot.mode``).
    snapshot_modes: ClassVar[tuple[str, ...]] = (
        "initial", "initial_only", "no_data", "schema_only", "when_needed", "always",
    )
    # the schema Debezium never captures: CDC's own tables live there
    excluded_schemas: ClassVar[frozenset[str]] = frozenset({"cdc", "sys", "INFORMATION_SCHEMA"})
    connector_kind: ClassVar[str | None] = "sqlserver"
    accepted_names = CommonConnectorConfig.accepting("sqlserver")

    connector_class: str = Field(SQLSERVER_CLASSES[0], alias="connector.class")
    database_hostname: str | None = Field("localhost", alias="database.hostname")
    database_port: int | None = Field(1433, alias="database.port", ge=1, le=65535)
    database_names: str | None = Field(None, alias="database.names")
    database_instance: str | None = Field(None, alias="database.instance")
    database_application_intent: str | None = Field(None, alias="database.applicationIntent")
    snapshot_isolation_mode: IsolationMode = Field("repeatable_read", alias="snapshot.isolation.mode")
    time_precision_mode: Literal["adaptive", "connect"] = Field(
        "adaptive", alias="time.precision.mode"
    )
    max_iteration_transactions: int = Field(500, alias="max.iteration.transactions", ge=0)
    data_query_mode: Literal["function", "direct"] = Field("direct", alias="data.query.mode")
    streaming_fetch_size: int = Field(0, alias="streaming.fetch.size", ge=0)
    incremental_snapshot_allow_schema_changes: bool = Field(False, alias="incremental.snapshot.allow.schema.changes")
    incremental_snapshot_option_recompile: bool = Field(False, alias="incremental.snapshot.option.recompile")
    connect_timeout_ms: int = Field(30_000, alias="connect.timeout.ms", ge=0)

    @cached_property
    def database(self) -> str:
        """The one database this connector captures."""
        names = split_list(self.database_names) if self.database_names else []
        if not names and self.database_dbname:
            names = [self.database_dbname]
        if len(names) != 1:
            what = "no database" if not names else f"{len(names)} databases ({', '.join(names)})"
            raise ConfigError(
                f"property 'database.names' names {what}: a lakecdc SQL Server connector captures exactly one "
                "database; run one connector per database",
                "database.names",
            )
        return names[0]

    @cached_property
    def connector_name(self) -> str:
        """Kafka Connect's connector name (offset key); defaults to the topic prefix."""
        return self.name or self.topic_prefix

    @cached_property
    def effective_isolation_mode(self) -> str:
        """Always On read-only replicas allow only ``snapshot`` isolation (Debezium SQL Server
        documentation, "SQL Server Always On")."""
        if (self.database_application_intent or "").lower() == "readonly":
            return "snapshot"
        return self.snapshot_isolation_mode

    @cached_property
    def snapshot_mode_normalized(self) -> str:
        return "no_data" if self.snapshot_mode == "schema_only" else self.snapshot_mode

    def connection_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``pymssql.connect``; the password is resolved here only."""
        server = self.database_hostname or "localhost"
        if self.database_instance:
            server = f"{server}\\{self.database_instance}"
        return {
            "server": server,
            "port": str(self.database_port or 1433),
            "user": self.database_user,
            "password": self.database_password.get_secret_value() if self.database_password else "",
            "database": self.database,
            "login_timeout": max(1, self.connect_timeout_ms // 1000),
            "autocommit": False,
        }

    def data_headers(self, run_id: str | None = None) -> list[tuple[str, bytes]]:
        """Debezium 3's context headers on every data record (none with extended.headers.enabled=false)."""
        if not self.extended_headers_enabled:
            return []
        from lakecdc.capture.headers import context_headers

        schemas = self.passthrough.get("header.converter.schemas.enable", "true").strip().lower() != "false"
        return context_headers(self.topic_prefix, "sqlserver", schemas, run_id=run_id)

    def describe_target(self) -> str:
        return f"sqlserver {self.database_user}@{self.database_hostname}:{self.database_port}/{self.database}"

    def _check_stores(self) -> None:
        super()._check_stores()
        _ = self.database  # one database, named: fail at load time, not at connect time
