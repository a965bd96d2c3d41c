"""The ``source`` block of MySQL/MariaDB events (Debezium ``BinlogSourceInfo``).

Example (streamed insert; ``pos`` is the position of the row event, ``row`` the row in it)::

    {"version": "3.6.3.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": 1700000000000,
     "snapshot": "false", "db": "inventory", "sequence": null, "ts_us": 1700000000000000,
     "ts_ns": 1700000000000000000, "table": "customers", "server_id": 223344,
     "gtid": "0-223344-10", "file": "binlog.000001", "pos": 2418, "row": 0, "thread": 6,
     "query": null}

``query`` is filled only with ``include.query=true`` and the server writing the statement text into
the binlog (MySQL ``binlog_rows_query_log_events``, MariaDB ``binlog_annotate_row_events``).
"""

from __future__ import annotations

from lakecdc.capture.mysql.config import MySqlConnectorConfig
from lakecdc.events.source import BinlogSourceBuilder, source_schema

__all__ = ["BinlogSourceBuilder", "source_builder", "source_schema"]


def source_builder(config: MySqlConnectorConfig) -> BinlogSourceBuilder:
    """A builder whose constant fields (version, connector, name) are fixed once."""
    return BinlogSourceBuilder(config.topic_prefix, config.connector_type, config.debezium_version)
