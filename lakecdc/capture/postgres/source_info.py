"""The ``source`` block of PostgreSQL events (Debezium ``io.debezium.connector.postgresql.SourceInfo``).

Example (streamed insert; ``sequence`` is ``[last commit LSN, this change's LSN]`` as text)::

    {"version": "3.6.3.Final", "connector": "postgresql", "name": "dbz", "ts_ms": 1795336045083,
     "snapshot": "false", "db": "shop", "sequence": "[\"24023128\",\"24023336\"]",
     "ts_us": 1795336045083801, "ts_ns": 1795336045083801000, "schema": "public",
     "table": "customers", "txId": 771, "lsn": 24023336, "xmin": null, "origin": null,
     "origin_lsn": null}

``ts_*`` are the commit time; snapshot rows carry the snapshot's consistent point and
``snapshot`` first / true / last (and the per-table markers).
"""

from __future__ import annotations

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.events.source import PostgresSourceBuilder, source_schema

__all__ = ["PostgresSourceBuilder", "source_builder", "source_schema"]


def source_builder(config: PostgresConnectorConfig) -> PostgresSourceBuilder:
    """A builder whose constant fields (version, connector, name, db) are fixed once."""
    return PostgresSourceBuilder(config.topic_prefix, config.database_dbname or "postgres", config.debezium_version)
