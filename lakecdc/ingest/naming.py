"""Bronze and silver table names for a topic, from templates or an explicit mapping.

Defaults: ``shop.public.customers`` -> ``bronze.shop_public_customers`` and
``silver.shop_public_customers``. Templates (``table.name.format.bronze`` / ``.silver``) may use
``{prefix}``, ``{database}``, ``{schema}``, ``{table}`` (from the topic's parts after the prefix)
and ``{topic}`` (the whole topic with every character outside ``[A-Za-z0-9_]`` replaced by ``_``).
A mapping entry (``table.mapping.<topic>.silver: main.sales.orders``) wins over the templates;
three-part names are Unity Catalog names and are used as given by the writers.
"""

from __future__ import annotations

import re
from dataclasses import replace

from lakecdc.errors import ConfigError
from lakecdc.ingest.batch import TableTarget
from lakecdc.ingest.config import IngestConfig
from lakecdc.ingest.segments import SourceTable

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_CONNECTORS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "sqlserver": "sqlserver",
               "oracle": "oracle"}


def identifier_part(text: str) -> str:
    """``shop.public.customers`` -> ``shop_public_customers`` (safe in any catalog)."""
    return _UNSAFE.sub("_", text)


class TableNamer:
    """Builds the ``TableTarget`` of each data topic (one per topic, reused across batches)."""

    def __init__(self, config: IngestConfig) -> None:
        self._config = config
        self._overrides = config.table_overrides()

    def target(self, topic: str, source: SourceTable | None = None,
               key_columns: tuple[str, ...] = ()) -> TableTarget:
        config = self._config
        override = self._overrides.get(topic)
        parts = self._topic_parts(topic)
        fields = {
            "prefix": identifier_part(config.topic_prefix),
            "database": identifier_part(parts[0]) if len(parts) == 3 else "",
            "schema": identifier_part(parts[-2]) if len(parts) >= 2 else "",
            "table": identifier_part(parts[-1]),
            "topic": identifier_part(topic),
        }
        try:
            bronze = (override and override.bronze) or config.bronze_name_format.format(**fields)
            silver = (override and override.silver) or config.silver_name_format.format(**fields)
        except (KeyError, IndexError) as exc:
            raise ConfigError(f"table name template uses an unknown placeholder {exc}; allowed: "
                              f"{', '.join('{' + f + '}' for f in fields)}", "table.name.format.silver") from None
        keys = (override.key_column_list if override else ()) or key_columns
        connector = _CONNECTORS.get(source.connector, source.connector) if source else ""
        return TableTarget(
            topic=topic,
            connector=connector,
            database=source.database if source else (parts[0] if len(parts) == 3 else None),
            schema=source.schema if source else (parts[-2] if len(parts) >= 2 else None),
            table=source.table if source else parts[-1],
            bronze_table=bronze,
            silver_table=silver,
            format=(override.format if override and override.format else config.table_format),
            key_columns=tuple(keys),
            delete_mode=(override.delete_mode if override and override.delete_mode else config.delete_mode),
        )

    def with_keys(self, target: TableTarget, key_columns: tuple[str, ...]) -> TableTarget:
        """``target`` with key columns from the records, unless configured ones are set."""
        override = self._overrides.get(target.topic)
        if override and override.key_column_list:
            return target
        return replace(target, key_columns=key_columns)

    def _topic_parts(self, topic: str) -> list[str]:
        prefix = self._config.topic_prefix + "."
        rest = topic[len(prefix):] if topic.startswith(prefix) else topic
        return rest.split(".")
