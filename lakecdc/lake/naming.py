"""Bronze and silver table names for a topic, from templates or an explicit mapping.

Defaults: ``shop.public.customers`` -> ``bronze.shop_public_customers`` and
``silver.shop_public_customers``. Templates (``table.name.format.bronze`` / ``.silver``) may use
``{prefix}``, ``{database}``, ``{schema}``, ``{table}`` (from the topic's parts after the prefix)
and ``{topic}`` (the whole topic with every character outside ``[A-Za-z0-9_]`` replaced by ``_``).
A mapping entry (``table.mapping.<topic>.silver: main.sales.orders``) wins over the templates;
three-part names are Unity Catalog names and are used as given by the writers.

Naming must be injective: ``{topic}`` and the other placeholders replace every unsafe character by
``_``, so ``shop.public.order-items`` and ``shop.public.order_items`` (or ``public.a_b`` and
``public_a.b``) would both land in ``silver.shop_public_order_items`` and mix two tables' rows.
A ``TableNamer`` remembers which topic each name (bronze, silver, and the silver table's delete
ledger ``<silver>__deletes``) was given to and refuses a second topic with a ``ConfigError``
naming both topics and the settings that separate them. Names are compared case-insensitively:
Spark catalogs (Hive metastore, Unity Catalog, Iceberg's) resolve identifiers that way.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal

from lakecdc.config.ingest import IngestConfig
from lakecdc.errors import ConfigError
from lakecdc.lake.batch import TableTarget
from lakecdc.lake.layout import HISTORY_SUFFIX, LEDGER_SUFFIX
from lakecdc.lake.segments import SourceTable

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_CONNECTORS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "sqlserver": "sqlserver",
               "oracle": "oracle"}


def identifier_part(text: str) -> str:
    """``shop.public.customers`` -> ``shop_public_customers`` (safe in any catalog)."""
    return _UNSAFE.sub("_", text)


Role = Literal["bronze", "silver", "ledger", "history"]


class TableNamer:
    """Builds the ``TableTarget`` of each data topic (one per topic, reused across batches)."""

    def __init__(self, config: IngestConfig) -> None:
        self._config = config
        self._overrides = config.table_overrides()
        #: case-folded table name -> (topic, role) of the first topic given that name
        self._owners: dict[str, tuple[str, Role]] = {}

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
        names: dict[Role, str] = {"bronze": bronze, "silver": silver, "ledger": silver + LEDGER_SUFFIX}
        history = override.tracked_columns if override else None
        if history:
            names["history"] = silver + HISTORY_SUFFIX
        self._claim(topic, names)
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
            history=history[0] if history else None,
            track_history_columns=history[1] if history else (),
            track_history_except_columns=history[2] if history else (),
        )

    def with_keys(self, target: TableTarget, key_columns: tuple[str, ...]) -> TableTarget:
        """``target`` with key columns from the records, unless configured ones are set."""
        override = self._overrides.get(target.topic)
        if override and override.key_column_list:
            return target
        return replace(target, key_columns=key_columns)

    def _claim(self, topic: str, names: dict[Role, str]) -> None:
        """Record ``names`` as ``topic``'s; raise if another topic (or another role) has one."""
        claimed: dict[str, tuple[str, Role]] = {}
        for role, name in names.items():
            folded = name.casefold()
            owner = self._owners.get(folded) or claimed.get(folded)
            if owner is not None and owner != (topic, role):
                raise collision_error(name, owner, (topic, role))
            claimed[folded] = (topic, role)
        self._owners.update(claimed)

    def _topic_parts(self, topic: str) -> list[str]:
        prefix = self._config.topic_prefix + "."
        rest = topic[len(prefix):] if topic.startswith(prefix) else topic
        return rest.split(".")


def collision_error(name: str, first: tuple[str, Role], second: tuple[str, Role]) -> ConfigError:
    """The error for two topics (or two roles of one topic) given one table name."""
    (topic_a, role_a), (topic_b, role_b) = first, second
    setting = "silver" if role_b in ("ledger", "history") else role_b
    if topic_a == topic_b:
        return ConfigError(f"topic {topic_b!r} would write its {role_a} and {role_b} tables to one table {name!r}: "
                           f"set table.mapping.{topic_b}.{setting} to another name",
                           f"table.mapping.{topic_b}.{setting}")
    return ConfigError(
        f"topics {topic_a!r} and {topic_b!r} both map to table {name!r} ({role_a} of the first, {role_b} of the "
        f"second; table names ignore case and turn characters outside [A-Za-z0-9_] into '_'): their changes "
        f"would mix in one table. Give one of them its own name with table.mapping.{topic_b}.{setting} (or "
        f"table.mapping.{topic_a}.{'silver' if role_a in ('ledger', 'history') else role_a}), or change "
        f"table.name.format.bronze / table.name.format.silver so the names differ",
        f"table.mapping.{topic_b}.{setting}")
