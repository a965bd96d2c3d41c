"""PostgreSQL capture: pgoutput logical replication -> Debezium 3.6.3 change events.

Modules (the same file names as the other connectors, per DESIGN.md):

- ``config``       Debezium PostgreSQL connector properties (``.properties`` files used unchanged)
- ``connection``   SQL side: captured tables, primary keys, privileges (with the GRANT that fixes
                   each), publication per ``publication.autocreate.mode``, slot state
- ``replication``  the replication protocol over psycopg 3's libpq layer (XLogData, keepalive,
                   standby status), slot creation with an exported snapshot
- ``decoder``      pgoutput protocol 1 messages
- ``table_schema`` per-table key/value/envelope schemas and compiled row builders
- ``snapshot``     consistent snapshot from the slot's exported snapshot (no gap, no overlap)
- ``streaming``    messages -> records: transactions, PK changes, tombstones, truncate, messages,
                   heartbeats, offsets and the flush LSN
- ``messages``     logical decoding messages (``op "m"``)
- ``offset``       Debezium's offset shape and the resume point
- ``source_info``  the ``source`` block of its events
- ``errors``       failures that name what is wrong and how to fix it
- ``connector``    the connector the coordinator (``lakecdc.capture.coordinator``) drives
- ``types``        PostgreSQL type -> Connect schema and value (owned by the type-mapping area)
"""
