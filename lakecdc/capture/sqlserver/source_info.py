"""The ``source`` block of SQL Server events (Debezium ``SourceInfo``).

Example (streamed insert, with the values of the example in Debezium's SQL Server documentation, "Data
change events"; Debezium 3 adds ``sequence``, ``ts_us``, ``ts_ns``)::

    {"version": "3.6.3.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1559729468470,
     "snapshot": "false", "db": "testDB", "sequence": null, "ts_us": 1559729468470000,
     "ts_ns": 1559729468470000000, "schema": "dbo", "table": "customers",
     "change_lsn": "00000027:00000758:0003", "commit_lsn": "00000027:00000758:0005",
     "event_serial_no": 1}

Snapshot rows carry ``commit_lsn`` = the max LSN read at the snapshot, ``change_lsn`` and
``event_serial_no`` null, and ``snapshot`` first / true / last (and the per-table markers).
"""

from __future__ import annotations

from lakecdc.capture.sqlserver.config import SqlServerConnectorConfig
from lakecdc.events.source import SqlServerSourceBuilder, source_schema

__all__ = ["SqlServerSourceBuilder", "source_builder", "source_schema"]


def source_builder(config: SqlServerConnectorConfig) -> SqlServerSourceBuilder:
    """A builder whose constant fields (version, connector, name) are fixed once."""
    return SqlServerSourceBuilder(config.topic_prefix, version=config.debezium_version)
