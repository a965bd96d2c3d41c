"""Connector properties for Debezium signals, shared by the connectors that act on them
(PostgreSQL, MySQL/MariaDB): ``signal.data.collection``, ``signal.enabled.channels`` and the
Kafka channel's ``signal.kafka.*``.

The signal table is captured (its rows are streamed and emitted) even when the include lists
leave it out, as Debezium's ``RelationalTableFilters`` does.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from functools import cached_property

from pydantic import Field, model_validator

from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import TableFilter
from lakecdc.errors import ConfigError
from lakecdc.events.topics import TableId

#: signal.enabled.channels values Debezium 3 defines, and those lakecdc builds
CHANNELS = ("source", "kafka", "jmx", "file", "in-process")
BUILT_CHANNELS = ("source", "kafka")


def parse_table_id(text: str) -> TableId:
    """``schema.table`` with optional double quotes around a part that holds a dot:
    ``"public"."My.Table"``; a name without schema is in ``public``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                current.append('"')
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if quoted or not all(parts) or len(parts) > 3:
        raise ConfigError(f"'{text}' is not a table id (<schema>.<table>, parts with dots in double quotes)",
                          "signal.data.collection")
    if len(parts) == 1:
        return TableId(None, "public", parts[0])
    return TableId(None, parts[-2], parts[-1])


def parse_channels(value: str) -> tuple[str, ...]:
    """``signal.enabled.channels``: a comma list of Debezium's channel names."""
    names = tuple(n.strip().lower() for n in value.split(",") if n.strip())
    for name in names:
        if name not in CHANNELS:
            close = difflib.get_close_matches(name, CHANNELS, n=1, cutoff=0.6)
            hint = f" — did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"signal.enabled.channels: unknown channel '{name}'{hint} (one of {', '.join(CHANNELS)})",
                              "signal.enabled.channels")
    return names


@dataclass(frozen=True)
class _WithSignalTable(TableFilter):
    """The filters plus the signal table (``signal`` is its (schema or database, table))."""

    signal: tuple[str, str] = ("", "")

    def matches(self, schema: str, table: str) -> bool:
        return (schema, table) == self.signal or super().matches(schema, table)

    def matches_schema(self, schema: str) -> bool:
        return schema == self.signal[0] or super().matches_schema(schema)


class SignalingConnectorConfig(CommonConnectorConfig):
    signal_kafka_topic: str | None = Field(None, alias="signal.kafka.topic")
    signal_kafka_bootstrap_servers: str | None = Field(None, alias="signal.kafka.bootstrap.servers")
    signal_kafka_groupid: str = Field("kafka-signal", alias="signal.kafka.groupId")
    signal_kafka_poll_timeout_ms: int = Field(100, alias="signal.kafka.poll.timeout.ms", ge=0)

    @model_validator(mode="after")
    def _check_signals(self) -> SignalingConnectorConfig:
        channels = parse_channels(self.signal_enabled_channels)
        for name in channels:
            if name not in BUILT_CHANNELS:
                # a Debezium file naming it still loads; that channel just delivers nothing
                logging.getLogger(__name__).warning(
                    "signal.enabled.channels: the '%s' channel is not built in lakecdc (built: %s); ignored",
                    name, ", ".join(BUILT_CHANNELS))
        if "kafka" in channels and not (self.signal_kafka_topic or "").strip():
            raise ConfigError("signal.enabled.channels includes kafka: set signal.kafka.topic", "signal.kafka.topic")
        if "kafka" in channels and not (self.signal_data_collection or "").strip() and self.watermarks_in_signal_table:
            # incremental snapshots write their window watermarks to the signal table, as Debezium's
            raise ConfigError("signal.enabled.channels includes kafka: set signal.data.collection too (the table "
                              "incremental snapshots write their watermarks to)", "signal.data.collection")
        _ = self.signal_table
        return self

    @property
    def watermarks_in_signal_table(self) -> bool:
        """Whether incremental snapshots write their window watermarks to the signal table (MySQL's
        ``read.only=true`` bounds them with GTIDs instead)."""
        return True

    @cached_property
    def signal_channels(self) -> tuple[str, ...]:
        return parse_channels(self.signal_enabled_channels)

    @cached_property
    def signal_table(self) -> TableId | None:
        """``signal.data.collection`` parsed; None when signals are not configured."""
        text = (self.signal_data_collection or "").strip()
        return parse_table_id(text) if text else None

    @cached_property
    def table_filter(self) -> TableFilter:
        base = CommonConnectorConfig.table_filter.func(self)  # type: ignore[attr-defined]
        signal = self.signal_table
        if signal is None:
            return base
        return _WithSignalTable(base.table_include, base.table_exclude, base.schema_include, base.schema_exclude,
                                base.excluded_schemas, (signal.schema or "public", signal.table))
