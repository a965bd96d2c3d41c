"""PostgreSQL connector properties (Debezium 3.x names and defaults).

A Debezium PostgreSQL connector ``.properties`` file is accepted unchanged::

    connector.class=io.debezium.connector.postgresql.PostgresConnector
    database.hostname=127.0.0.1
    database.port=5432
    database.user=cdc
    database.password=env:PGPASSWORD
    database.dbname=shop
    topic.prefix=dbz
    slot.name=dbz_slot
    publication.autocreate.mode=filtered
    offset.storage.file.filename=/var/lib/lakecdc/offsets.json
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import ClassVar, Literal

from pydantic import Field

from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import compile_regex_list
from lakecdc.config.secret import Secret
from lakecdc.config.signaling import SignalingConnectorConfig

POSTGRES_CLASSES = ("io.debezium.connector.postgresql.PostgresConnector", "postgres", "postgresql")

_LIBPQ_QUOTE = re.compile(r"(['\\])")


def _conninfo_value(value: str) -> str:
    return "'" + _LIBPQ_QUOTE.sub(r"\\\1", value) + "'"


class PostgresConnectorConfig(SignalingConnectorConfig):
    snapshot_modes: ClassVar[tuple[str, ...]] = (
        "initial", "always", "never", "initial_only", "exported", "when_needed", "no_data",
        "schema_only", "schema_only_recovery",
    )
    excluded_schemas: ClassVar[frozenset[str]] = frozenset({"pg_catalog", "information_schema"})
    connector_kind: ClassVar[str | None] = "postgres"
    accepted_names = CommonConnectorConfig.accepting("postgres")

    name: str | None = Field(None, alias="name")
    database_hostname: str | None = Field("localhost", alias="database.hostname")
    database_port: int | None = Field(5432, alias="database.port", ge=1, le=65535)
    database_sslmode: str = Field("prefer", alias="database.sslmode")
    database_tcp_keepalive: bool = Field(True, alias="database.tcpKeepAlive")
    # pgjdbc's TLS files, given to libpq under its own names
    database_sslcert: str | None = Field(None, alias="database.sslcert")
    database_sslkey: str | None = Field(None, alias="database.sslkey")
    database_sslrootcert: str | None = Field(None, alias="database.sslrootcert")
    database_sslpassword: Secret | None = Field(None, alias="database.sslpassword")
    plugin_name: Literal["pgoutput"] = Field("pgoutput", alias="plugin.name")
    slot_name: str = Field("debezium", alias="slot.name")
    slot_drop_on_stop: bool = Field(False, alias="slot.drop.on.stop")
    slot_max_retries: int = Field(6, alias="slot.max.retries", ge=0)
    slot_retry_delay_ms: int = Field(10_000, alias="slot.retry.delay.ms", ge=0)
    publication_name: str = Field("dbz_publication", alias="publication.name")
    publication_autocreate_mode: Literal["all_tables", "filtered", "disabled", "no_tables"] = Field(
        "all_tables", alias="publication.autocreate.mode"
    )
    status_update_interval_ms: int = Field(10_000, alias="status.update.interval.ms", ge=0)
    message_prefix_include_list: str | None = Field(None, alias="message.prefix.include.list")
    message_prefix_exclude_list: str | None = Field(None, alias="message.prefix.exclude.list")
    hstore_handling_mode: Literal["json", "map"] = Field("json", alias="hstore.handling.mode")
    interval_handling_mode: Literal["numeric", "string"] = Field("numeric", alias="interval.handling.mode")
    money_fraction_digits: int = Field(2, alias="money.fraction.digits", ge=0)
    xmin_fetch_interval_ms: int = Field(0, alias="xmin.fetch.interval.ms", ge=0)
    flush_lsn_source: bool = Field(True, alias="flush.lsn.source")
    snapshot_locking_mode: str = Field("none", alias="snapshot.locking.mode")
    extended_headers_enabled: bool = Field(True, alias="extended.headers.enabled")
    snapshot_lock_timeout_ms: int = Field(10_000, alias="snapshot.lock.timeout.ms", ge=0)
    snapshot_isolation_mode: str = Field("serializable", alias="snapshot.isolation.mode")
    publish_via_partition_root: bool = Field(False, alias="publish.via.partition.root")
    slot_failover: bool = Field(False, alias="slot.failover")
    lsn_flush_mode: Literal["connector", "connector_and_driver", "manual"] | None = Field(None, alias="lsn.flush.mode")
    lsn_flush_timeout_ms: int = Field(30_000, alias="lsn.flush.timeout.ms", ge=0)
    lsn_flush_timeout_action: Literal["fail", "warn", "ignore"] = Field("fail", alias="lsn.flush.timeout.action")
    #: lakecdc's own: worker processes that decode, convert and encode streamed inserts
    #: (``capture/postgres/streaming_parallel.py``); 1 does it all in the capture process
    streaming_workers: int = Field(1, alias="lakecdc.streaming.workers", ge=1)

    @cached_property
    def confirms_flushed_lsn(self) -> bool:
        """Whether the connector confirms processed LSNs to the slot (Debezium 3.6's ``lsn.flush.mode``;
        unset, the older ``flush.lsn.source``): ``manual`` / ``false`` leave that to another process,
        and the slot keeps its WAL meanwhile."""
        if self.lsn_flush_mode is not None:
            return self.lsn_flush_mode != "manual"
        return self.flush_lsn_source

    @cached_property
    def server_name(self) -> str:
        return self.topic_prefix

    @cached_property
    def connector_name(self) -> str:
        """Kafka Connect's connector name (offset key); defaults to the topic prefix."""
        return self.name or self.topic_prefix

    def conninfo(self, replication: bool = False) -> str:
        """libpq connection string; the password is resolved here and nowhere logged."""
        parts = {
            "host": self.database_hostname or "localhost",
            "port": str(self.database_port or 5432),
            "dbname": self.database_dbname or "postgres",
            "sslmode": self.database_sslmode,
            "application_name": "lakecdc",
        }
        if self.database_user:
            parts["user"] = self.database_user
        if self.database_tcp_keepalive:
            parts["keepalives"] = "1"
        for name, value in (("sslcert", self.database_sslcert), ("sslkey", self.database_sslkey),
                            ("sslrootcert", self.database_sslrootcert)):
            if value:
                parts[name] = value
        text = " ".join(f"{k}={_conninfo_value(v)}" for k, v in parts.items())
        if self.database_password is not None:
            text += " password=" + _conninfo_value(self.database_password.get_secret_value())
        if self.database_sslpassword is not None:
            text += " sslpassword=" + _conninfo_value(self.database_sslpassword.get_secret_value())
        if replication:
            text += " replication=database"
        return text

    @property
    def header_schemas_enable(self) -> bool:
        return self.passthrough.get("header.converter.schemas.enable", "true").strip().lower() != "false"

    def data_headers(self, run_id: str | None = None) -> list[tuple[str, bytes]]:
        """The context headers every data record carries (empty when extended.headers.enabled=false)."""
        if not self.extended_headers_enabled:
            return []
        from lakecdc.capture.headers import context_headers

        return context_headers(self.topic_prefix, "postgresql", self.header_schemas_enable, run_id=run_id)

    def describe_target(self) -> str:
        """Where we connect, for log lines (never the password)."""
        return (
            f"{self.database_user or '(default user)'}@{self.database_hostname}:{self.database_port}/"
            f"{self.database_dbname}"
        )

    @cached_property
    def message_prefix_filter(self) -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
        return (
            compile_regex_list(self.message_prefix_include_list, "message.prefix.include.list"),
            compile_regex_list(self.message_prefix_exclude_list, "message.prefix.exclude.list"),
        )

    def captures_message_prefix(self, prefix: str) -> bool:
        include, exclude = self.message_prefix_filter
        if include:
            return any(p.fullmatch(prefix) for p in include)
        return not any(p.fullmatch(prefix) for p in exclude)
