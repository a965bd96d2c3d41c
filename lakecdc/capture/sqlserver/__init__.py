"""SQL Server capture from CDC change tables, producing Debezium 3.x SQL Server connector events.

Modules (the same file names as the other connectors): ``registration`` what the runner, ``lakecdc
status`` and the CLI read, ``config`` properties, ``connection`` the T-SQL the connector issues (CDC
metadata, LSNs, change functions) and its connection factory hook, ``types`` the type mapping,
``table_schema`` per capture instance event shapes, ``source_info`` the source block, ``offset``
stored offsets, resume points and the source partition, ``snapshot`` the locked snapshot,
``blocking`` blocking snapshots, ``streaming`` the change-table poll loop, ``errors``, and
``connector`` (what the coordinator calls); plus ``database_schema`` (captured tables, capture
instances, CDC checks) and ``table_changes`` (schema change events).

No SQL Server runs where lakecdc is developed: the connector is tested against recorded result sets
replayed behind pymssql's DB-API shape (tests/unit/capture/sqlserver/sqlserver_replay.py).
"""
