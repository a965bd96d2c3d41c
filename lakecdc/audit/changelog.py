"""The bronze change log of a silver table, found without the ingest configuration.

An exact read "as of P" inside a commit replays bronze's events (``lakecdc.audit.replay``), so the
audit must know which table is the silver table's bronze. The ingest configuration says so
(``lakecdc.cli.audit.AuditLake``); without it, the names the writers give are tried
(``lakecdc.lake.naming``), each kept only when it exists and consumed the same Kafka topic as the
silver table (``lakecdc.progress`` of both tables' commits)::

    silver.shop_public_customers        -> bronze.shop_public_customers   (the default templates)
    shop_silver.customers               -> shop_bronze.customers          ("silver" as a name part)
    main.sales.orders (a mapping)       -> bronze.shop_public_orders      (the default bronze name of its topic)

When none fits, ``bronze_of`` raises an ``AuditError`` naming the names tried: a replay without
bronze would answer with an earlier state than the one asked for.
"""

from __future__ import annotations

import re

from lakecdc.audit.tables import AuditError, LakeTable
from lakecdc.lake.naming import identifier_part

#: "silver" as a whole word of a name part (``silver``, ``shop_silver``, ``SILVER_x``)
_SILVER = re.compile(r"(?<![A-Za-z0-9])silver(?![A-Za-z0-9])", re.IGNORECASE)


def bronze_of(table: LakeTable) -> LakeTable:
    """The bronze table beside the silver ``table`` (module docstring); raises ``AuditError`` when
    no table under the writers' names holds the silver table's topic."""
    topics = _topics(table)
    tried: list[str] = []
    for name in candidate_names(table.name, topics):
        if name in tried or name == table.name:
            continue
        tried.append(name)
        candidate = table.sibling(name)
        if candidate.exists() and (not topics or topics & _topics(candidate)):
            return candidate
    raise AuditError(f"{table}: its bronze change log was not found (tried {', '.join(tried) or 'no name'}); "
                     "it is needed to replay the changes up to a position inside a commit: give the ingest "
                     "configuration (--config) or bronze=")


def candidate_names(silver: str, topics: set[str]) -> list[str]:
    """The names a bronze table of ``silver`` (consuming ``topics``) may have, most likely first."""
    parts = silver.split(".")
    out = []
    swapped = [_SILVER.sub(_bronze_word, p) for p in parts]
    if swapped != parts:
        out.append(".".join(swapped))
    catalog = parts[:-2]  # a three-part (Unity Catalog) name keeps its catalog
    out.extend(".".join([*catalog, "bronze", identifier_part(topic)]) for topic in sorted(topics))
    return out


def _bronze_word(match: re.Match[str]) -> str:
    word = match.group(0)
    return "BRONZE" if word.isupper() else "Bronze" if word[0].isupper() else "bronze"


def _topics(table: LakeTable) -> set[str]:
    """The Kafka topics the table's commits consumed (empty when it has none of lakecdc's)."""
    from lakecdc.audit.versions import table_versions

    if not table.exists():
        return set()
    return {topic for v in table_versions(table) for topic, _ in v.kafka_progress}
