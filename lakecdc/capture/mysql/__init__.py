"""MySQL / MariaDB capture from the binlog, producing Debezium 3.x MySQL connector events.

Modules (Debezium's decomposition, the same file names as the PostgreSQL connector):
``config`` properties, ``connection`` SQL queries and server differences, ``offset`` stored offsets and
resume points, ``snapshot`` the locked consistent snapshot (``snapshot_parallel`` its worker processes
for ``snapshot.max.threads``), ``streaming`` binlog events to records (with ``binlog_reader`` the
reading thread), ``source_info`` the source block, ``types`` the type
mapping, ``errors``; plus ``ddl/`` (the DDL parser), ``schema_history`` (DDL log and recovery),
``database_schema`` (structures, filters, per-table record factories), ``table_schema`` and
``change_records`` (event shapes), ``table_changes`` (schema change events), ``connector`` (what
the coordinator drives) and ``registration`` (what the runner, ``lakecdc status`` and the CLI read).
"""
