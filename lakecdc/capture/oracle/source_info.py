"""The ``source`` block of Oracle events (Debezium ``SourceInfo`` / ``OracleSourceInfoStructMaker``).

Streamed insert, as lakecdc writes it (Debezium 3.6.3 field order; the example values of Debezium's
Oracle documentation, "Data change events")::

    {"version": "3.6.3.Final", "connector": "oracle", "name": "server1", "ts_ms": 1520085154000,
     "snapshot": "false", "db": "ORCLPDB1", "sequence": null, "ts_us": ..., "ts_ns": ...,
     "schema": "DEBEZIUM", "table": "CUSTOMERS", "txId": "6.28.807", "scn": "2122185",
     "commit_scn": "2122185", "lcr_position": null, "rs_id": "001234.00012345.0124", "ssn": 1,
     "redo_thread": 1, "user_name": "DEBEZIUM", "redo_sql": null, "row_id": "AAAR1cAAHAAAACFAAA",
     "commit_ts_ms": 1520085154000, "start_scn": "2122180", "start_ts_ms": 1520085150000, "txSeq": 1}

As in Debezium, ``commit_scn``, ``rs_id``, ``ssn`` and ``redo_thread`` describe the COMMIT of the
event's transaction on its redo thread; ``scn``, ``ts_ms``, ``row_id`` and ``user_name`` the change
itself. Snapshot rows carry the snapshot SCN and no transaction (Debezium Oracle documentation, ``source`` fields:
the transaction id is not included for snapshots).
"""

from __future__ import annotations

from lakecdc.capture.oracle.config import OracleConnectorConfig
from lakecdc.events.source import OracleSourceBuilder, source_schema

__all__ = ["OracleSourceBuilder", "source_builder", "source_schema"]


def source_builder(config: OracleConnectorConfig) -> OracleSourceBuilder:
    """A builder whose constant fields (version, connector, name) are fixed once."""
    return OracleSourceBuilder(config.topic_prefix, version=config.debezium_version)
