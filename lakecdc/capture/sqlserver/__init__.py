"""SQL Server capture from CDC change tables, producing Debezium 3.x SQL Server connector events.

Modules (the same file names as the PostgreSQL and MySQL connectors): ``config`` properties,
``connection`` the T-SQL the connector issues (CDC metadata, LSNs, change functions), ``replay`` a
DB-API connection that answers from recorded result sets (how this connector is tested: no SQL
Server runs here), ``types`` the type mapping, ``table_schema`` per capture instance event shapes,
``source_info`` the source block, ``offset`` stored offsets and resume points, ``snapshot`` the
locked snapshot, ``streaming`` the change-table poll loop, ``errors``, and ``connector`` (what the
coordinator calls); plus ``database_schema`` (captured tables, capture instances, CDC checks) and
``table_changes`` (schema change events).
"""
