"""``IngestConfig``: what the Spark ingest job reads, decodes and writes, keyed by dotted names.

A minimal YAML file (``conf/ingest.yaml`` is the commented full example)::

    name: shop-ingest
    kafka.bootstrap.servers: 127.0.0.1:9092
    topic.prefix: shop
    warehouse: /data/lake
    table.format: iceberg

Names follow Debezium where Debezium has one (``topic.prefix``, ``topic.transaction``,
``topic.heartbeat.prefix``, ``binary.handling.mode``, ``unavailable.value.placeholder``): they
describe how the *capture* side was configured, so the job can read what it produced. Any other
``kafka.*`` property is handed to the Kafka client with the prefix removed
(``kafka.security.protocol`` -> ``security.protocol``); those values are never logged.

Per-table overrides use ``table.mapping.<topic>.<attribute>`` (attributes ``bronze``, ``silver``,
``format``, ``key_columns``, ``delete_mode``, ``history``, ``track_history_columns``,
``track_history_except_columns``, and ``expectations`` / ``expectations_action`` for pipeline
expectations, ``lakecdc.quality.pipeline``); in YAML::

    table.mapping:
      shop.public.orders: {silver: main.sales.orders, format: delta, key_columns: "id"}
      shop.public.customers: {history: scd2, track_history_except_columns: "last_login"}

``history: scd2`` keeps ``<silver>__history`` beside silver (one row per version of a key,
``lakecdc.writers.history``); the two column lists (comma-separated) say which changes make a new
version: only changes in ``track_history_columns`` (default: every column), never changes only in
``track_history_except_columns`` (those update the current version in place).

Three-part names (Unity Catalog ``catalog.schema.table``) are used as given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakecdc.config.base import PropertiesModel
from lakecdc.errors import ConfigError

ReaderKind = Literal["auto", "spark", "spark-kafka", "python"]
TableFormatName = Literal["iceberg", "delta"]
MAPPING_ATTRIBUTES = ("bronze", "silver", "format", "key_columns", "delete_mode", "history", "track_history_columns",
                      "track_history_except_columns", "expectations", "expectations_action")
DEFAULT_PLACEHOLDER = "__debezium_unavailable_value"
#: ``batch.backlog.max.records`` when not set, as a multiple of ``batch.max.records``
BACKLOG_GROWTH = 4


class TableOverride(PropertiesModel):
    """One ``table.mapping.<topic>`` entry."""

    bronze: str | None = None
    silver: str | None = None
    format: TableFormatName | None = None
    key_columns: str | None = None
    delete_mode: Literal["hard", "soft"] | None = None
    history: Literal["scd2"] | None = None
    track_history_columns: str | None = None
    track_history_except_columns: str | None = None
    #: a GX 1.x suite JSON checked on each batch before silver (``lakecdc.quality.pipeline``)
    expectations: str | None = None
    expectations_action: Literal["warn", "quarantine", "fail"] | None = None

    @property
    def key_column_list(self) -> tuple[str, ...]:
        return _names(self.key_columns)

    @property
    def tracked_columns(self) -> tuple[Literal["scd2"], tuple[str, ...], tuple[str, ...]] | None:
        """(``history``, ``track_history_columns``, ``track_history_except_columns``) or None
        without history; column lists given without ``history: scd2`` are an error (they would
        silently do nothing)."""
        if self.history is None:
            if self.track_history_columns or self.track_history_except_columns:
                raise ConfigError("track_history_columns / track_history_except_columns need history: scd2 "
                                  "in the same table.mapping entry", "table.mapping")
            return None
        return self.history, _names(self.track_history_columns), _names(self.track_history_except_columns)


def _names(listed: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (listed or "").split(",") if c.strip())


class IngestConfig(PropertiesModel):
    """Validated ingest job configuration (see the module docstring)."""

    accepted_prefixes: ClassVar[tuple[str, ...]] = ("kafka.",)
    prefix_fields: ClassVar[dict[str, str]] = {"table.mapping.": "table_mapping_raw"}

    name: str = Field("lakecdc-ingest", alias="name")
    bootstrap_servers: str = Field(..., alias="kafka.bootstrap.servers")
    topic_prefix: str = Field(..., alias="topic.prefix")
    topic_pattern: str | None = Field(None, alias="topic.pattern")
    transaction_topic: str = Field("transaction", alias="topic.transaction")
    heartbeat_prefix: str = Field("__debezium-heartbeat", alias="topic.heartbeat.prefix")
    warehouse: str = Field("warehouse", alias="warehouse")
    catalog: str = Field("lake", alias="catalog")
    catalog_type: Literal["hadoop", "jdbc"] = Field("hadoop", alias="catalog.type")
    table_format: TableFormatName = Field("iceberg", alias="table.format")
    bronze_name_format: str = Field("bronze.{topic}", alias="table.name.format.bronze")
    silver_name_format: str = Field("silver.{topic}", alias="table.name.format.silver")
    delete_mode: Literal["hard", "soft"] = Field("hard", alias="table.delete.mode")
    table_mapping_raw: dict[str, Any] = Field(default_factory=dict, alias="table.mapping")
    variable_scale_mode: Literal["decimal", "string"] = Field("decimal", alias="variable.scale.decimal.mode")
    variable_scale: int = Field(18, alias="variable.scale.decimal.scale", ge=0, le=38)
    time_mode: Literal["micros", "string"] = Field("micros", alias="time.handling.mode")
    binary_handling_mode: Literal["bytes", "base64", "base64-url-safe", "hex"] = Field(
        "bytes", alias="binary.handling.mode")
    placeholder: str = Field(DEFAULT_PLACEHOLDER, alias="unavailable.value.placeholder")
    reader: ReaderKind = Field("auto", alias="reader")
    max_batch_records: int = Field(100_000, alias="batch.max.records", gt=0)
    #: behind a backlog, the Spark readers' batches double up to this many records (None: 4x
    #: ``batch.max.records``); ``lakecdc.ingest.offset_ranges``
    backlog_batch_records_raw: int | None = Field(None, alias="batch.backlog.max.records", gt=0)
    max_batch_wait_ms: int = Field(1000, alias="batch.max.wait.ms", ge=0)
    trigger_interval: str = Field("available-now", alias="trigger")
    #: how many tables of one micro-batch are applied at the same time (1: one after another)
    apply_parallelism: int = Field(4, alias="apply.parallelism", ge=1, le=64)
    #: every this many applied micro-batches, compact the tables they wrote (0: never; ``lakecdc maintain``)
    maintenance_every_batches: int = Field(0, alias="maintenance.compact.every.batches", ge=0)
    topic_refresh_ms: int = Field(2000, alias="topic.refresh.interval.ms", gt=0)
    progress_path: str | None = Field(None, alias="progress.path")
    #: no longer used (every reader resumes from the tables' offsets); accepted with a warning
    checkpoint_path: str | None = Field(None, alias="spark.checkpoint.location")
    group_id: str | None = Field(None, alias="kafka.group.id")
    #: Prometheus metrics on this HTTP port while ``lakecdc ingest`` runs (lakecdc/ingest/exporter.py)
    metrics_port: int | None = Field(None, alias="metrics.port", ge=0, le=65535)

    @field_validator("topic_pattern")
    @classmethod
    def _valid_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ConfigError(f"property 'topic.pattern' is not a valid regular expression: {exc}",
                                  "topic.pattern") from None
        return value

    @model_validator(mode="after")
    def _backlog_not_below_batch(self) -> IngestConfig:
        if self.backlog_batch_records_raw is not None and self.backlog_batch_records_raw < self.max_batch_records:
            raise ConfigError(f"property 'batch.backlog.max.records' ({self.backlog_batch_records_raw}) is below "
                              f"'batch.max.records' ({self.max_batch_records}): a batch behind a backlog is "
                              "never smaller than one that is not", "batch.backlog.max.records")
        return self

    # ------------------------------------------------------------------ derived names

    @property
    def backlog_batch_records(self) -> int:
        """The largest batch behind a backlog (``batch.backlog.max.records``, 4x ``batch.max.records``)."""
        return self.backlog_batch_records_raw or BACKLOG_GROWTH * self.max_batch_records

    @property
    def transaction_topic_name(self) -> str:
        """``shop.transaction``: where Debezium writes BEGIN/END markers."""
        return f"{self.topic_prefix}.{self.transaction_topic}"

    @property
    def heartbeat_topic_name(self) -> str:
        """``__debezium-heartbeat.shop``."""
        return f"{self.heartbeat_prefix}.{self.topic_prefix}"

    @property
    def schema_change_topic_name(self) -> str:
        """The schema change topic is named after the prefix alone (MySQL, SQL Server, Oracle)."""
        return self.topic_prefix

    @property
    def subscribe_pattern(self) -> str:
        """Regex over every topic the job reads: data, transaction, heartbeat, schema changes."""
        if self.topic_pattern:
            return self.topic_pattern
        prefix = re.escape(self.topic_prefix)
        heartbeat = re.escape(self.heartbeat_topic_name)
        return f"^({prefix}|{prefix}\\..+|{heartbeat})$"

    @property
    def progress_dir(self) -> Path:
        if self.progress_path:
            return Path(self.progress_path)
        return Path(self.warehouse) / "_lakecdc" / "ingest" / self.name

    @property
    def consumer_group(self) -> str:
        # Only used to satisfy the Kafka client: offsets are never committed to the group.
        return self.group_id or f"lakecdc-ingest-{self.name}"

    def kafka_client_properties(self) -> dict[str, str]:
        """``kafka.*`` properties with the prefix removed, for the Kafka client (may hold secrets)."""
        props = self.properties_with_prefix("kafka.")
        props["bootstrap.servers"] = self.bootstrap_servers
        return props

    def table_overrides(self) -> dict[str, TableOverride]:
        """``table.mapping.<topic>.<attr>`` gathered per topic (topics contain dots, attributes not)."""
        grouped: dict[str, dict[str, Any]] = {}
        for name, value in self.table_mapping_raw.items():
            topic, _, attribute = str(name).rpartition(".")
            if not topic or attribute not in MAPPING_ATTRIBUTES:
                raise ConfigError(
                    f"property 'table.mapping.{name}' must end with one of {', '.join(MAPPING_ATTRIBUTES)}",
                    f"table.mapping.{name}")
            grouped.setdefault(topic, {})[attribute] = value
        return {topic: TableOverride.from_properties(attrs) for topic, attrs in grouped.items()}


def load_ingest_config(source: str | Path | IngestConfig) -> IngestConfig:
    """An ``IngestConfig`` from a file path (YAML or .properties), or the config itself."""
    if isinstance(source, IngestConfig):
        return source
    return IngestConfig.from_file(source)
