"""MySQL / MariaDB connector properties (Debezium 3.x names and defaults).

A Debezium MySQL (or MariaDB) connector ``.properties`` file is accepted unchanged::

    connector.class=io.debezium.connector.mysql.MySqlConnector
    database.hostname=127.0.0.1
    database.port=3306
    database.user=cdc
    database.password=env:MYSQL_PASSWORD
    database.server.id=184054
    topic.prefix=dbserver1
    database.include.list=inventory
    schema.history.internal.file.filename=/var/lib/lakecdc/schema-history.jsonl
    offset.storage.file.filename=/var/lib/lakecdc/offsets.json

``connector.class`` ``io.debezium.connector.mariadb.MariaDbConnector`` gives events whose
``source.connector`` is ``mariadb`` (Debezium's separate MariaDB connector); the MySQL class gives
``mysql``. Both read MySQL and MariaDB servers.
"""

from __future__ import annotations

import re
import zlib
from functools import cached_property
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import check_exclusive, compile_regex_list
from lakecdc.config.signaling import SignalingConnectorConfig
from lakecdc.errors import ConfigError

MYSQL_CLASSES = ("io.debezium.connector.mysql.MySqlConnector", "mysql")
MARIADB_CLASSES = ("io.debezium.connector.mariadb.MariaDbConnector", "mariadb")


class MySqlConnectorConfig(SignalingConnectorConfig):
    snapshot_modes: ClassVar[tuple[str, ...]] = (
        "initial", "initial_only", "when_needed", "never", "no_data", "schema_only",
        "schema_only_recovery", "recovery", "always",
    )
    uses_schema_history: ClassVar[bool] = True
    connector_kind: ClassVar[str | None] = "mysql"
    accepted_names = CommonConnectorConfig.accepting("mysql")
    excluded_schemas: ClassVar[frozenset[str]] = frozenset(
        {"mysql", "sys", "performance_schema", "information_schema"}
    )

    connector_class: str = Field(MYSQL_CLASSES[0], alias="connector.class")
    database_hostname: str | None = Field("localhost", alias="database.hostname")
    database_port: int | None = Field(3306, alias="database.port", ge=1, le=65535)
    database_server_id: int = Field(0, alias="database.server.id", ge=0, le=4294967295)
    database_ssl_mode: str = Field("preferred", alias="database.ssl.mode")
    connect_timeout_ms: int = Field(30_000, alias="connect.timeout.ms", ge=0)
    connect_keep_alive: bool = Field(True, alias="connect.keep.alive")
    snapshot_locking_mode: Literal["minimal", "minimal_percona", "extended", "none"] = Field(
        "minimal", alias="snapshot.locking.mode"
    )
    include_query: bool = Field(False, alias="include.query")
    include_schema_comments: bool = Field(False, alias="include.schema.comments")
    bigint_unsigned_handling_mode: Literal["long", "precise"] = Field("long", alias="bigint.unsigned.handling.mode")
    time_precision_mode: Literal["adaptive_time_microseconds", "adaptive", "connect"] = Field(
        "adaptive_time_microseconds", alias="time.precision.mode"
    )
    gtid_source_includes: str | None = Field(None, alias="gtid.source.includes")
    gtid_source_excludes: str | None = Field(None, alias="gtid.source.excludes")
    gtid_source_filter_dml_events: bool = Field(True, alias="gtid.source.filter.dml.events")
    binlog_buffer_size: int = Field(0, alias="binlog.buffer.size", ge=0)
    enable_time_adjuster: bool = Field(True, alias="enable.time.adjuster")
    min_row_count_to_stream_results: int = Field(1000, alias="min.row.count.to.stream.results", ge=0)
    read_only: bool = Field(False, alias="read.only")
    schema_history_internal_store_only_captured_databases_ddl: bool = Field(
        False, alias="schema.history.internal.store.only.captured.databases.ddl"
    )
    inconsistent_schema_handling_mode: Literal["fail", "warn", "skip", "ignore"] = Field(
        "fail", alias="inconsistent.schema.handling.mode"
    )
    event_deserialization_failure_handling_mode: Literal["fail", "warn", "skip", "ignore"] = Field(
        "fail", alias="event.deserialization.failure.handling.mode"
    )
    binlog_net_read_timeout: int = Field(0, alias="binlog.net.read.timeout", ge=0)
    binlog_net_write_timeout: int = Field(0, alias="binlog.net.write.timeout", ge=0)
    connect_keep_alive_interval_ms: int = Field(60_000, alias="connect.keep.alive.interval.ms", ge=1)

    @model_validator(mode="after")
    def _check_gtid_sources(self) -> MySqlConnectorConfig:
        check_exclusive([("gtid.source.includes", self.gtid_source_includes,
                          "gtid.source.excludes", self.gtid_source_excludes)])
        _ = self.gtid_source_filter  # a bad expression fails at load time
        return self

    @property
    def watermarks_in_signal_table(self) -> bool:
        return not self.read_only

    @cached_property
    def connector_type(self) -> Literal["mysql", "mariadb"]:
        """``source.connector`` value and schema namespace (``io.debezium.connector.<type>``)."""
        if self.connector_class in MYSQL_CLASSES:
            return "mysql"
        if self.connector_class in MARIADB_CLASSES:
            return "mariadb"
        raise ConfigError(
            f"connector.class '{self.connector_class}' is not a MySQL or MariaDB connector; expected "
            f"{MYSQL_CLASSES[0]} or {MARIADB_CLASSES[0]}",
            "connector.class",
        )

    @cached_property
    def connector_name(self) -> str:
        """Kafka Connect's connector name (offset key); defaults to the topic prefix."""
        return self.name or self.topic_prefix

    @cached_property
    def replica_server_id(self) -> int:
        """The server id this client registers as a replica with; must differ from every server's."""
        return self.database_server_id or 5400 + zlib.crc32(self.topic_prefix.encode()) % 1000

    @cached_property
    def snapshot_mode_normalized(self) -> str:
        mode = self.snapshot_mode
        return {"schema_only": "no_data", "schema_only_recovery": "recovery"}.get(mode, mode)

    def connection_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``pymysql.connect``; the password is resolved here only."""
        return {
            "host": self.database_hostname or "localhost",
            "port": self.database_port or 3306,
            "user": self.database_user,
            "password": self.database_password.get_secret_value() if self.database_password else "",
            "connect_timeout": max(1, self.connect_timeout_ms // 1000),
            "charset": "utf8mb4",
        }

    @cached_property
    def gtid_source_filter(self) -> tuple[bool, tuple[re.Pattern[str], ...]] | None:
        """(include?, patterns) from ``gtid.source.includes`` / ``.excludes``; None when neither is set."""
        includes = compile_regex_list(self.gtid_source_includes, "gtid.source.includes")
        if includes:
            return True, includes
        excludes = compile_regex_list(self.gtid_source_excludes, "gtid.source.excludes")
        return (False, excludes) if excludes else None

    def captures_gtid_source(self, gtid: str) -> bool:
        """Whether the row changes of the transaction with ``gtid`` are emitted: Debezium's
        ``gtid.source.filter.dml.events`` tests the GTID's source against the includes / excludes,
        the server UUID of a MySQL GTID (``uuid:n``), ``domain-server`` of a MariaDB one (``d-s-n``)."""
        source_filter = self.gtid_source_filter
        if source_filter is None or not self.gtid_source_filter_dml_events:
            return True
        source = gtid.partition(":")[0] if ":" in gtid else gtid.rpartition("-")[0]
        include, patterns = source_filter
        return any(p.fullmatch(source.strip()) for p in patterns) is include

    @property
    def header_schemas_enable(self) -> bool:
        """Whether headers are written with their schema (Kafka Connect's header converter, JSON)."""
        return self.passthrough.get("header.converter.schemas.enable", "true").strip().lower() != "false"

    def data_headers(self, run_id: str | None = None) -> list[tuple[str, bytes]]:
        """Debezium 3's context headers on every record of the connector's own topics (data,
        tombstone, schema change; none with extended.headers.enabled=false), naming the connector
        type Debezium's MySQL or MariaDB connector names."""
        if not self.extended_headers_enabled:
            return []
        from lakecdc.capture.headers import context_headers

        return context_headers(self.topic_prefix, self.connector_type, self.header_schemas_enable, run_id=run_id)

    def describe_target(self) -> str:
        return f"{self.connector_type} {self.database_user}@{self.database_hostname}:{self.database_port}"
