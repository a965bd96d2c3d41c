"""``CommonConnectorConfig``: the properties every Debezium connector shares.

Connector models (``lakecdc/capture/<connector>/config.py``) subclass it, add their own
properties, and narrow ``snapshot_modes`` / defaults::

    class PostgresConnectorConfig(CommonConnectorConfig):
        snapshot_modes = ("initial", "always", "never", "initial_only", "when_needed", "no_data")
        database_port: int = Field(5432, alias="database.port")
        slot_name: str = Field("debezium", alias="slot.name")

    cfg = PostgresConnectorConfig.from_file("conf/postgres.properties")
    cfg.table_filter.matches("public", "orders")

Defaults are Debezium 3.x's. Kafka Connect / worker properties found in Debezium files
(``connector.class``, converters, ``producer.*``, ...) are accepted and kept in
``passthrough``; :meth:`CommonConnectorConfig.ignored_properties` lists those lakecdc does not
apply, so the CLI can say so once at start. Kafka Connect transforms (``transforms*``,
``predicates*``) are validated at load and applied by capture (:attr:`transform_chain`).
"""

from __future__ import annotations

import logging
import re
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakecdc.config import aliases
from lakecdc.config.base import PropertiesModel
from lakecdc.config.columns import ColumnRule, parse_column_rules
from lakecdc.config.filters import (
    ColumnFilter,
    KeyColumns,
    TableFilter,
    check_exclusive,
    compile_regex_list,
    parse_table_list,
    split_list,
)
from lakecdc.config.no_effect import no_effect, reason_for
from lakecdc.config.passthrough import (
    HISTORY_STORES,
    KAFKA_CONNECT_NAMES,
    KAFKA_CONNECT_PREFIXES,
    NOT_APPLIED_NAMES,
    NOT_APPLIED_PREFIXES,
    OFFSET_STORES,
    TRANSFORM_NAMES,
    TRANSFORM_PREFIXES,
    OffsetStorageKind,
)
from lakecdc.config.secret import Secret
from lakecdc.errors import ConfigError

if TYPE_CHECKING:
    from lakecdc.transforms.chain import TransformChain

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
OPERATION_CODES = ("c", "u", "d", "t")
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._\-]+")

class CommonConnectorConfig(PropertiesModel):
    """Properties shared by every connector, with Debezium's names and defaults."""

    snapshot_modes: ClassVar[tuple[str, ...]] = ()
    # Which Debezium connector's definitions the model follows (lakecdc.config.no_effect's keys).
    connector_kind: ClassVar[str | None] = None
    # Connectors that replay DDL (MySQL, SQL Server, Oracle) set this; PostgreSQL ignores the
    # schema.history.internal* properties exactly as Debezium does.
    uses_schema_history: ClassVar[bool] = False
    excluded_schemas: ClassVar[frozenset[str]] = frozenset()
    accepted_names = KAFKA_CONNECT_NAMES | frozenset(no_effect(None))
    accepted_prefixes = KAFKA_CONNECT_PREFIXES
    legacy_names = {
        "database.server.name": "topic.prefix",
        "database.history": "schema.history.internal",
        "table.whitelist": "table.include.list",
        "table.blacklist": "table.exclude.list",
        "schema.whitelist": "schema.include.list",
        "schema.blacklist": "schema.exclude.list",
        "database.whitelist": "database.include.list",
        "database.blacklist": "database.exclude.list",
        "column.whitelist": "column.include.list",
        "column.blacklist": "column.exclude.list",
        **aliases.COMMON,
    }
    legacy_prefixes = {"database.history.": "schema.history.internal."}
    prefix_fields = {
        "snapshot.select.statement.overrides.": "snapshot_select_overrides",
        "column.mask.with.": "column_mask_with",
        "column.truncate.to.": "column_truncate_to",
        "column.mask.hash.": "column_mask_hash",
    }

    # identity and connection
    name: str | None = Field(None, alias="name")
    topic_prefix: str = Field(alias="topic.prefix")
    database_hostname: str | None = Field(None, alias="database.hostname")
    database_port: int | None = Field(None, alias="database.port", ge=1, le=65535)
    database_user: str | None = Field(None, alias="database.user")
    database_password: Secret | None = Field(None, alias="database.password")
    database_dbname: str | None = Field(None, alias="database.dbname")
    database_initial_statements: str | None = Field(None, alias="database.initial.statements")

    # what to capture
    database_include_list: str | None = Field(None, alias="database.include.list")
    database_exclude_list: str | None = Field(None, alias="database.exclude.list")
    schema_include_list: str | None = Field(None, alias="schema.include.list")
    schema_exclude_list: str | None = Field(None, alias="schema.exclude.list")
    table_include_list: str | None = Field(None, alias="table.include.list")
    table_exclude_list: str | None = Field(None, alias="table.exclude.list")
    column_include_list: str | None = Field(None, alias="column.include.list")
    column_exclude_list: str | None = Field(None, alias="column.exclude.list")
    message_key_columns: str | None = Field(None, alias="message.key.columns")
    skipped_operations: str = Field("t", alias="skipped.operations")
    # Debezium's RelationalTableFilters: with false, the connector's system schemas/databases
    # (``excluded_schemas``) are captured like any other when the lists select them.
    table_ignore_builtin: bool = Field(True, alias="table.ignore.builtin")

    # snapshot
    snapshot_mode: str = Field("initial", alias="snapshot.mode")
    snapshot_fetch_size: int | None = Field(None, alias="snapshot.fetch.size", ge=1)
    snapshot_delay_ms: int = Field(0, alias="snapshot.delay.ms", ge=0)
    snapshot_lock_timeout_ms: int = Field(10000, alias="snapshot.lock.timeout.ms", ge=0)
    streaming_delay_ms: int = Field(0, alias="streaming.delay.ms", ge=0)
    query_fetch_size: int | None = Field(None, alias="query.fetch.size", ge=0)
    snapshot_max_threads: int = Field(1, alias="snapshot.max.threads", ge=1)
    snapshot_include_collection_list: str | None = Field(None, alias="snapshot.include.collection.list")
    # Debezium's SnapshotQuery service: select_all reads every captured column; custom names a Java class.
    snapshot_query_mode: Literal["select_all", "custom"] = Field("select_all", alias="snapshot.query.mode")
    snapshot_select_statement_overrides: str | None = Field(None, alias="snapshot.select.statement.overrides")
    snapshot_select_overrides: dict[str, str] = Field(default_factory=dict)
    incremental_snapshot_chunk_size: int = Field(1024, alias="incremental.snapshot.chunk.size", ge=1)
    signal_data_collection: str | None = Field(None, alias="signal.data.collection")
    signal_enabled_channels: str = Field("source", alias="signal.enabled.channels")

    # event shape
    tombstones_on_delete: bool = Field(True, alias="tombstones.on.delete")
    provide_transaction_metadata: bool = Field(False, alias="provide.transaction.metadata")
    topic_transaction: str = Field("transaction", alias="topic.transaction")
    topic_delimiter: str = Field(".", alias="topic.delimiter")
    topic_heartbeat_prefix: str = Field("__debezium-heartbeat", alias="topic.heartbeat.prefix")
    topic_heartbeat_name: str | None = Field(None, alias="topic.heartbeat.name")
    heartbeat_interval_ms: int = Field(0, alias="heartbeat.interval.ms", ge=0)
    heartbeat_action_query: str | None = Field(None, alias="heartbeat.action.query")
    include_schema_changes: bool = Field(True, alias="include.schema.changes")
    # Debezium 3 adds __debezium.context.* headers (connector name, task, run id) to data records.
    extended_headers_enabled: bool = Field(True, alias="extended.headers.enabled")
    decimal_handling_mode: Literal["precise", "double", "string"] = Field("precise", alias="decimal.handling.mode")
    time_precision_mode: Literal[
        "adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"
    ] = Field("adaptive", alias="time.precision.mode")
    binary_handling_mode: Literal["bytes", "base64", "base64-url-safe", "hex"] = Field(
        "bytes", alias="binary.handling.mode"
    )
    schema_name_adjustment_mode: Literal["none", "avro", "avro_unicode"] = Field(
        "none", alias="schema.name.adjustment.mode"
    )
    field_name_adjustment_mode: Literal["none", "avro", "avro_unicode"] = Field(
        "none", alias="field.name.adjustment.mode"
    )
    include_unknown_datatypes: bool = Field(False, alias="include.unknown.datatypes")
    # lakecdc's own: the Debezium release ``source.version`` names (lakecdc.events.source.DEBEZIUM_VERSIONS);
    # 3.6.3.Final keeps the output of deployments and consumers pinned to that release.
    debezium_version: Literal["3.7.0.Final", "3.6.3.Final"] = Field("3.7.0.Final", alias="lakecdc.debezium.version")
    unavailable_value_placeholder: str = Field("__debezium_unavailable_value", alias="unavailable.value.placeholder")
    column_propagate_source_type: str | None = Field(None, alias="column.propagate.source.type")
    datatype_propagate_source_type: str | None = Field(None, alias="datatype.propagate.source.type")
    column_mask_with: dict[str, str] = Field(default_factory=dict)
    column_truncate_to: dict[str, str] = Field(default_factory=dict)
    column_mask_hash: dict[str, str] = Field(default_factory=dict)

    # flow control and failures
    max_batch_size: int = Field(2048, alias="max.batch.size", ge=1)
    max_queue_size: int = Field(8192, alias="max.queue.size", ge=1)
    max_queue_size_in_bytes: int = Field(0, alias="max.queue.size.in.bytes", ge=0)
    poll_interval_ms: int = Field(500, alias="poll.interval.ms", ge=0)
    event_processing_failure_handling_mode: Literal["fail", "warn", "skip", "ignore"] = Field(
        "fail", alias="event.processing.failure.handling.mode"
    )
    errors_max_retries: int = Field(-1, alias="errors.max.retries", ge=-1)
    retriable_restart_connector_wait_ms: int = Field(10000, alias="retriable.restart.connector.wait.ms", ge=0)

    # offsets, schema history, converters, Kafka
    offset_storage: str | None = Field(None, alias="offset.storage")
    offset_storage_file_filename: str | None = Field(None, alias="offset.storage.file.filename")
    offset_storage_topic: str | None = Field(None, alias="offset.storage.topic")
    offset_storage_partitions: int = Field(1, alias="offset.storage.partitions", ge=1)
    offset_storage_replication_factor: int = Field(-1, alias="offset.storage.replication.factor", ge=-1)
    offset_flush_interval_ms: int = Field(60000, alias="offset.flush.interval.ms", ge=0)
    schema_history_internal: str | None = Field(None, alias="schema.history.internal")
    schema_history_internal_file_filename: str | None = Field(None, alias="schema.history.internal.file.filename")
    schema_history_internal_kafka_topic: str | None = Field(None, alias="schema.history.internal.kafka.topic")
    schema_history_internal_kafka_bootstrap_servers: str | None = Field(
        None, alias="schema.history.internal.kafka.bootstrap.servers"
    )
    schema_history_internal_store_only_captured_tables_ddl: bool = Field(
        False, alias="schema.history.internal.store.only.captured.tables.ddl"
    )
    schema_history_internal_skip_unparseable_ddl: bool = Field(
        False, alias="schema.history.internal.skip.unparseable.ddl"
    )
    converter_schemas_enable: bool | None = Field(None, alias="converter.schemas.enable")
    key_converter_schemas_enable: bool | None = Field(None, alias="key.converter.schemas.enable")
    value_converter_schemas_enable: bool | None = Field(None, alias="value.converter.schemas.enable")
    key_converter: str | None = Field(None, alias="key.converter")
    value_converter: str | None = Field(None, alias="value.converter")
    bootstrap_servers: str | None = Field(None, alias="bootstrap.servers")

    # ------------------------------------------------------------------ validation

    @field_validator("snapshot_mode", mode="before")
    @classmethod
    def _lower_mode(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> CommonConnectorConfig:
        if self.snapshot_modes and self.snapshot_mode not in self.snapshot_modes:
            raise ConfigError(
                f"invalid value '{self.snapshot_mode}' for property 'snapshot.mode': allowed values are "
                + ", ".join(self.snapshot_modes),
                "snapshot.mode",
            )
        if self.snapshot_query_mode == "custom":
            raise ConfigError(
                "snapshot.query.mode=custom needs a Java SnapshotQuery implementation "
                "(snapshot.query.mode.custom.name), which lakecdc cannot load: use select_all, and "
                "snapshot.select.statement.overrides.<table> for a table's own SELECT", "snapshot.query.mode")
        for alias in ("topic.prefix", "topic.transaction", "topic.heartbeat.prefix"):
            value = getattr(self, self._field_by_alias(alias))
            if not _TOPIC_NAME.fullmatch(value):
                raise ConfigError(
                    f"invalid value '{value}' for property '{alias}': only letters, digits, '.', '_' and '-' "
                    "may appear in a Kafka topic name",
                    alias,
                )
        if self.max_queue_size <= self.max_batch_size:
            raise ConfigError(
                f"property 'max.queue.size' ({self.max_queue_size}) must be larger than 'max.batch.size' "
                f"({self.max_batch_size})",
                "max.queue.size",
            )
        check_exclusive(
            [
                ("database.include.list", self.database_include_list,
                 "database.exclude.list", self.database_exclude_list),
                ("schema.include.list", self.schema_include_list, "schema.exclude.list", self.schema_exclude_list),
                ("table.include.list", self.table_include_list, "table.exclude.list", self.table_exclude_list),
                ("column.include.list", self.column_include_list, "column.exclude.list", self.column_exclude_list),
            ]
        )
        for converter, given in (("key.converter", self.key_converter), ("value.converter", self.value_converter)):
            if given is not None and given != JSON_CONVERTER:
                raise ConfigError(
                    f"property '{converter}' is '{given}': lakecdc writes the JSON converter format only "
                    f"({JSON_CONVERTER})",
                    converter,
                )
        self._check_stores()
        # Touch the parsed views so that every regex and list error surfaces at load time.
        _ = (self.table_filter, self.column_filter, self.key_columns, self.skipped_operation_codes, self.column_rules)
        _ = self.snapshot_select_statements
        _ = self.transform_chain
        return self

    @classmethod
    def _field_by_alias(cls, alias: str) -> str:
        return next(n for n, f in cls.model_fields.items() if f.alias == alias)

    def _check_stores(self) -> None:
        kind = self.offset_storage_kind
        if kind == "file" and not self.offset_storage_file_filename:
            raise ConfigError(
                "file offset storage needs property 'offset.storage.file.filename'", "offset.storage.file.filename"
            )
        if kind == "kafka" and not self.offset_storage_topic:
            raise ConfigError("Kafka offset storage needs property 'offset.storage.topic'", "offset.storage.topic")
        history = self.schema_history_kind if self.uses_schema_history else None
        if history == "file" and not self.schema_history_internal_file_filename:
            raise ConfigError(
                "file schema history needs property 'schema.history.internal.file.filename'",
                "schema.history.internal.file.filename",
            )
        if history == "kafka" and not self.schema_history_internal_kafka_topic:
            raise ConfigError(
                "Kafka schema history needs property 'schema.history.internal.kafka.topic'",
                "schema.history.internal.kafka.topic",
            )

    @staticmethod
    def _store_kind(
        value: str | None, property_name: str, kinds: dict[str, OffsetStorageKind]
    ) -> OffsetStorageKind | None:
        if value is None:
            return None
        kind = kinds.get(value.strip()) or kinds.get(value.strip().lower())
        if kind is None:
            allowed = ", ".join(kinds)
            raise ConfigError(f"invalid value '{value}' for property '{property_name}': allowed values are {allowed}",
                              property_name)
        return kind

    # ------------------------------------------------------------------ parsed views

    @cached_property
    def offset_storage_kind(self) -> OffsetStorageKind:
        """``file``/``kafka``/``memory``; inferred from the filename/topic when the class is not given."""
        explicit = self._store_kind(self.offset_storage, "offset.storage", OFFSET_STORES)
        if explicit:
            return explicit
        if self.offset_storage_file_filename:
            return "file"
        return "kafka" if self.offset_storage_topic else "memory"

    @cached_property
    def schema_history_kind(self) -> OffsetStorageKind | None:
        """``file``/``kafka``/``memory``, or None when nothing is configured (connectors without DDL)."""
        explicit = self._store_kind(self.schema_history_internal, "schema.history.internal", HISTORY_STORES)
        if explicit:
            return explicit
        if self.schema_history_internal_file_filename:
            return "file"
        return "kafka" if self.schema_history_internal_kafka_topic else None

    @property
    def key_schemas_enable(self) -> bool:
        """``key.converter.schemas.enable``, else ``converter.schemas.enable``, else true."""
        return _first_set(self.key_converter_schemas_enable, self.converter_schemas_enable, True)

    @property
    def value_schemas_enable(self) -> bool:
        return _first_set(self.value_converter_schemas_enable, self.converter_schemas_enable, True)

    @cached_property
    def table_filter(self) -> TableFilter:
        """Include/exclude lists compiled once; the first-level lists are schemas or databases."""
        first_include = self.schema_include_list or self.database_include_list
        first_exclude = self.schema_exclude_list or self.database_exclude_list
        include_name = "schema.include.list" if self.schema_include_list else "database.include.list"
        exclude_name = "schema.exclude.list" if self.schema_exclude_list else "database.exclude.list"
        return TableFilter(
            table_include=compile_regex_list(self.table_include_list, "table.include.list"),
            table_exclude=compile_regex_list(self.table_exclude_list, "table.exclude.list"),
            schema_include=compile_regex_list(first_include, include_name),
            schema_exclude=compile_regex_list(first_exclude, exclude_name),
            excluded_schemas=self.excluded_schemas if self.table_ignore_builtin else frozenset(),
        )

    @cached_property
    def column_filter(self) -> ColumnFilter:
        return ColumnFilter(
            include=compile_regex_list(self.column_include_list, "column.include.list"),
            exclude=compile_regex_list(self.column_exclude_list, "column.exclude.list"),
        )

    @cached_property
    def key_columns(self) -> KeyColumns:
        """Parsed ``message.key.columns``; ``key_columns.for_table(schema, table)``."""
        return KeyColumns.parse(self.message_key_columns)

    @cached_property
    def skipped_operation_codes(self) -> frozenset[str]:
        """``skipped.operations`` as op codes; ``none`` is the empty set."""
        codes = [c.lower() for c in split_list(self.skipped_operations)]
        if codes == ["none"] or not codes:
            return frozenset()
        bad = [c for c in codes if c not in OPERATION_CODES]
        if bad:
            raise ConfigError(
                f"invalid value '{self.skipped_operations}' for property 'skipped.operations': "
                f"allowed values are a comma list of {', '.join(OPERATION_CODES)}, or none",
                "skipped.operations",
            )
        return frozenset(codes)

    @cached_property
    def snapshot_select_statements(self) -> dict[str, str]:
        """Table id -> SELECT, from ``snapshot.select.statement.overrides`` and its per-table properties."""
        statements: dict[str, str] = {}
        for table in parse_table_list(self.snapshot_select_statement_overrides):
            statement = self.snapshot_select_overrides.get(table)
            if not statement:
                name = f"snapshot.select.statement.overrides.{table}"
                raise ConfigError(f"table '{table}' is listed in 'snapshot.select.statement.overrides' but "
                                  f"property '{name}' is missing", name)
            statements[table] = statement
        return statements

    @cached_property
    def initial_statements(self) -> tuple[str, ...]:
        """``database.initial.statements``: run on every SQL connection (not the log-reading one);
        ``;`` separates statements and ``;;`` is a literal semicolon (Debezium's JdbcConnection)."""
        text = self.database_initial_statements or ""
        parts = text.replace(";;", "\0").split(";")
        return tuple(p.replace("\0", ";").strip() for p in parts if p.strip())

    @cached_property
    def column_rules(self) -> tuple[ColumnRule, ...]:
        """Mask / truncate / hash rules in a stable order (truncate before mask, as Debezium)."""
        return parse_column_rules(self.column_truncate_to, self.column_mask_with, self.column_mask_hash)

    @cached_property
    def transform_chain(self) -> TransformChain:
        """The ``transforms`` / ``predicates`` chain capture applies to every record before sending it
        (empty when none is configured); ConfigError at load for an unsupported class or a bad property."""
        from lakecdc.transforms import TransformContext, build_chain
        from lakecdc.transforms.errors import NAMES as ERROR_HANDLING_NAMES

        properties = {k: v for k, v in self.passthrough.items()
                      if k in TRANSFORM_NAMES or k.startswith(TRANSFORM_PREFIXES)}
        # errors.tolerance / errors.log.* / errors.retry.*: Connect's error handler of the per-record stages
        properties.update({k: v for k, v in self.passthrough.items() if k in ERROR_HANDLING_NAMES})
        properties["name"] = self.name or ""
        schemas = self.passthrough.get("header.converter.schemas.enable", "true").strip().lower() != "false"
        return build_chain(properties, TransformContext(header_schemas_enable=schemas))

    @classmethod
    def accepting(cls, connector: str) -> frozenset[str]:
        """``accepted_names`` of a connector model: these plus its Debezium properties without effect."""
        return cls.accepted_names | frozenset(no_effect(connector))

    def not_applied_properties(self) -> dict[str, str]:
        """Given properties lakecdc accepts but does not apply, each with the reason (logged once
        per property at start): the connector's entries in ``lakecdc.config.no_effect``, and
        Kafka Connect plug-in settings (custom converters), and transform properties the transform
        does not read (Kafka Connect ignores them too)."""
        listed = no_effect(self.connector_kind)
        found: dict[str, str] = {}
        for given in self.given_properties():
            name = self._current_name(given.strip())
            if name in listed or name in NOT_APPLIED_NAMES or name.startswith(NOT_APPLIED_PREFIXES):
                found[name] = reason_for(self.connector_kind, name)
        found.update(self.transform_chain.not_applied)
        return dict(sorted(found.items()))

    def log_not_applied(self, logger: logging.Logger) -> None:
        """One warning per given property without effect, naming it and saying why."""
        for name, reason in self.not_applied_properties().items():
            logger.warning("property '%s' is accepted but has no effect in lakecdc: %s", name, reason)

    def ignored_properties(self) -> list[str]:
        """Names of :meth:`not_applied_properties`."""
        return list(self.not_applied_properties())

    def producer_properties(self) -> dict[str, str]:
        """``producer.*`` passthrough, prefix stripped (librdkafka accepts the Java client's names)."""
        return self.properties_with_prefix("producer.")

    def topic_creation_properties(self) -> dict[str, str]:
        """``topic.creation.default.*`` passthrough (``partitions``, ``replication.factor``, configs)."""
        return self.properties_with_prefix("topic.creation.default.")


def _first_set(*values: bool | None) -> bool:
    return next(v for v in values if v is not None)
