"""Oracle connector properties (Debezium 3.x names and defaults), LogMiner adapter.

A Debezium Oracle connector ``.properties`` file is accepted unchanged::

    connector.class=io.debezium.connector.oracle.OracleConnector
    database.hostname=db.example.com
    database.port=1521
    database.user=c##dbzuser
    database.password=env:ORACLE_PASSWORD
    database.dbname=ORCLCDB
    database.pdb.name=ORCLPDB1
    topic.prefix=server1
    table.include.list=DEBEZIUM.CUSTOMERS
    offset.storage.file.filename=/var/lib/lakecdc/oracle.offsets.json

Only ``log.mining.strategy=online_catalog`` is implemented (Debezium 3.x's default): LogMiner
reads the data dictionary, and the connector decodes SQL_REDO with the table structures its DDL
parser and schema history hold (``schema.history.internal.*``), so a DDL change takes effect for
the changes mined after it, also after a restart. ``redo_log_catalog`` and ``hybrid`` are refused
with that explanation.
"""

from __future__ import annotations

from functools import cached_property
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from lakecdc.config import aliases
from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import compile_regex_list
from lakecdc.config.signaling import SignalingConnectorConfig
from lakecdc.errors import ConfigError

ORACLE_CLASSES = ("io.debezium.connector.oracle.OracleConnector", "oracle")

#: Schemas Debezium never captures (Oracle-maintained accounts); SYS and SYSTEM changes are never
#: captured (Debezium Oracle documentation, "Data change events").
ORACLE_SYSTEM_SCHEMAS = frozenset({
    "SYS", "SYSTEM", "OUTLN", "DBSNMP", "APPQOSSYS", "AUDSYS", "CTXSYS", "DVSYS", "DBSFWUSER",
    "GSMADMIN_INTERNAL", "LBACSYS", "MDSYS", "OJVMSYS", "OLAPSYS", "ORDDATA", "ORDSYS", "WMSYS",
    "XDB", "REMOTE_SCHEDULER_AGENT", "GGSYS", "ANONYMOUS", "DVF", "ORACLE_OCM", "SI_INFORMTN_SCHEMA",
})


class OracleConnectorConfig(SignalingConnectorConfig):
    snapshot_modes: ClassVar[tuple[str, ...]] = (
        "initial", "initial_only", "when_needed", "always", "no_data", "schema_only",
    )
    excluded_schemas: ClassVar[frozenset[str]] = ORACLE_SYSTEM_SCHEMAS
    uses_schema_history: ClassVar[bool] = True
    connector_kind: ClassVar[str | None] = "oracle"
    accepted_names = CommonConnectorConfig.accepting("oracle")
    legacy_names = {**CommonConnectorConfig.legacy_names, **aliases.ORACLE}

    connector_class: str = Field(ORACLE_CLASSES[0], alias="connector.class")
    database_hostname: str | None = Field(None, alias="database.hostname")
    database_port: int | None = Field(1521, alias="database.port", ge=1, le=65535)
    database_url: str | None = Field(None, alias="database.url")
    database_pdb_name: str | None = Field(None, alias="database.pdb.name")
    database_connection_adapter: Literal["logminer"] = Field("logminer", alias="database.connection.adapter")
    database_query_timeout_ms: int = Field(600_000, alias="database.query.timeout.ms", ge=0)
    log_mining_strategy: Literal["online_catalog", "redo_log_catalog", "hybrid"] = Field(
        "online_catalog", alias="log.mining.strategy"
    )
    log_mining_batch_size_min: int = Field(1000, alias="log.mining.batch.size.min", ge=1)
    log_mining_batch_size_max: int = Field(100_000, alias="log.mining.batch.size.max", ge=1)
    log_mining_batch_size_default: int = Field(20_000, alias="log.mining.batch.size.default", ge=1)
    log_mining_batch_size_increment: int = Field(20_000, alias="log.mining.batch.size.increment", ge=1)
    log_mining_sleep_time_min_ms: int = Field(0, alias="log.mining.sleep.time.min.ms", ge=0)
    log_mining_sleep_time_max_ms: int = Field(3000, alias="log.mining.sleep.time.max.ms", ge=0)
    log_mining_sleep_time_default_ms: int = Field(1000, alias="log.mining.sleep.time.default.ms", ge=0)
    log_mining_sleep_time_increment_ms: int = Field(200, alias="log.mining.sleep.time.increment.ms", ge=0)
    log_mining_transaction_retention_ms: int = Field(0, alias="log.mining.transaction.retention.ms", ge=0)
    log_mining_archive_log_only_mode: bool = Field(False, alias="log.mining.archive.log.only.mode")
    log_mining_username_include_list: str | None = Field(None, alias="log.mining.username.include.list")
    log_mining_username_exclude_list: str | None = Field(None, alias="log.mining.username.exclude.list")
    log_mining_include_redo_sql: bool = Field(False, alias="log.mining.include.redo.sql")
    # the transaction buffer (logminer/transactions.py): Debezium's names; "sqlite" and
    # log.mining.buffer.memory.threshold are lakecdc's (Debezium's off-heap types select the same store)
    log_mining_buffer_type: Literal["memory", "sqlite", "ehcache", "infinispan_embedded", "infinispan_remote"] = Field(
        "memory", alias="log.mining.buffer.type")
    log_mining_buffer_memory_threshold: int = Field(10_000, alias="log.mining.buffer.memory.threshold", ge=1)
    log_mining_buffer_transaction_events_threshold: int = Field(
        0, alias="log.mining.buffer.transaction.events.threshold", ge=0)
    log_mining_buffer_drop_on_stop: bool = Field(False, alias="log.mining.buffer.drop.on.stop")
    # Debezium's LogMiner session and window limits (LogMinerStreamingChangeEventSource)
    log_mining_query_filter_mode: Literal["none", "in", "regex"] = Field("none", alias="log.mining.query.filter.mode")
    log_mining_session_max_ms: int = Field(0, alias="log.mining.session.max.ms", ge=0)
    log_mining_restart_connection: bool = Field(False, alias="log.mining.restart.connection")
    archive_log_hours: int = Field(0, alias="archive.log.hours", ge=0)
    # "custom" (a SnapshotLock implementation class) is refused by the validator below
    snapshot_locking_mode: Literal["shared", "none", "custom"] = Field("shared", alias="snapshot.locking.mode")
    lob_enabled: bool = Field(False, alias="lob.enabled")
    interval_handling_mode: Literal["numeric", "string"] = Field("numeric", alias="interval.handling.mode")

    @model_validator(mode="after")
    def _check_oracle(self) -> OracleConnectorConfig:
        if self.connector_class not in ORACLE_CLASSES:
            raise ConfigError(
                f"connector.class '{self.connector_class}' is not the Oracle connector; expected "
                f"{ORACLE_CLASSES[0]}", "connector.class")
        if self.log_mining_strategy != "online_catalog":
            raise ConfigError(
                f"log.mining.strategy '{self.log_mining_strategy}' is not implemented by lakecdc; use "
                "online_catalog (Debezium's default: table structures come from the data dictionary)",
                "log.mining.strategy")
        if self.snapshot_locking_mode == "custom":
            raise ConfigError("snapshot.locking.mode 'custom' (a Java SnapshotLock implementation) is not supported "
                              "by lakecdc; use shared (Debezium's default) or none", "snapshot.locking.mode")
        if not (self.database_hostname or self.database_url):
            raise ConfigError("property 'database.hostname' (or 'database.url') is required",
                              "database.hostname")
        if not self.database_dbname:
            raise ConfigError("property 'database.dbname' is required (the database or CDB name)",
                              "database.dbname")
        lo, default, hi = (self.log_mining_batch_size_min, self.log_mining_batch_size_default,
                           self.log_mining_batch_size_max)
        if not lo <= default <= hi:
            raise ConfigError(
                f"log.mining.batch.size.min ({lo}) <= log.mining.batch.size.default ({default}) <= "
                f"log.mining.batch.size.max ({hi}) must hold", "log.mining.batch.size.default")
        lo, default, hi = (self.log_mining_sleep_time_min_ms, self.log_mining_sleep_time_default_ms,
                           self.log_mining_sleep_time_max_ms)
        if not lo <= default <= hi:
            raise ConfigError(
                f"log.mining.sleep.time.min.ms ({lo}) <= log.mining.sleep.time.default.ms ({default}) <= "
                f"log.mining.sleep.time.max.ms ({hi}) must hold", "log.mining.sleep.time.default.ms")
        _ = (self.username_include, self.username_exclude)
        return self

    @property
    def buffer_spills(self) -> bool:
        """Large transactions' rows go to the local spill store (any non-memory buffer type)."""
        return self.log_mining_buffer_type != "memory"

    @cached_property
    def connector_name(self) -> str:
        """Kafka Connect's connector name (offset key); defaults to the topic prefix."""
        return self.name or self.topic_prefix

    @cached_property
    def snapshot_mode_normalized(self) -> str:
        return "no_data" if self.snapshot_mode == "schema_only" else self.snapshot_mode

    @cached_property
    def source_db(self) -> str:
        """``source.db``: the PDB name when capturing from a pluggable database, else the database."""
        return (self.database_pdb_name or self.database_dbname or "").upper()

    @cached_property
    def username_include(self) -> tuple[str, ...]:
        return tuple(p.pattern.upper() for p in compile_regex_list(
            self.log_mining_username_include_list, "log.mining.username.include.list"))

    @cached_property
    def username_exclude(self) -> tuple[str, ...]:
        return tuple(p.pattern.upper() for p in compile_regex_list(
            self.log_mining_username_exclude_list, "log.mining.username.exclude.list"))

    def dsn(self) -> str:
        """The Easy Connect string (``host:port/service``), or ``database.url`` as given."""
        if self.database_url:
            return self.database_url.removeprefix("jdbc:oracle:thin:@")
        return f"{self.database_hostname}:{self.database_port}/{self.database_dbname}"

    def connection_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``oracledb.connect``; the password is resolved here only."""
        return {
            "user": self.database_user,
            "password": self.database_password.get_secret_value() if self.database_password else None,
            "dsn": self.dsn(),
        }

    def data_headers(self, run_id: str | None = None) -> list[tuple[str, bytes]]:
        """Debezium 3's context headers on every data record (none with extended.headers.enabled=false)."""
        if not self.extended_headers_enabled:
            return []
        from lakecdc.capture.headers import context_headers

        schemas = self.passthrough.get("header.converter.schemas.enable", "true").strip().lower() != "false"
        return context_headers(self.topic_prefix, "oracle", schemas, run_id=run_id)

    def describe_target(self) -> str:
        pdb = f" (PDB {self.database_pdb_name})" if self.database_pdb_name else ""
        return f"oracle {self.database_user}@{self.dsn()}{pdb}"
