"""Oracle capture through LogMiner, producing Debezium 3.x Oracle connector events.

Modules (the same file names as the other connectors): ``registration`` what the runner, the
status command and the CLI read, ``config`` properties, ``connection`` the SQL the connector issues and
the prerequisite checks, ``offset`` stored offsets and resume points, ``snapshot`` the ``AS OF SCN``
consistent snapshot, ``blocking`` blocking snapshots, ``streaming`` LogMiner rows to records,
``source_info`` the source block, ``types`` the type mapping, ``table_schema`` per-table event
shapes, ``errors``; ``ddl/`` the DDL parser (lexer, column definitions, statements, table model),
``database_schema`` the table model DDL changes, ``schema_history`` its records and replay,
``table_changes`` schema change events; ``logminer/`` holds the LogMiner session (``session``), the
``V$LOGMNR_CONTENTS`` query (``query``), the ``SQL_REDO`` parser (``dml_parser``) and the buffer of
uncommitted transactions (``transactions``); ``connector`` is what the coordinator drives.

The connector has been tested against recorded result sets replayed behind python-oracledb's DB-API
shape (tests/unit/capture/oracle/oracle_replay.py), never against a live Oracle database.
"""
